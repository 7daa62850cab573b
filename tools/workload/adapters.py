"""The text of an overrides module integrate writes: a kernel's launcher loaded from its file, wrapped as a torch
custom op, and an adapter put in place of a model's method.

The custom op (`torch.library.custom_op`, with a fake that gives the output's shape and dtype) is what a compiled
model sees: torch.compile, the static KV cache's compiled decode step among them, traces the op as one opaque node
instead of breaking its graph at the launcher's Python, and a CUDA/HIP graph captures the kernel's launch. Eager
code calls the launcher directly, so the op's dispatch costs nothing where nothing is compiled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass


@dataclass(frozen=True)
class Adapter:
    what: str  # the method it replaces and the attributes it reads
    kernel: str  # def kernel(...) -> torch.Tensor, annotated (the op's schema is read from it), in terms of `launcher`
    fake: str  # def fake(...): an empty output of the kernel's shape and dtype
    forward: str  # def forward(self, ...), calling call(...) (the op when compiling, else the kernel)


ADAPTERS: dict[str, Adapter] = {
    "rmsnorm": Adapter(
        "an RMSNorm module's forward(hidden_states) with weight and variance_epsilon (HF Llama, Qwen2, Mistral)",
        "def kernel(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:\n"
        "    return launcher.rmsnorm(x, weight, eps, PARAMS)\n",
        "def fake(x, weight, eps):\n"
        "    return x.new_empty(x.shape, dtype=torch.promote_types(x.dtype, weight.dtype))\n",
        "def forward(self, hidden_states):\n"
        "    return call(hidden_states, self.weight, float(getattr(self, 'variance_epsilon', getattr(self, 'eps', 1e-6))))\n"),
    "silu_and_mul": Adapter(
        "a gated MLP's forward(x) with gate_proj, up_proj, down_proj and SiLU (HF Llama, Qwen2, Mistral)",
        "def kernel(gate: torch.Tensor, up: torch.Tensor) -> torch.Tensor:\n"
        "    return launcher.silu_mul(gate, up, PARAMS)\n",
        "def fake(gate, up):\n"
        "    return torch.empty_like(gate)\n",
        "def forward(self, x):\n"
        "    return self.down_proj(call(self.gate_proj(x), self.up_proj(x)))\n"),
    "layernorm": Adapter(
        "torch.nn.LayerNorm's forward(input) over the last dimension",
        "def kernel(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor], eps: float) -> torch.Tensor:\n"
        "    return launcher.layernorm(x, weight, bias, eps, PARAMS)\n",
        "def fake(x, weight, bias, eps):\n"
        "    return torch.empty_like(x)\n",
        "def forward(self, input):\n"
        "    return call(input, self.weight, self.bias, float(self.eps))\n"),
}

TEMPLATE = '''"""Written by hyperloom integrate: {kernel} in place of {replace} (params {params}).
Import this file before the model is built (or pass the lever overrides:THIS_FILE to workload bench) to reproduce."""
import functools
import importlib.util
import os
import sys
from pathlib import Path
from typing import Optional

import torch

if not torch.cuda.is_available():
    os.environ.setdefault("TRITON_INTERPRET", "1")  # Triton kernels run in its interpreter on a CPU

from hyperloom.core.shipped import shipped_kernels
from hyperloom.tools.workload.overrides import kernel_names, launches, note_call, replace

_spec = importlib.util.spec_from_file_location("hyperloom_integrated_{name}", {launcher})
launcher = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = launcher
_spec.loader.exec_module(launcher)
PARAMS = {params!r} or None
TARGET = {replace!r}
launches(TARGET, kernel_names(launcher))  # what a replayed graph shows on the device instead of a call


{kernel_def}


{fake_def}


@functools.wraps(kernel)  # the op's schema is read from kernel's annotations
def run(*args):
    note_call(TARGET)  # counted where compiled code calls it, as no guard sees (overrides.replace)
    return kernel(*args)


op = torch.library.custom_op({op_name!r}, run, mutates_args=())  # what torch.compile traces: one opaque node
op.register_fake(fake)


def call(*args):
    return op(*args) if torch.compiler.is_compiling() else kernel(*args)


{forward_def}


replace(TARGET, lambda original: forward)
'''


def overrides_source(adapter: str, kernel: str, replace: str, params: dict[str, str | int], launcher: str, digest: str) -> str:
    """The overrides module putting `kernel` (its launcher found by the expression `launcher`) in place of `replace`
    through the adapter `adapter`; its op is named after `digest`, so two such modules live in one process."""
    chosen, identifier = ADAPTERS[adapter], re.sub(r"\W", "_", kernel)
    return TEMPLATE.format(kernel=kernel, replace=replace, params=params, name=kernel, launcher=launcher,
                           op_name=f"hyperloom::{identifier}_{digest}", kernel_def=chosen.kernel.rstrip(), fake_def=chosen.fake.rstrip(),
                           forward_def=chosen.forward.rstrip())
