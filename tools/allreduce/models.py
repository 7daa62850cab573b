"""Request and result models of allreduce_int6 and its benchmark."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from hyperloom.core.requests import Request
from hyperloom.core.evidence import Evidence
from hyperloom.tools.allreduce.device_codec import Codec
from hyperloom.tools.allreduce.dtypes import FloatName
from hyperloom.tools.allreduce.quantize import PartialSums, Rounding

Distribution = Literal["normal", "uniform", "outliers", "wide_range", "denormal", "zeros"]
Backend = Literal["numpy", "gloo", "nccl"]
MAX_FILE_RANKS = 64
CODEC_DESCRIPTION = "GPU: INT6 kernels or torch ops."
MAX_GENERATED_ELEMENTS = 1 << 26  # per rank: 256 MiB of float32
MAX_TOTAL_ELEMENTS = 1 << 27  # over all ranks: 512 MiB of float32 inputs, a few times that while reducing


class AllreduceRequest(Request):
    """One all-reduce: the ranks' inputs (files, or generated), the scheme and where the result goes."""


    inputs: list[str] | None = Field(None, min_length=1, max_length=MAX_FILE_RANKS, description="A .npy per rank, or generated.")
    ranks: int | None = Field(None, ge=1, le=MAX_FILE_RANKS, description="Ranks to generate.")
    shape: list[int] | None = Field(None, min_length=1, max_length=8, description="Generated shape.")
    distribution: Distribution = Field("normal", description="Generated values.")
    dtype: FloatName = Field("float32", description="Generated dtype.")
    seed: int = Field(0, ge=0, le=2**63 - 1, description="Seed.")
    bfloat16_bits: bool = Field(False, description="2-byte inputs are bfloat16.")
    block: int = Field(128, ge=1, le=1 << 20, description="Elements per float32 scale.")
    rounding: Rounding = Field("nearest", description="stochastic: seeded, unbiased.")
    partial_sums: PartialSums = Field("fit_int6", description="fit_int6: sums stay int6; widen: wider sums.")
    codec: Codec = Field("auto", description=CODEC_DESCRIPTION)
    backend: Backend = Field("numpy", description="numpy simulates; gloo/nccl: a process per rank.")
    out: str = Field("allreduce_int6.npy", description="Result .npy.")
    timeout_s: float = Field(300, gt=0, le=3600, description="Limit of a torch run.")
    target: str | None = Field(None, max_length=64, description="Target the run stands for.")


class WireStats(BaseModel):
    payload_bytes_per_rank: int = Field(description="One rank's packed codes plus its float32 scales.")
    compression_vs_fp16: float = Field(description="fp16 bytes of the tensor / payload_bytes_per_rank (scales counted).")
    compression_vs_fp32: float = Field(description="fp32 bytes of the tensor / payload_bytes_per_rank (scales counted).")
    wire_bytes_per_rank: list[int] = Field(description="Bytes each rank sent: the ring payload as encoded, plus the scale exchange counted "
                                                       "as a ring all-reduce.")
    fp16_ring_wire_bytes_per_rank: int = Field(description="Bytes one rank sends in a ring all-reduce of the same tensor in fp16.")
    wire_ratio_vs_fp16: float | None = Field(description="fp16_ring_wire_bytes_per_rank / wire bytes; null for one rank (nothing travels).")
    step_formats: list[str] = Field(description="Wire format of each ring step: N-1 reduce-scatter, then N-1 all-gather.")


class AllreduceResult(BaseModel):
    summary: str = Field(description="One line for a human or an agent.")
    out: str = Field(description="The result .npy, relative to the workspace.")
    backend: Backend
    ranks: int
    shape: list[int]
    dtype: FloatName
    elements: int
    block: int
    blocks: int
    rounding: Rounding
    partial_sums: PartialSums
    code_bound: int = Field(description="Q: the largest |code| one rank contributes (31 // ranks with fit_int6, 31 with widen).")
    max_abs_error: float = Field(description="max |result − fp64 sum of the inputs|.")
    max_rel_error: float | None = Field(description="max |result − sum| / |sum| over elements whose sum is nonzero; null if none.")
    mean_abs_error: float
    error_bound_abs: float = Field(description="The analytic bound's largest value over blocks (see quantize.py).")
    bound_utilisation: float = Field(description="max over elements of observed error / that element's bound; ≤ 1 when within bound.")
    within_bound: bool
    cross_rank_drift: float = Field(description="max |rank r's result − rank 0's| over ranks and elements; 0 when bit-identical.")
    bit_identical_across_ranks: bool
    nonzero_inputs: int
    inputs_quantized_to_zero: int = Field(description="Nonzero inputs (all ranks) smaller than half a step of their block's scale: "
                                                      "lost entirely.")
    precision_note: str | None = Field(description="What precision was lost to a wide dynamic range inside blocks, when any was.")
    codec: str | None = Field(description="torch backends: what packed and unpacked the codes (device kernels or torch ops) and why; "
                                          "null for numpy.")
    matches_reference: bool | None = Field(description="torch backends: every rank's result equals the numpy reference bit for bit; "
                                                       "null for numpy.")
    wire: WireStats
    elapsed_s: float = Field(description="Wall time of the all-reduce itself (numpy: the simulated ring; torch: rank 0, after a barrier).")
    evidence: Evidence


class AllreduceBenchRequest(Request):
    """A sweep of tensor sizes: allreduce_int6 against the backend's native bf16 all-reduce."""


    ranks: int = Field(2, ge=2, le=MAX_FILE_RANKS, description="Processes (gloo) or GPUs (nccl).")
    backend: Literal["gloo", "nccl"] = Field("gloo", description="gloo (CPU) or nccl (one GPU per rank).")
    min_mib: int = Field(1, ge=1, le=1 << 14, description="Smallest tensor, MiB of bf16.")
    max_mib: int = Field(1024, ge=1, le=1 << 14, description="Largest tensor, MiB of bf16; sizes step by 4x.")
    repeats: int = Field(5, ge=1, le=1000, description="Timed repetitions per size (the median is reported).")
    warmup: int = Field(1, ge=0, le=100, description="Untimed repetitions per size.")
    block: int = Field(128, ge=1, le=1 << 20, description="Elements per shared scale.")
    partial_sums: PartialSums = Field("fit_int6", description="fit_int6 or widen (see allreduce_int6).")
    codec: Codec = Field("auto", description=CODEC_DESCRIPTION)
    timeout_s: float = Field(1800, gt=0, le=86400, description="Wall-clock limit of the whole sweep.")


class AllreduceBenchRow(BaseModel):
    size_bytes: int = Field(description="Bytes of the bf16 tensor.")
    method: Literal["int6", "native_bf16"]
    time_s: float = Field(description="Median wall time of one all-reduce on rank 0, after a barrier.")
    algbw_gbps: float = Field(description="size_bytes / time_s, in GB/s (nccl-tests' algorithm bandwidth).")
    max_rel_error: float = Field(description="max |result − fp32 all-reduce| / max |fp32 all-reduce|.")
    wire_bytes_per_rank: int | None = Field(description="int6: bytes this rank sent; native: null (the backend's algorithm decides).")


class AllreduceBenchResult(BaseModel):
    summary: str
    ranks: int
    backend: str
    device: str
    codec: str = Field(description="What packed and unpacked the int6 codes (device kernels or torch ops) and why.")
    rows: list[AllreduceBenchRow]
    evidence: Evidence
