"""Kernel specs: the short kernel.yaml the whole loop runs on."""
