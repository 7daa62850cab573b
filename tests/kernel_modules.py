"""Load a shipped kernel's Python modules (packing, reference) by path: kernels/ is not a package."""

from __future__ import annotations

import importlib.util
from types import ModuleType

from helpers import REPO


def kernel_module(folder: str, name: str) -> ModuleType:
    path = REPO / "kernels" / folder / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"hyperloom_test_{folder.replace('/', '_')}_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
