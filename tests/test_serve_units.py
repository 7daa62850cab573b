"""serve_sweep's pure parts: the knee and saturation rules, the level plan, stop rules, metrics parsing, calibration,
request validation and the committed result schema."""

from __future__ import annotations

import json
import os
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
    return Level(concurrency=concurrency, requests_ok=ok, requests_failed=failed, timeouts=0,
                 failures=["request 3: HTTP 500: x"] if failed else [], duration_s=1.0, output_tokens_per_s=100.0, requests_per_s=8.0,
                 per_request_output_tokens_per_s=50.0, ttft_s=stats, itl_s=stats,
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
        "validators/serve_sweep.schema.json is stale; regenerate it with: python -c \"import json; from hyperloom.tools.serve.models "
        "import result_schema; open('validators/serve_sweep.schema.json', 'w').write(json.dumps(result_schema(), indent=2) + '\\n')\"")


def test_a_seeded_agent_trace_is_the_same_every_time_and_its_sessions_share_the_prefix_and_grow():
    from hyperloom.tools.serve.trace import AgentTraceSpec, conversations, generate_session

    spec = AgentTraceSpec(shared_prefix_tokens=500, max_context_tokens=6000)
    one, again, other = generate_session(spec, 3, 0, 1.5), generate_session(spec, 3, 0, 1.5), generate_session(spec, 3, 1, 1.5)
    assert one == again and one != other and one != generate_session(spec, 4, 0, 1.5)
    assert one.turns[0].messages[0] == other.turns[0].messages[0] and one.turns[0].messages[0].role == "system"
    assert abs(len(one.turns[0].messages[0].content.split()) - 500 / 1.5) <= 1, "the shared prefix is 500 tokens at 1.5 tokens a word"
    turns = conversations(one, 1.5)
    for (shorter, _), (longer, _) in zip(turns, turns[1:]):
        assert longer[:len(shorter)] == shorter and len(longer) > len(shorter), "each turn's prompt extends the previous one"
    sessions = [generate_session(spec, 3, i, 1.5) for i in range(40)]
    for s in sessions:
        final, output = conversations(s, 1.5)[-1]
        estimated = 1.5 * sum(len(m["content"].split()) for m in final[:-1]) + 8 * len(final)
        assert estimated + output <= 1.1 * spec.max_context_tokens, "a session ends before its context passes the cap"
    reads: dict[str, list[str]] = {}
    for m in (m for s in sessions for t in s.turns for m in t.messages if m.content.startswith("File ")):
        reads.setdefault(m.content.split(":")[0], []).append(m.content)
    assert any(len(texts) > 1 for texts in reads.values()) and all(len(set(texts)) == 1 for texts in reads.values()), \
        "the same file is the same text in every session"


@pytest.mark.parametrize(("fields", "median", "low", "high"), [
    ({"median": 100}, 100, 100, 100),                                   # sigma 0: a fixed length
    ({"median": 100, "sigma": 1.0}, 100, 1, 10_000),
    ({"median": 100, "sigma": 2.0, "low": 50, "high": 150}, 100, 50, 150),
])
def test_lengths_follow_their_declared_log_normal_distribution_within_its_bounds(fields, median, low, high):
    import random
    import statistics

    from hyperloom.tools.serve.trace import Lengths

    rng = random.Random(0)
    draws = [Lengths(**fields).draw(rng) for _ in range(4000)]
    assert low <= min(draws) and max(draws) <= high
    assert abs(statistics.median(draws) - median) <= 0.1 * median


def test_impossible_length_distributions_are_refused():
    from hyperloom.tools.serve.trace import AgentTraceSpec, Lengths

    with pytest.raises(ValidationError, match="low 200 <= median 100"):
        Lengths(median=100, low=200)
    with pytest.raises(ValidationError, match="Extra inputs"):
        AgentTraceSpec(turn_count=3)


@pytest.mark.parametrize(("line", "message"), [
    ('{"id": "s", "turns": []}', "line 1 is not an agent-trace session: turns: List should have at least 1 item"),
    ('{"id": "s", "turns": [{"messages": [{"role": "robot", "content": "x"}], "output_tokens": 4}]}', "turns.0.messages.0.role"),
    ("not json", "line 1 is not an agent-trace session"),
])
def test_a_bad_trace_line_is_refused_with_its_number_and_field(tmp_path, line, message):
    from hyperloom.core.errors import HyperloomError
    from hyperloom.tools.serve.trace import load_trace

    (tmp_path / "t.jsonl").write_text(line + "\n")
    with pytest.raises(HyperloomError, match=message):
        load_trace(tmp_path / "t.jsonl", "t.jsonl")


def test_a_generated_trace_written_out_is_valid_against_the_committed_schema_and_reads_back(tmp_path):
    import jsonschema

    from hyperloom.tools.serve.trace import AgentTraceSpec, generate_session, load_trace, schemas, write_trace

    for name, schema in schemas().items():
        assert json.loads((REPO / "validators" / f"{name}.schema.json").read_text()) == schema, f"validators/{name}.schema.json is stale"
    sessions = [generate_session(AgentTraceSpec(), 0, i, 1.3) for i in range(3)]
    write_trace(sessions, tmp_path / "trace.jsonl")
    for line in (tmp_path / "trace.jsonl").read_text().splitlines():
        jsonschema.validate(json.loads(line), schemas()["agent_trace"])
    assert load_trace(tmp_path / "trace.jsonl", "trace.jsonl") == sessions


