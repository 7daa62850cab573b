"""optimize: the overnight loop over a workload (tools/optimize/campaign.py)."""
