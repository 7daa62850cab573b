"""Request and result models of spec_check, spec_init and spec_example."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from hyperloom.core.evidence import Evidence
from hyperloom.core.requests import Request
from hyperloom.tools.compile.models import KernelReport


class SpecCheckRequest(Request):
    spec: str = Field(min_length=1, description="kernel.yaml or its folder.")
    targets: list[str] = Field(default_factory=list, max_length=16, description="Targets to compile for.")
    run_reference: bool = Field(True, description="Run the reference.")
    timeout_s: float = Field(60.0, gt=0, le=600, description="Reference run limit.")


class SpecProblem(BaseModel):
    path: str = Field(description="Where in the spec, e.g. args[2].shape[0], variants.gpu.launch.block[0], reference.")
    severity: Literal["error", "warning", "todo"] = Field(description="error: the loop cannot run it; warning: it runs but looks wrong; "
                                                                      "todo: a placeholder spec_init left to fill.")
    cause: str
    next_step: str
    shape: int | None = Field(None, description="Index of the shape the problem shows at, when it depends on one.")


class VariantBuild(BaseModel):
    variant: str
    target: str
    ok: bool
    summary: str = Field(description="What was built, or the compiler's first errors with file:line.")
    symbol: str | None = Field(None, description="The entry's symbol in the code object (mangled C++ names resolved).")
    code_object: str | None = None
    kernels: list[KernelReport] = Field(default_factory=list)


class Runnable(BaseModel):
    target: str
    backend: Literal["cuda", "hip", "c", "triton_interpreter"]
    can_run: bool = Field(description="Whether this machine can run the target: the backend's module imports and a device of that "
                                      "kind answers.")
    reason: str = Field(description="What was found, or what is missing and how to install it.")


class ReferenceRunReport(BaseModel):
    shape: int = Field(description="Index of the shape the reference ran at (the smallest).")
    elapsed_s: float = Field(description="The reference function's own time, worker start-up excluded.")
    outputs: dict[str, str] = Field(description="Per output: declared dtype and shape, and any NaN.")


class SpecCheckResult(BaseModel):
    ok: bool = Field(description="True when no problem is an error or a todo: the spec can go to bench and tune.")
    summary: str
    spec: str
    problems: list[SpecProblem]
    builds: list[VariantBuild]
    runnable: list[Runnable]
    reference: ReferenceRunReport | None
    elapsed_s: float = Field(description="Seconds the check took, compiles included.")
    evidence: Evidence


class SpecInitRequest(Request):
    source: str = Field(min_length=1, description="Source: .cu, .hip/.cpp or .c.")
    entry: str = Field(min_length=1, max_length=200, description="Kernel name.")
    out: str | None = Field(None, description="Folder for the files.")
    name: str | None = Field(None, max_length=100, description="Spec name.")
    overwrite: bool = Field(False, description="Replace existing files.")


class KernelParameter(BaseModel):
    name: str
    type: str = Field(description="The parameter's type as the compiler reads it, e.g. 'const float *__restrict'.")
    kind: Literal["buffer", "scalar", "unsupported"]
    dtype: str | None = Field(description="The buffer's element dtype or the scalar's, when the type maps to one.")
    role: str | None = Field(description="Draft role of a buffer: input (pointer to const) or output (writable; may be inout).")


class SpecInitResult(BaseModel):
    summary: str
    spec: str = Field(description="The kernel.yaml written (workspace-relative).")
    reference: str = Field(description="The reference stub written.")
    entry: str = Field(description="The entry as written into the spec (a template as name<DEFINES>).")
    parameters: list[KernelParameter] = Field(description="The entry's parameters, read from the compiler's AST.")
    template_parameters: list[str] = Field(default_factory=list, description="Template parameters, each now a define to fill.")
    check: SpecCheckResult = Field(description="spec_check on the draft: its todo problems are what remains to fill.")


class SpecExampleRequest(Request):
    name: str | None = Field(None, max_length=100, description="Example name; omit to list.")
    out: str | None = Field(None, description="Copy the example to this new folder.")


class SpecExampleResult(BaseModel):
    examples: dict[str, str] = Field(description="Shipped example names and what each shows.")
    name: str | None = None
    kernel_yaml: str | None = Field(None, description="The example's kernel.yaml text, comments included.")
    files: list[str] = Field(default_factory=list, description="The files the example consists of.")
    copied_to: str | None = Field(None, description="Where the example was copied in the workspace.")