def test_a_context_refusal_names_the_slot_the_flag_and_a_size_that_fits():
    from hyperloom.core.errors import HyperloomError
    from hyperloom.tools.serve.client import is_context_error
    from hyperloom.tools.serve.fit import context_refusal, refuse_unfit

    llama = ServerFacts("llama.cpp", "b1", 256, 512, None, True, "props")
    with pytest.raises(HyperloomError, match=r"needs 600 tokens \(input 560 \+ output 40\) but a slot of this llama.cpp server holds 512 "
                                             r"\(-c 131072 shared by -np 256 slots\).*-c 262144 -np 256"):
        refuse_unfit(llama, 560, 40)
    vllm = ServerFacts("vllm", "0.9", None, 4096, 10**6, True, "metrics")
    with pytest.raises(HyperloomError, match="max_model_len is 4096.*--max-model-len"):
        refuse_unfit(vllm, 4000, 200)
    refuse_unfit(llama, 400, 100)  # fits: no error
    captured = (FIXTURES / "llama_cpp_context_error.json").read_text()
    assert is_context_error(f"HTTP 400: {captured}") and not is_context_error("HTTP 500: model crashed")
    error = context_refusal(llama, f"HTTP 400: {captured}", "a prompt")
    assert "longer than its context" in error.cause and "-np" in error.next_step and "serves this model" not in str(error)


def test_vllm_prefix_cache_counters_are_summed_over_engines():
    from hyperloom.tools.serve.capacity import prefix_cache_counts

    # the counter names vLLM's V1 engine documents (docs/usage/metrics.md); no captured page of one is at hand
    text = ('vllm:prefix_cache_queries_total{engine="0",model_name="m"} 1000.0\nvllm:prefix_cache_hits_total{engine="0",model_name="m"} '
            '250.0\nvllm:prefix_cache_queries_total{engine="1",model_name="m"} '
            '500.0\nvllm:prefix_cache_hits_total{engine="1",model_name="m"} 50.0\n')
    assert prefix_cache_counts(parse_metrics(text)) == (300.0, 1500.0)
    assert prefix_cache_counts(parse_metrics((FIXTURES / "vllm_metrics.txt").read_text())) is None, "vLLM 0.6 has only a hit-rate gauge"


def test_per_turn_figures_and_the_prefix_share_come_from_the_responses():
    from hyperloom.tools.serve.client import Record
    from hyperloom.tools.serve.stats import summarize

    records = [Record(ok=True, ttft_s=0.1 * turn, e2e_s=1.0, output_tokens=4, input_tokens=100 * turn, cached_tokens=100 * (turn - 1),
                      turn=turn, started_at=0.0, finished_at=1.0) for turn in (1, 2, 2, 3)]
    level = summarize(2, records)
    assert [(t.turn, t.requests, t.input_tokens_mean, t.cached_input_tokens_mean) for t in level.turns] == [(1, 1, 100, 0),
                                                                                                            (2, 2, 200, 100),
                                                                                                            (3, 1, 300, 200)]
    assert level.prefix_cache_hit_fraction == pytest.approx(400 / 800) and "responses" in level.prefix_cache_source
    assert summarize(1, [Record(ok=True, ttft_s=0.1, e2e_s=1, output_tokens=4, turn=1, finished_at=1.0)],
                     metrics_hit_fraction=0.4).prefix_cache_hit_fraction == 0.4
    assert summarize(1, records[:1]).turns == [], "single requests have no turns"


def test_calibration_through_requests_starts_small_and_grows_to_the_length():
    sent: list[int] = []

    async def measure(prompt: str) -> int:
        sent.append(4 * len(prompt.split()) + 1)  # 4 tokens a word: one word per token would ask 4x the slot
        return sent[-1]

    words, tokens = anyio.run(calibrate_words, 120, 0, measure, 4, 15)
    assert (words, tokens) == (30, 121) and sent[0] == 61 and max(sent) <= 121


def test_the_plot_title_is_wrapped_to_the_figure():
    from hyperloom.tools.serve.plot import TITLE_CHARS, title

    from types import SimpleNamespace

    fake = SimpleNamespace(server=SimpleNamespace(kind="llama.cpp", version="b0-llama-cpp-python-0.3.36"), model="/tmp/llama8b-random.gguf",
                           workload=SimpleNamespace(kind="synthetic", input_tokens_requested=120, output_tokens_requested=128),
                           saturation="not_saturated", stop_reason="max_concurrency")
    lines = title(fake).splitlines()
    assert len(lines) == 2 and all(len(line) <= TITLE_CHARS for line in lines) and lines[-1].endswith("stopped by max_concurrency")


def test_the_llama_server_script_names_its_binary_without_building_it(tmp_path):
    """.ci/run asks where the binary will be before it starts the build beside the suite."""
    import subprocess

    cache = tmp_path / "cache"
    done = subprocess.run(["bash", "scripts/serve/llama_server.sh", "--path"], cwd=REPO,
                          env={**os.environ, "HYPERLOOM_LLAMA_CACHE": str(cache)}, capture_output=True, text=True, timeout=30)
    printed = done.stdout.strip()
    assert done.returncode == 0 and printed.startswith(f"{cache}/") and printed.endswith("-cpu/bin/llama-server"), done
    assert not cache.exists(), "nothing fetched or built"
