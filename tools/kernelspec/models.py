"""kernel.yaml: sources and variants, arguments, launch geometry, shapes, inputs, reference,
the tolerance declared up front, the metric and the tuning space."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field

from hyperloom.tools.gate.models import Tolerance

Expr = str | int | float
Language = Literal["hip", "cuda", "asm", "c", "cpp", "triton"]
# bfloat16 and the fp8 formats are ml_dtypes' (hyperloom.core.dtypes): drawn, stored and gated by value, never as bits.
BufferDtype = Literal["float16", "float32", "float64", "bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz",
                      "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]
ScalarDtype = Literal["int32", "uint32", "int64", "uint64", "float32", "float64"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class BufferArg(_Strict):
    kind: Literal["buffer"]
    name: str
    dtype: BufferDtype
    shape: list[Expr] = Field(min_length=1, description="Dimensions as expressions of the shape variables.")
    role: Literal["input", "output", "inout", "scratch"] = Field(description=(
        "input: drawn and uploaded; output: poisoned, written by the kernel, gated; inout: both; scratch: device workspace"
        " (split-k partial sums, arrival counters) zero-filled once when it is allocated, never drawn, uploaded or gated, so a"
        " kernel that needs it zero at its start leaves it zero at its end"))
    init: Literal["normal", "uniform", "randint", "zeros", "ones"] = Field("normal", description=(
        "How seeded inputs are drawn: a float buffer (bfloat16 and fp8 too) gets values drawn in float64 and rounded to its dtype"
        " (ones: 1.0), an integer buffer integers; randint on a float buffer draws as normal does."))
    low: float = -1.0
    high: float = 1.0


class ScalarArg(_Strict):
    kind: Literal["scalar"]
    name: str
    dtype: ScalarDtype
    value: Expr = Field(description="An expression of the shape variables, or a number.")


Arg = Annotated[BufferArg | ScalarArg, Field(discriminator="kind")]


class Launch(_Strict):
    grid: list[Expr] = Field(min_length=1, max_length=3)
    block: list[Expr] | None = Field(None, min_length=1, max_length=3, description=(
        "Threads per block as expressions of the shape; required except for Triton, whose block is num_warps × the warp size."))
    shared_bytes: Expr = Field(0, description="Dynamic shared memory per block; Triton kernels take theirs from the compiled kernel.")


class DefineExpr(_Strict):
    """A define whose value is computed from the shape (and tuning values that are shape variables)."""

    expr: Expr = Field(description="An expression of the shape variables, e.g. block or 2 * warps; its integer value is the define.")


DefineValue = str | int | DefineExpr
ENTRY_DESCRIPTION = (
    "The kernel's name as written in the source: a plain name (C++ names are found through their mangled symbol), or a"
    " template instance whose arguments are defines or numbers, e.g. rms_norm_f32<BLOCK>: Hyperloom instantiates it."
    " For a C twin, the host function's name.")


class Variant(_Strict):
    entry: str = Field(min_length=1, max_length=512, description=ENTRY_DESCRIPTION)
    source: str | None = Field(None, description="Overrides the spec's source for this variant.")
    language: Language | None = None
    defines: dict[str, DefineValue] = Field(default_factory=dict, description=(
        "Preprocessor defines: text or a number, or {expr: <expression of the shape>} computed per shape and tuning candidate."))
    launch_args: bool = Field(False, description=(
        "C twins only: also pass the evaluated launch geometry as six trailing int32 arguments (grid x, y, z, block x, y, z),"
        " so a twin can loop over the blocks a GPU would run."))
    targets: list[str] | None = Field(None, description="Targets this variant builds for; default every target.")
    launch: Launch | None = Field(None, description="Overrides the spec's launch geometry for this variant.")
    tuning: dict[str, list[str | int]] | None = Field(None, description="Overrides the spec's tuning space for this variant.")
    note: str = ""


class Metric(_Strict):
    bytes: Expr | None = Field(None, description="Bytes moved per launch (reads + writes).")
    flops: Expr | None = Field(None, description="Floating-point (or integer) operations per launch.")


class KernelSpec(_Strict):
    name: str
    description: str = ""
    source: str = Field(description="Kernel source, relative to the spec file.")
    language: Language = Field(description=(
        "hip, cuda, asm (AMDGPU assembly), c or cpp (a twin for the host CPU, target host), or triton (a .py file; entry the"
        " @triton.jit function: compiled ahead of time for gfx and sm_XX targets, run by Triton's interpreter on target host)."))
    variants: dict[str, Variant] = Field(min_length=1)
    args: list[Arg] = Field(min_length=1)
    launch: Launch
    shapes: list[dict[str, int]] = Field(min_length=1)
    seed: int = 0
    adversarial: list[Literal["zeros", "ones", "extremes", "denormals"]] = Field(default_factory=list)
    reference: str = Field(description="'file.py:function' relative to the spec; (inputs, shape) -> {output name: array}.")
    tolerance: Tolerance
    nondeterministic: bool = Field(False, description=(
        "True when two launches on the same inputs may differ (atomics, unordered reductions): the gate then does not ask two"
        " launches on the same inputs to agree within the tolerance (each is still gated against the reference)."))
    trivial_reference: str | None = Field(None, max_length=300, description=(
        "Why a trivial answer (all zeros, one constant) is right here, e.g. a microbenchmark that measures a rate: the"
        " reference audit then reports it instead of refusing every candidate."))
    metric: Metric = Field(default_factory=Metric)
    tuning: dict[str, list[str | int]] = Field(
        default_factory=dict,
        description="Candidate values for tune: preprocessor defines, or shape variables that only steer the launch geometry.",
    )

    def launch_of(self, variant: Variant) -> Launch:
        return variant.launch or self.launch

    def tuning_of(self, variant: Variant) -> dict[str, list[str | int]]:
        return self.tuning if variant.tuning is None else variant.tuning
