"""Request and result models of serve_sweep."""

from __future__ import annotations

import shlex
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from hyperloom.core.evidence import Evidence

Api = Literal["completions", "chat"]
StopReason = Literal["max_concurrency", "server_capacity", "kv_capacity", "context_limit", "errors", "latency_limit", "deadline",
                     "interrupted"]
WorkloadKind = Literal["synthetic", "agent_trace"]
Saturation = Literal["not_saturated", "saturated", "undetermined"]
ServerKind = Literal["llama.cpp", "vllm", "sglang", "unknown"]

MAX_CONCURRENCY = 4096
MAX_INPUT_TOKENS = 1 << 20
MAX_OUTPUT_TOKENS = 1 << 17


class ServeSweepRequest(BaseModel):
    model_config = ConfigDict(extra="forbid", allow_inf_nan=False, str_max_length=4096)

    base_url: str = Field(min_length=8, max_length=500, description="OpenAI-compatible API URL.")
    model: str | None = Field(None, max_length=500, description="Model id.")
    api_key_env: str | None = Field(None, max_length=100, pattern=r"^[A-Za-z_][A-Za-z0-9_]*$", description="Env var with an API key.")
    server_command: list[str] | str | None = Field(None, description="Server to start (no shell).")
    ready_timeout_s: float = Field(300.0, gt=0, le=3600, description="Start-up limit.")
    api: Api = Field("completions", description="chat: chat template.")
    input_tokens: int = Field(128, ge=1, le=MAX_INPUT_TOKENS, description="Prompt length.")
    output_tokens: int = Field(128, ge=1, le=MAX_OUTPUT_TOKENS, description="Tokens per request.")
    force_output_length: bool = Field(True, description="Ignore EOS.")
    workload: WorkloadKind = Field("synthetic", description="agent_trace: multi-turn.")
    prompts_file: str | None = Field(None, max_length=1024, description="JSONL prompts, or a trace.")
    max_concurrency: int = Field(64, ge=1, le=MAX_CONCURRENCY, description="Most streams.")
    requests_per_level: int | None = Field(None, ge=1, le=100000, description="Requests per level.")
    warmup_requests: int | None = Field(None, ge=0, le=100000, description="Warm-up per level.")
    level_duration_s: float | None = Field(None, gt=0, le=3600, description="Per level.")
    request_timeout_s: float = Field(300.0, gt=0, le=3600, description="Per request.")
    max_error_rate: float = Field(0.0, ge=0, le=1, description="Stop above this.")
    max_ttft_s: float | None = Field(None, gt=0, description="Stop above this.")
    max_itl_s: float | None = Field(None, gt=0, description="Stop above this.")
    max_e2e_s: float | None = Field(None, gt=0, description="Stop above this.")
    latency_percentile: Literal["p50", "p90", "p99"] = Field("p90", description="Of the latency limits.")
    knee_fraction: float = Field(0.9, ge=0.5, le=1.0, description="Knee fraction of best.")
    rise_threshold: float = Field(0.1, gt=0, le=1.0, description="Rising gain per doubling.")
    max_duration_s: float = Field(3600.0, gt=0, le=86400, description="Sweep limit.")
    device: str | None = Field(None, max_length=200, description="Server hardware.")
    seed: int = Field(0, ge=0, le=2**31, description="Prompt seed.")
    refresh: bool = Field(False, description="Ignore the cache.")
    plot: bool = Field(True, description="PNG and SVG plots.")

    @field_validator("base_url")
    @classmethod
    def _http_url(cls, value: str) -> str:
        parts = urlsplit(value.strip())
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError("base_url must be an http:// or https:// URL with a host, e.g. http://127.0.0.1:8080/v1")
        if parts.query or parts.fragment or parts.username or parts.password:
            raise ValueError("base_url takes no query, fragment or credentials; pass an API key through api_key_env")
        return value.strip().rstrip("/")

    @field_validator("server_command", mode="before")
    @classmethod
    def _split_command(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                value = shlex.split(value)
            except ValueError as exc:
                raise ValueError(f"server_command cannot be split into arguments ({exc})") from exc
        if isinstance(value, list) and not value:
            raise ValueError("server_command is empty; pass the server's program and its arguments, or leave it out")
        if isinstance(value, list) and len(value) > 256:
            raise ValueError(f"server_command has {len(value)} arguments; at most 256")
        return value

    @model_validator(mode="after")
    def _limits_make_sense(self) -> ServeSweepRequest:
        if self.prompts_file is None and self.workload == "synthetic" and self.input_tokens + self.output_tokens > MAX_INPUT_TOKENS:
            raise ValueError(f"input_tokens + output_tokens is {self.input_tokens + self.output_tokens}, more than any server's context "
                             f"({MAX_INPUT_TOKENS})")
        return self


class Percentiles(BaseModel):
    """A latency distribution over the measured requests of one level, in seconds."""

    model_config = ConfigDict(extra="forbid")

    p50: float | None
    p90: float | None
    p99: float | None
    mean: float | None
    count: int = Field(description="How many values: requests (TTFT, end-to-end) or gaps between tokens (ITL).")


class TurnStats(BaseModel):
    """One turn position of an agent trace's sessions at one level: its requests' TTFT and the prefix the server reused."""

    model_config = ConfigDict(extra="forbid")

    turn: int = Field(description="1 for a session's first request, 2 for the next, ...")
    requests: int
    ttft_s: Percentiles
    input_tokens_mean: float | None
    cached_input_tokens_mean: float | None = Field(description="Prompt tokens the server took from its prefix cache, as it reported them.")


class Level(BaseModel):
    model_config = ConfigDict(extra="forbid")

    concurrency: int = Field(description="Streams kept in flight: each sends its next request when the last one finished.")
    requests_ok: int
    requests_failed: int = Field(description="Errors, timeouts and streams that ended early, among the measured requests.")
    timeouts: int
    failures: list[str] = Field(description="The first few failure messages, each with its request's index.")
    duration_s: float = Field(description="From the first measured request sent to the last one finished.")
    output_tokens_per_s: float = Field(description="Aggregate: output tokens of the successful measured requests / duration_s.")
    requests_per_s: float
    per_request_output_tokens_per_s: float | None = Field(description="Median over requests of (output tokens - 1) / (end-to-end - TTFT): "
                                                                      "one stream's decode rate.")
    ttft_s: Percentiles = Field(description="Time to first token: request sent to the first chunk with text.")
    itl_s: Percentiles = Field(description="Inter-token latency: the gaps between successive chunks with text, pooled over requests.")
    e2e_s: Percentiles = Field(description="End-to-end latency: request sent to the stream's end.")
    input_tokens_mean: float | None = Field(description="Prompt tokens per request as the server counted them (usage); null when "
                                                        "it did not say.")
    output_tokens_mean: float | None = Field(description="Output tokens per successful request: the server's usage count, else the "
                                                         "chunks with text.")
    output_tokens_min: int | None
    server_waiting_max: float | None = Field(None, description="Most requests the server reported waiting in its queue during the level "
                                                               "(vLLM, SGLang /metrics).")
    kv_cache_usage_max: float | None = Field(None, description="Highest KV-cache usage fraction the server reported during the level "
                                                               "(vLLM /metrics).")
    cached_input_tokens_mean: float | None = Field(None, description="Prompt tokens per request the server reused from its prefix cache "
                                                   "(usage.prompt_tokens_details.cached_tokens, else llama.cpp timings.cache_n); null when "
                                                   "it did not say.")
    prefix_cache_hit_fraction: float | None = Field(None,
                                                    description="Reused / all prompt tokens over the level: from the responses, else vLLM "
                                                    "/metrics prefix_cache_hits_total / prefix_cache_queries_total.")
    prefix_cache_source: str | None = Field(None, description="Where prefix_cache_hit_fraction was read.")
    turns: list[TurnStats] = Field(default_factory=list, description="agent_trace: per turn of a session, TTFT and prefix reuse.")


class Capacity(BaseModel):
    """What the server says it can hold at once, where it says it."""

    model_config = ConfigDict(extra="forbid")

    slots: int | None = Field(None, description="llama.cpp: parallel sequences (/props total_slots, the -np option).")
    context_per_slot_tokens: int | None = Field(None, description="Context of one sequence: llama.cpp's slot (/props n_ctx, -c / -np), "
                                                                  "vLLM's max_model_len.")
    kv_cache_tokens: int | None = Field(None, description="vLLM: KV-cache size in tokens (cache_config_info num_gpu_blocks x block_size).")
    max_concurrency: int | None = Field(None, description="The concurrency bound these imply for this workload: slots, or KV tokens / "
                                                          "(input + output tokens).")
    bound: Literal["slots", "kv_cache"] | None = Field(None, description="Which of them sets max_concurrency.")
    source: str = Field(description="Where it was read, or why nothing was.")


class ServerInfo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: ServerKind = Field(description="The server as recognised from its pages: llama.cpp (/props), vLLM (/version, vllm: metrics), "
                                         "SGLang, or unknown.")
    version: str | None = Field(description="Its version or build (llama.cpp build_info, vLLM /version).")
    started_by_tool: bool
    command: list[str] | None = Field(description="The command this tool started, when it started one.")
    executable_sha256: str | None = Field(None, description="sha256 of the started program, part of the cache key.")


class Workload(BaseModel):
    model_config = ConfigDict(extra="forbid")

    api: Api
    input_tokens_requested: int | None = Field(description="The synthetic prompt length asked for; null with a prompts file.")
    output_tokens_requested: int
    force_output_length: bool
    prompts_file: str | None
    prompts_sha256: str | None
    words_per_prompt: int | None = Field(None, description="Synthetic prompts: words per prompt after calibration against the server's "
                                                           "token counts.")
    calibration: str | None = Field(None, description="How prompt lengths were sized: the server's /tokenize, or requests grown from a "
                                                      "small first guess.")
    kind: WorkloadKind = "synthetic"
    trace_source: str | None = Field(None, description="agent_trace: a recorded trace file, a spec file, or the default spec; sessions are "
                                                       "replayed in turn.")
    trace_sessions: int | None = Field(None, description="agent_trace: sessions in the recorded trace (a replay cycles through them); null "
                                                         "for generated ones (each is new).")
    trace_spec: dict[str, Any] | None = Field(None, description="agent_trace: the generator's settings and distributions, as used.")
    tokens_per_word: float | None = Field(None, description="agent_trace: the server's tokens per generated word, measured, turning the "
                                                            "spec's token lengths into text.")
    longest_request_tokens: int | None = Field(None, description="agent_trace: the longest checked request (prompt + reply) in tokens, "
                                                                 "against the context per sequence.")


class ServeSweepResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    summary: str
    base_url: str
    model: str
    server: ServerInfo
    capacity: Capacity
    workload: Workload
    levels: list[Level] = Field(description="One entry per concurrency measured, in order.")
    knee_concurrency: int | None = Field(description="Lowest concurrency reaching knee_fraction of the best aggregate output tokens/s.")
    knee_output_tokens_per_s: float | None
    knee_fraction: float
    best_concurrency: int | None
    best_output_tokens_per_s: float | None
    speedup_vs_one_stream: float | None = Field(description="Best aggregate output tokens/s over the 1-stream level's; null without a "
                                                            "1-stream level.")
    saturation: Saturation = Field(description="not_saturated: throughput was still rising when the sweep stopped; saturated: it had "
                                               "flattened or fallen; undetermined: fewer than two levels.")
    saturation_reason: str
    stop_reason: StopReason = Field(description="What ended the sweep: the planned maximum, the server's slots or KV cache, failures, a "
                                                "latency limit, the deadline, or an interruption (partial results).")
    stop_detail: str
    complete: bool = Field(description="True when the sweep ended by a rule (not by failures or an interruption); only complete sweeps are "
                                       "served from the cache.")
    cached: bool = Field(description="True when this result was read from the cache instead of measured in this call (evidence.at says "
                                     "when it was measured).")
    cache_key: str = Field(description="sha256 of model, server and version or build, device, server arguments, workload and "
                                       "sweep settings.")
    files: list[str] = Field(description="serve_sweep.json, plots and the started server's log, relative to the workspace.")
    evidence: Evidence


SCHEMA_NAME = "serve_sweep"


def result_schema() -> dict[str, Any]:
    """The JSON schema of serve_sweep.json, as committed in validators/serve_sweep.schema.json."""
    schema = ServeSweepResult.model_json_schema()
    schema.pop("title", None)
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "hyperloom.serve_sweep/1",
        "title": "Hyperloom serve_sweep result",
        "description": "serve_sweep.json in .hyperloom/serve/<cache key>/: a concurrency sweep of an OpenAI-compatible server, "
                       "its levels, knee, saturation verdict, stop reason and evidence. Generated from ServeSweepResult.",
        **schema,
    }
