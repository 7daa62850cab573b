"""What a server says about itself: its kind and build, how many sequences and KV tokens it holds, its queue.

llama.cpp's llama-server: /props (total_slots, default_generation_settings.n_ctx, build_info; /slots n_ctx when
/props lacks it) and, with --metrics, /metrics (llamacpp:requests_deferred). vLLM: /version and /metrics
(vllm:cache_config_info num_gpu_blocks and block_size, vllm:num_requests_waiting, vllm:kv_cache_usage_perc or the
older vllm:gpu_cache_usage_perc, vllm:prefix_cache_hits_total and _queries_total); its max_model_len is on /v1/models.
Pages live at the server's origin, beside the /v1 prefix. A server that exposes none of them has an unknown capacity.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

import httpx2

from hyperloom.tools.serve.client import get_optional
from hyperloom.tools.serve.models import Capacity, ServerKind

_SAMPLE = re.compile(r"^([A-Za-z_:][A-Za-z0-9_:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'([A-Za-z_][A-Za-z0-9_]*)="((?:[^"\\]|\\.)*)"')
WAITING_METRICS = ("vllm:num_requests_waiting", "llamacpp:requests_deferred")
KV_USAGE_METRICS = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
PREFIX_HITS_METRICS = ("vllm:prefix_cache_hits_total", "vllm:gpu_prefix_cache_hits_total")
PREFIX_QUERIES_METRICS = ("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total")


@dataclass(frozen=True)
class Sample:
    name: str
    labels: dict[str, str]
    value: float


def parse_metrics(text: str) -> list[Sample]:
    """Prometheus text exposition: one sample per line that is not a comment; lines that do not parse are skipped."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#") or not (match := _SAMPLE.match(line.strip())):
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        samples.append(Sample(match.group(1), dict(_LABEL.findall(match.group(2) or "")), value))
    return samples


def _total(samples: list[Sample], names: tuple[str, ...]) -> float | None:
    """Sum over label sets (engines, models) of the first name present."""
    for name in names:
        values = [s.value for s in samples if s.name == name]
        if values:
            return sum(values)
    return None


def _highest(samples: list[Sample], names: tuple[str, ...]) -> float | None:
    for name in names:
        values = [s.value for s in samples if s.name == name]
        if values:
            return max(values)
    return None


def queue_and_kv(samples: list[Sample]) -> tuple[float | None, float | None]:
    """Requests waiting (summed over engines) and the highest KV-cache usage fraction in one scrape."""
    return _total(samples, WAITING_METRICS), _highest(samples, KV_USAGE_METRICS)


def prefix_cache_counts(samples: list[Sample]) -> tuple[float, float] | None:
    """vLLM's cumulative prefix-cache (hit tokens, queried tokens), summed over engines; None when it does not count them."""
    hits, queries = _total(samples, PREFIX_HITS_METRICS), _total(samples, PREFIX_QUERIES_METRICS)
    return (hits, queries) if hits is not None and queries is not None else None


def vllm_kv_tokens(samples: list[Sample]) -> int | None:
    """KV-cache tokens from vllm:cache_config_info: kv_cache_size_tokens where given, else num_gpu_blocks x block_size."""
    total = 0
    for sample in samples:
        if sample.name != "vllm:cache_config_info":
            continue
        labels = sample.labels
        try:
            if labels.get("kv_cache_size_tokens", "").isdigit():
                total += int(labels["kv_cache_size_tokens"])
            else:
                total += int(labels["num_gpu_blocks"]) * int(labels["block_size"])
        except (KeyError, ValueError):
            continue
    return total or None


@dataclass(frozen=True)
class ServerFacts:
    kind: ServerKind
    version: str | None
    slots: int | None
    context_per_slot_tokens: int | None
    kv_cache_tokens: int | None
    metrics: bool
    source: str


async def probe(client: httpx2.AsyncClient, root: str) -> ServerFacts:
    """Ask the server's origin for llama.cpp's /props, vLLM's /version and /metrics; whatever answers is used."""
    props_response = await get_optional(client, f"{root}/props")
    props = _json_object(props_response)
    metrics_response = await get_optional(client, f"{root}/metrics")
    samples = parse_metrics(metrics_response.text) if metrics_response is not None else []
    if props is not None and "total_slots" in props:
        facts = llama_cpp_facts(props, f"{root}/props", metrics=bool(samples))
        if facts.context_per_slot_tokens is None:
            listed = _json(await get_optional(client, f"{root}/slots"))
            n_ctx = listed[0].get("n_ctx") if isinstance(listed, list) and listed and isinstance(listed[0], dict) else None
            if isinstance(n_ctx, int) and n_ctx > 0:
                facts = replace(facts, context_per_slot_tokens=n_ctx, source=f"{facts.source}; {root}/slots n_ctx={n_ctx}")
        return facts
    if any(s.name.startswith("vllm:") for s in samples):
        version = _json_object(await get_optional(client, f"{root}/version"))
        kv = vllm_kv_tokens(samples)
        return ServerFacts("vllm", str(version.get("version")) if version and version.get("version") else None, None, None, kv, True,
                           f"vLLM {root}/metrics: " + (f"KV cache {kv} tokens (cache_config_info)" if kv else "no cache_config_info"))
    return ServerFacts("unknown", None, None, None, None, False,
                       f"the server exposes neither llama.cpp's {root}/props nor vLLM's {root}/metrics: capacity unknown")


def llama_cpp_facts(props: dict, where: str, metrics: bool) -> ServerFacts:
    """llama-server's /props: total_slots (-np), the context of one slot, and the build."""
    settings = props.get("default_generation_settings") if isinstance(props.get("default_generation_settings"), dict) else {}
    slots = props.get("total_slots") if isinstance(props.get("total_slots"), int) and props["total_slots"] > 0 else None
    n_ctx = settings.get("n_ctx") if isinstance(settings.get("n_ctx"), int) and settings["n_ctx"] > 0 else None
    build = props.get("build_info") if isinstance(props.get("build_info"), str) else None
    return ServerFacts("llama.cpp", build, slots, n_ctx, None, metrics, f"llama.cpp {where}: total_slots={slots}, n_ctx per slot={n_ctx}")


def capacity_for(facts: ServerFacts, tokens_per_request: int | None) -> Capacity:
    """The concurrency bound for requests of `tokens_per_request` (prompt + output) tokens, and which resource sets it."""
    bounds: list[tuple[int, str]] = []
    if facts.slots is not None:
        bounds.append((facts.slots, "slots"))
    if facts.kv_cache_tokens is not None and tokens_per_request:
        bounds.append((max(facts.kv_cache_tokens // tokens_per_request, 1), "kv_cache"))
    bound = min(bounds) if bounds else None
    return Capacity(
        slots=facts.slots, context_per_slot_tokens=facts.context_per_slot_tokens, kv_cache_tokens=facts.kv_cache_tokens,
        max_concurrency=bound[0] if bound else None, bound=bound[1] if bound else None, source=facts.source,  # type: ignore[arg-type]
    )


def _json(response: httpx2.Response | None) -> object:
    if response is None:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def _json_object(response: httpx2.Response | None) -> dict | None:
    value = _json(response)
    return value if isinstance(value, dict) else None
