"""Workloads as the unit: a model's outputs frozen, its end-to-end time beside candidates, levers as candidates."""
