"""Hyperloom: an AMD-GPU-first kernel optimizer that coding agents drive."""

from importlib.metadata import PackageNotFoundError, version

try:
    __version__ = version("hyperloom")
except PackageNotFoundError:  # running from a source tree that was never installed
    __version__ = "0.0.0+source"
