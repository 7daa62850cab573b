"""What a Triton kernel file says about its entry (read in a worker), and the autotune choice tune reports."""

from __future__ import annotations

from pydantic import BaseModel, Field

AUTOTUNE_CONFIG = "autotune_config"
"""The tuning (or define) name whose integer values index the entry's @triton.autotune configs."""

OPTIONS = ("num_warps", "num_stages", "num_ctas", "maxnreg", "waves_per_eu", "matrix_instr_nonkdim", "kpack")
"""Compile options a define or tuning value may set beside the constexprs (the names Triton's launcher takes)."""


class KernelParam(BaseModel):
    name: str
    constexpr: bool
    default: int | float | str | bool | None = None
    has_default: bool = False


class AutotuneConfig(BaseModel):
    """One triton.Config: its constexpr values and compile options."""

    kwargs: dict[str, int | float | str | bool]
    num_warps: int | None = None
    num_stages: int | None = None
    num_ctas: int | None = None
    maxnreg: int | None = None
    pre_hook: bool = False

    def params(self) -> dict[str, int | float | str | bool]:
        """The config as the defines it stands for: its constexprs and its compile options."""
        options = {"num_warps": self.num_warps, "num_stages": self.num_stages, "maxnreg": self.maxnreg}
        if self.num_ctas not in (None, 1):
            options["num_ctas"] = self.num_ctas
        return {**self.kwargs, **{k: v for k, v in options.items() if v is not None}}

    def label(self) -> str:
        return ", ".join(f"{k}={v}" for k, v in self.params().items())


class KernelInfo(BaseModel):
    """The entry's parameters, in order, and the wrappers around it."""

    entry: str
    params: list[KernelParam]
    def_line: int = Field(description="File line of the kernel's def (Triton numbers compile errors from it).")
    autotune: list[AutotuneConfig] | None = Field(None, description="The @triton.autotune configs, when the entry is autotuned.")
    autotune_key: list[str] = Field(default_factory=list)
    heuristics: list[str] = Field(default_factory=list, description="Constexprs an @triton.heuristics computes.")
    triton_version: str

    @property
    def runtime(self) -> list[str]:
        return [p.name for p in self.params if not p.constexpr]

    @property
    def constexprs(self) -> list[KernelParam]:
        return [p for p in self.params if p.constexpr]


class AutotuneChoice(BaseModel):
    """What the kernel's own @triton.autotune picked on this device, beside the tune winner (both gated and timed by Hyperloom)."""

    determined: bool
    reason: str = Field("", description="Why it was not determined (it needs a GPU and torch), or how it was.")
    config_index: int | None = None
    config: str = ""
    params: dict[str, int] = Field(default_factory=dict, description="The candidate tune ran for it: {autotune_config: index}.")
    triton_ms: dict[str, float] = Field(default_factory=dict,
                                        description="Triton's own autotuner timings per config (its do_bench, ms), as it measured them.")
    hash: str | None = Field(None, description="Its trial's content hash in the ledger.")
    median_s: float | None = Field(None,
                                   description="Its median as Hyperloom timed it (same gate, flush and statistics as every candidate).")
    status: str | None = None
    winner_speedup: float | None = Field(None, description="Its median / the winner's median.")
