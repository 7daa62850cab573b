"""The kernel.yaml format: its models, loading, expressions, entries, signatures and the reference that defines it."""
