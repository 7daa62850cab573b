"""serve_sweep's pure parts: the knee and saturation rules, the level plan, stop rules, metrics parsing, calibration,
request validation and the committed result schema."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
import pytest
from pydantic import ValidationError

from hyperloom.tools.serve.capacity import ServerFacts, capacity_for, llama_cpp_facts, parse_metrics, queue_and_kv, vllm_kv_tokens
from hyperloom.tools.serve.knee import find_knee, saturation
from hyperloom.tools.serve.models import Capacity, Level, Percentiles, ServeSweepRequest, result_schema
from hyperloom.tools.serve.sweep import plan_levels, stop_after
from hyperloom.tools.serve.workload import calibrate_words, synthetic_prompt

FIXTURES = Path(__file__).parent / "fixtures" / "serve"
REPO = Path(__file__).parent.parent


@pytest.mark.parametrize(("points", "knee", "best", "speedup"), [
    ([(1, 100), (2, 190), (4, 350), (8, 380), (16, 385)], 4, 16, 3.85),   # 350 >= 0.9 x 385: the knee is 4
    ([(1, 100), (2, 200), (4, 400)], 4, 4, 4.0),                           # still rising: knee = best
    ([(1, 100), (2, 120), (4, 90)], 2, 2, 1.2),                            # fell after 2
    ([(2, 50), (4, 49)], 2, 2, None),                                      # no 1-stream level: no speedup
    ([(1, 0.0), (2, 10)], 2, 2, None),                                     # a level with no tokens is skipped
])
def test_the_knee_is_the_lowest_concurrency_within_the_fraction_of_the_best(points, knee, best, speedup):
    found = find_knee(points, 0.9)
    assert (found.knee_concurrency, found.best_concurrency) == (knee, best)
    assert found.speedup_vs_one_stream == (pytest.approx(speedup) if speedup else None)


def test_no_level_with_tokens_has_no_knee():
    assert find_knee([(1, 0.0)], 0.9).knee_concurrency is None


@pytest.mark.parametrize(("points", "verdict"), [
    ([(1, 100), (2, 200), (4, 380)], "not_saturated"),   # +90 % per doubling
    ([(1, 100), (2, 200), (4, 215)], "saturated"),       # +7.5 % < 10 %
    ([(1, 100), (2, 200), (4, 190)], "saturated"),       # fell
    ([(4, 100), (6, 106)], "not_saturated"),             # 4 -> 6 needs 0.1 x log2(1.5) = +5.85 %
    ([(4, 100), (6, 105)], "saturated"),
    ([(1, 100)], "undetermined"),
])
def test_saturation_compares_the_last_two_levels_per_doubling(points, verdict):
    assert saturation(points, 0.1)[0] == verdict


def test_the_saturation_reason_names_the_levels_and_the_gain():
    verdict, reason = saturation([(2, 100.0), (4, 150.0)], 0.1)
    assert verdict == "not_saturated" and "2 -> 4 streams" in reason and "+50.0 %" in reason and "+10.0 %" in reason


@pytest.mark.parametrize(("max_concurrency", "bound", "levels"), [
    (1, None, [1]), (8, None, [1, 2, 4, 8]), (12, None, [1, 2, 4, 8, 12]),
    (64, 4, [1, 2, 4]), (64, 6, [1, 2, 4, 6]), (4, 8, [1, 2, 4]), (64, 1, [1]),
])
def test_levels_double_up_to_the_maximum_and_end_at_a_lower_server_bound(max_concurrency, bound, levels):
    assert plan_levels(max_concurrency, bound) == levels


def _level(concurrency: int, ok: int = 8, failed: int = 0, ttft: float = 0.1, waiting: float | None = None) -> Level:
    stats = Percentiles(p50=ttft, p90=ttft, p99=ttft, mean=ttft, count=ok)
    return Level(concurrency=concurrency, requests_ok=ok, requests_failed=failed, timeouts=0, failures=["request 3: HTTP 500: x"] if failed else [],
                 duration_s=1.0, output_tokens_per_s=100.0, requests_per_s=8.0, per_request_output_tokens_per_s=50.0, ttft_s=stats, itl_s=stats,
                 e2e_s=stats, input_tokens_mean=10.0, output_tokens_mean=10.0, output_tokens_min=10, server_waiting_max=waiting)


REQUEST = ServeSweepRequest(base_url="http://127.0.0.1:8080/v1", max_concurrency=64)
SLOTS = Capacity(slots=4, context_per_slot_tokens=512, max_concurrency=4, bound="slots", source="llama.cpp /props")
KV = Capacity(kv_cache_tokens=1000, max_concurrency=3, bound="kv_cache", source="vLLM /metrics")
NONE = Capacity(source="unknown")


@pytest.mark.parametrize(("level", "request_", "capacity", "last", "elapsed", "reason"), [
    (_level(2), REQUEST, NONE, 64, 1.0, None),
    (_level(2, ok=7, failed=1), REQUEST, NONE, 64, 1.0, "errors"),
    (_level(2, ok=7, failed=1), REQUEST.model_copy(update={"max_error_rate": 0.2}), NONE, 64, 1.0, None),
    (_level(2, ok=0, failed=0), REQUEST, NONE, 64, 1.0, "errors"),
    (_level(2, ttft=2.0), REQUEST.model_copy(update={"max_ttft_s": 1.0}), NONE, 64, 1.0, "latency_limit"),
    (_level(2, waiting=2.0), REQUEST, NONE, 64, 1.0, "server_capacity"),
    (_level(4), REQUEST, SLOTS, 4, 1.0, "server_capacity"),
    (_level(3), REQUEST, KV, 3, 1.0, "kv_capacity"),
    (_level(64), REQUEST, NONE, 64, 1.0, "max_concurrency"),
    (_level(4), REQUEST.model_copy(update={"max_concurrency": 4}), SLOTS, 4, 1.0, "max_concurrency"),
    (_level(2), REQUEST.model_copy(update={"max_duration_s": 10.0}), NONE, 64, 11.0, "deadline"),
])
def test_stop_rules_name_the_bound_that_ended_the_sweep(level, request_, capacity, last, elapsed, reason):
    decided = stop_after(level, request_, capacity, last, elapsed)
    assert (decided[0] if decided else None) == reason


def test_vllm_metrics_give_the_kv_cache_size_the_queue_and_the_usage():
    samples = parse_metrics((FIXTURES / "vllm_metrics.txt").read_text())
    assert vllm_kv_tokens(samples) == 81767 * 16
    assert queue_and_kv(samples) == (0.0, 0.0)
    lora = next(s for s in samples if s.name == "vllm:lora_requests_info")
    assert lora.labels == {"max_lora": "0", "running_lora_adapters": "", "waiting_lora_adapters": ""}


def test_llama_cpp_props_give_the_slots_the_context_per_slot_and_the_build():
    props = json.loads((FIXTURES / "llama_cpp_props.json").read_text())
    facts = llama_cpp_facts(props, "http://127.0.0.1:8080/props", metrics=True)
    assert (facts.kind, facts.slots, facts.context_per_slot_tokens, facts.version) == ("llama.cpp", 4, 512, props["build_info"])
    assert len(json.loads((FIXTURES / "llama_cpp_slots.json").read_text())) == facts.slots  # /slots lists as many
    assert capacity_for(facts, 64).max_concurrency == 4


def test_a_kv_cache_bounds_concurrency_by_the_tokens_each_request_needs():
    facts = ServerFacts("vllm", "0.7.0", None, None, 81767 * 16, True, "vLLM /metrics")
    capacity = capacity_for(facts, 4096 + 1024)
    assert (capacity.max_concurrency, capacity.bound) == (81767 * 16 // 5120, "kv_cache")
    slots = capacity_for(ServerFacts("llama.cpp", "b1", 8, 4096, None, False, "props"), 256)
    assert (slots.max_concurrency, slots.bound) == (8, "slots")


def test_calibration_rescales_the_words_until_the_server_counts_the_tokens_asked_for():
    async def measure(prompt: str) -> int:
        return 3 * len(prompt.split()) + 1  # a tokenizer giving 3 tokens a word, plus BOS

    assert anyio.run(calibrate_words, 128, 0, measure) == (43, 130)  # 128 words -> 385 tokens; x 128/385 -> 43 words, within 2 %


def test_calibration_keeps_the_first_guess_when_the_server_reports_no_usage():
    async def measure(prompt: str) -> None:
        return None

    assert anyio.run(calibrate_words, 50, 0, measure) == (50, None)


def test_synthetic_prompts_are_seeded_and_differ_per_request():
    assert synthetic_prompt(10, 1, 5) == synthetic_prompt(10, 1, 5)
    assert synthetic_prompt(10, 1, 5) != synthetic_prompt(10, 1, 6) and len(synthetic_prompt(10, 1, 5).split()) == 10


@pytest.mark.parametrize(("fields", "message"), [
    ({"base_url": "ftp://127.0.0.1/v1"}, "http:// or https://"),
    ({"base_url": "http://user:pw@127.0.0.1/v1"}, "no query, fragment or credentials"),
    ({"base_url": "http://127.0.0.1/v1", "server_command": ""}, "server_command is empty"),
    ({"base_url": "http://127.0.0.1/v1", "server_command": "llama-server 'unclosed"}, "cannot be split"),
    ({"base_url": "http://127.0.0.1/v1", "max_concurrency": 100000}, "less than or equal to 4096"),
    ({"base_url": "http://127.0.0.1/v1", "output_tokens": 0}, "greater than or equal to 1"),
    ({"base_url": "http://127.0.0.1/v1", "input_tokens": 1 << 20, "output_tokens": 8}, "more than any server's context"),
    ({"base_url": "http://127.0.0.1/v1", "api_key_env": "KEY; rm -rf"}, "should match pattern"),
    ({"base_url": "http://127.0.0.1/v1", "max_ttft_s": float("nan")}, "finite number"),
    ({"base_url": "http://127.0.0.1/v1", "surprise": 1}, "Extra inputs are not permitted"),
])
def test_absurd_requests_are_refused_with_the_reason(fields, message):
    with pytest.raises(ValidationError, match=message):
        ServeSweepRequest(**fields)


def test_a_server_command_string_is_split_into_arguments_without_a_shell():
    request = ServeSweepRequest(base_url="http://127.0.0.1:8080/v1/", server_command="llama-server -m 'my model.gguf' --port 8080")
    assert request.server_command == ["llama-server", "-m", "my model.gguf", "--port", "8080"]
    assert request.base_url == "http://127.0.0.1:8080/v1"


def test_the_committed_result_schema_is_the_models_schema():
    committed = json.loads((REPO / "validators" / "serve_sweep.schema.json").read_text())
    assert committed == result_schema(), (
        "validators/serve_sweep.schema.json is stale; regenerate it with: python -c \"import json; from hyperloom.tools.serve.models import "
        "result_schema; open('validators/serve_sweep.schema.json', 'w').write(json.dumps(result_schema(), indent=2) + '\\n')\"")
