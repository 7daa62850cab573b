"""Hyperloom: an AMD-GPU-first kernel optimizer that coding agents drive."""

# The one place the version is written: pyproject.toml reads it from here (hatch's version source), and
# start-up reads it without importlib.metadata.
__version__ = "0.1.0"
