"""serve_sweep against a scripted stub on loopback: garbage, HTTP errors, early closes, hangs, a queue filling, bad input.

The real server (llama.cpp) is in test_serve.py; the stub only adds the faults a healthy server never shows.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from helpers import interruptible
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.serve.api import run_serve_sweep
from hyperloom.tools.serve.models import ServeSweepRequest

FIXTURES = Path(__file__).parent / "fixtures" / "serve"
Mode = Callable[[int], str]  # the n-th POST -> "ok" | "garbage" | "early_close" | "http500" | "hang" | "slow" | "empty" | "empty_no_usage"


class Stub:
    def __init__(self, mode: Mode, tokens_per_word: int = 1, metrics: str | None = None, tokenizer: bool = True,
                 context_tokens: int | None = None) -> None:
        self.mode, self.tokens_per_word, self.metrics = mode, tokens_per_word, metrics
        self.tokenizer, self.context_tokens = tokenizer, context_tokens
        self.posts = 0
        self.bodies: list[dict] = []
        self.paths: list[str] = []
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.base_url = ""


@contextmanager
def stub_server(mode: Mode, **options) -> Iterator[Stub]:
    stub = Stub(mode, **options)

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def _json(self, status: int, payload: object) -> None:
            body = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            stub.paths.append(self.path)
            if self.path == "/v1/models":
                self._json(200, {"object": "list", "data": [{"id": "stub-model", "object": "model"}]})
            elif self.path == "/metrics" and stub.metrics is not None:
                body = stub.metrics.encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/plain; version=0.0.4")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            else:
                self._json(404, {"error": "not found"})

        def tokens(self, text: str) -> int:
            return stub.tokens_per_word * len(text.split()) + 1  # a word-level tokenizer with BOS

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            stub.paths.append(self.path)
            if self.path == "/tokenize" and stub.tokenizer:  # llama.cpp's form: {"content", "add_special"} -> {"tokens"}
                self._json(200, {"tokens": [7] * self.tokens(body["content"])})
                return
            if self.path not in ("/v1/completions", "/v1/chat/completions"):
                self._json(404, {"error": {"message": "File Not Found", "type": "not_found_error", "code": 404}})
                return
            prompt = body.get("prompt") or body["messages"][0]["content"]
            if stub.context_tokens is not None and self.tokens(prompt) > stub.context_tokens:  # llama.cpp's refusal, as captured
                n = self.tokens(prompt)
                self._json(400, {"error": {"code": 400, "message": f"request ({n} tokens) exceeds the available context size "
                                                                   f"({stub.context_tokens} tokens), "
                                           "try increasing it", "type": "exceed_context_size_error", "n_prompt_tokens": n,
                                           "n_ctx": stub.context_tokens}})
                return
            with stub.lock:
                index = stub.posts
                stub.posts += 1
                stub.bodies.append(body)
            mode = stub.mode(index)
            if mode == "http500":
                self._json(500, {"error": {"message": "model crashed", "code": 500}})
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream" if mode != "garbage" else "text/html")
            self.end_headers()
            if mode == "garbage":
                self.wfile.write(b"<html>Bad Gateway</html>\n")
                return
            if mode == "hang":
                stub.release.wait(60)
                return
            count = 2 if mode == "early_close" else body["max_tokens"]
            for _ in range(count):
                if mode == "slow":
                    time.sleep(0.05)
                text = "" if mode.startswith("empty") else "a"
                self.wfile.write(f'data: {{"choices":[{{"index":0,"text":"{text}"}}]}}\n\n'.encode())
                self.wfile.flush()
            if mode == "early_close":
                return
            usage = {"prompt_tokens": self.tokens(prompt), "completion_tokens": count}
            if mode != "empty_no_usage":
                self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    stub.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield stub
    finally:
        stub.release.set()
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def sweep(workspace, stub: Stub, **fields):
    fields.setdefault("input_tokens", 16)
    fields.setdefault("output_tokens", 4)
    fields.setdefault("requests_per_level", 4)
    fields.setdefault("plot", False)
    return run_serve_sweep(ServeSweepRequest(base_url=stub.base_url, **fields), workspace)


def always(mode: str) -> Mode:
    return lambda index: mode


def after(ok_posts: int, mode: str) -> Mode:
    return lambda index: "ok" if index < ok_posts else mode


def test_a_healthy_stub_is_swept_to_max_concurrency_with_forced_lengths_and_calibrated_prompts(workspace):
    with stub_server(always("ok"), tokens_per_word=2) as stub:
        result = sweep(workspace, stub, max_concurrency=4, input_tokens=41)
    assert [level.concurrency for level in result.levels] == [1, 2, 4]
    assert result.stop_reason == "max_concurrency" and result.complete and not result.cached
    assert all(level.output_tokens_min == 4 and level.requests_ok == 4 for level in result.levels)
    assert result.levels[0].input_tokens_mean == 41  # 20 words -> 2 x 20 + 1 tokens, as calibrated
    assert result.workload.words_per_prompt == 20 and result.capacity.max_concurrency is None and result.server.kind == "unknown"
    sent = [body for body in stub.bodies if body["max_tokens"] == 4]
    assert all(b["ignore_eos"] is True and b["min_tokens"] == 4 and b["stream"] is True for b in sent)
    assert len({b["prompt"] for b in sent}) == len(sent), "every request has its own prompt"
    assert stub.paths.count("/v1/completions") == stub.posts


def test_garbage_from_the_first_request_is_a_clear_error(workspace):
    with stub_server(always("garbage")) as stub, pytest.raises(HyperloomError, match="not a server-sent event stream.*Bad Gateway"):
        sweep(workspace, stub)


@pytest.mark.parametrize(("mode", "message"), [
    ("garbage", "not a server-sent event stream"),
    ("http500", "HTTP 500: .*model crashed"),
    ("early_close", "closed early, without \\[DONE\\], after 2 chunks"),
])
def test_a_fault_after_the_first_level_stops_the_sweep_and_keeps_the_first_level_labelled(workspace, mode, message):
    # 1 calibration request, then level 1: 1 warm-up and 4 measured; the fault starts at level 2.
    with stub_server(after(6, mode)) as stub:
        result = sweep(workspace, stub, max_concurrency=8)
    first, failed = result.levels
    assert first.concurrency == 1 and first.requests_ok == 4 and first.requests_failed == 0
    assert failed.concurrency == 2 and failed.requests_ok == 0 and failed.failures
    assert all(pytest.importorskip("re").search(message, f) for f in failed.failures), failed.failures
    assert result.stop_reason == "errors" and not result.complete and result.best_concurrency == 1
    saved = json.loads((workspace.root / result.files[0]).read_text())
    assert saved["stop_reason"] == "errors" and saved["complete"] is False and len(saved["levels"]) == 2


def test_a_partial_result_is_measured_again_rather_than_served_from_the_cache(workspace):
    with stub_server(after(6, "http500")) as stub:
        first = sweep(workspace, stub, max_concurrency=2)
        stub.posts = 0  # the same faults again
        second = sweep(workspace, stub, max_concurrency=2)
    assert not first.complete and not second.cached and stub.posts > 0
    assert first.cache_key == second.cache_key and first.evidence.at < second.evidence.at


def test_tokens_that_render_as_no_text_count_when_the_server_reports_them_and_fail_when_it_does_not(workspace):
    with stub_server(after(6, "empty")) as stub:
        counted = sweep(workspace, stub, max_concurrency=2)
    assert counted.complete and [level.requests_ok for level in counted.levels] == [4, 4]
    assert counted.levels[1].output_tokens_mean == 4 and counted.levels[1].ttft_s.count == 0 and counted.levels[1].e2e_s.count == 4
    with stub_server(after(6, "empty_no_usage")) as stub:
        unseen = sweep(workspace, stub, max_concurrency=2, seed=1)
    assert unseen.stop_reason == "errors" and "ended without any text" in unseen.levels[1].failures[0]


def test_a_hanging_server_times_out_and_the_sweep_stops_with_the_timeouts_counted(workspace):
    with stub_server(after(6, "hang")) as stub:
        started = time.monotonic()
        result = sweep(workspace, stub, max_concurrency=4, request_timeout_s=1.0)
        elapsed = time.monotonic() - started
    hung = result.levels[-1]
    assert result.stop_reason == "errors" and hung.timeouts >= 1 and "no end of stream after 1 s" in hung.failures[0]
    assert elapsed < 10, f"a hang must cost about one request timeout, took {elapsed:.1f} s"


def test_an_endpoint_that_is_down_is_a_clear_error(workspace):
    with stub_server(always("ok")) as stub:
        url = stub.base_url
    with pytest.raises(HyperloomError, match="could not reach the /models page"):
        run_serve_sweep(ServeSweepRequest(base_url=url, plot=False), workspace)


def test_a_latency_limit_stops_the_sweep_after_the_level_that_broke_it(workspace):
    with stub_server(always("slow")) as stub:
        result = sweep(workspace, stub, max_concurrency=8, max_itl_s=0.01, latency_percentile="p50")
    assert [level.concurrency for level in result.levels] == [1]
    assert result.stop_reason == "latency_limit" and "p50 ITL" in result.stop_detail and result.complete


def test_a_filling_queue_in_the_servers_metrics_stops_the_sweep_as_server_capacity(workspace):
    metrics = (FIXTURES / "vllm_metrics.txt").read_text().replace(
        'vllm:num_requests_waiting{model_name="Qwen/Qwen2.5-Coder-1.5B-Instruct"} 0.0',
        'vllm:num_requests_waiting{model_name="Qwen/Qwen2.5-Coder-1.5B-Instruct"} 3.0')
    with stub_server(always("slow"), metrics=metrics) as stub:
        result = sweep(workspace, stub, max_concurrency=8, output_tokens=8)
    assert result.server.kind == "vllm" and result.capacity.kv_cache_tokens == 81767 * 16
    assert result.levels[0].server_waiting_max == 3.0 and result.levels[0].kv_cache_usage_max == 0.0
    assert result.stop_reason == "server_capacity" and "queued up to 3" in result.stop_detail


def test_a_prompts_file_is_used_in_turn_and_hashed(workspace):
    (workspace.root / "prompts.jsonl").write_text('{"prompt": "one two three"}\n\n{"prompt": "four five"}\n')
    with stub_server(always("ok")) as stub:
        result = sweep(workspace, stub, max_concurrency=1, prompts_file="prompts.jsonl")
    assert result.workload.input_tokens_requested is None and len(result.workload.prompts_sha256) == 64
    assert {b["prompt"] for b in stub.bodies} == {"one two three", "four five"}
    assert result.levels[0].input_tokens_mean == pytest.approx((4 + 3) / 2)


@pytest.mark.parametrize(("content", "message"), [
    ('{"prompt": "ok"}\nnot json\n', "line 2 is not JSON"),
    ('{"text": "x"}\n', 'line 1 has no non-empty "prompt"'),
    ("\n\n", "holds no prompt"),
])
def test_a_bad_prompts_file_is_refused_with_its_line(workspace, content, message):
    (workspace.root / "p.jsonl").write_text(content)
    with pytest.raises(HyperloomError, match=message):
        run_serve_sweep(ServeSweepRequest(base_url="http://127.0.0.1:9/v1", prompts_file="p.jsonl"), workspace)


def test_a_prompts_file_outside_the_workspace_is_refused(workspace, tmp_path):
    outside = tmp_path / "secret.jsonl"
    outside.write_text('{"prompt": "x"}\n')
    with pytest.raises(HyperloomError, match="outside the workspace"):
        run_serve_sweep(ServeSweepRequest(base_url="http://127.0.0.1:9/v1", prompts_file=str(outside)), workspace)


def _processes_with(marker: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if marker.encode() in (entry / "cmdline").read_bytes():
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def _live_in_group(group: int) -> list[int]:
    """Processes of a process group that still run (a zombie waiting for its reaper has ended)."""
    live = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group and fields[0] != "Z":
                live.append(int(entry.name))
    return live


def test_a_server_command_that_exits_is_an_error_with_its_log(workspace):
    command = [sys.executable, "-c", "import sys; print('cannot load model.gguf'); sys.exit(3)"]
    with pytest.raises(HyperloomError, match="exited with status 3 before serving: cannot load model.gguf"):
        run_serve_sweep(ServeSweepRequest(base_url="http://127.0.0.1:9/v1", server_command=command), workspace)


def test_a_server_command_that_never_serves_times_out_and_is_ended(workspace):
    marker = f"hyperloom-never-serves-{os.getpid()}"
    command = [sys.executable, "-c", f"import time; time.sleep(120)  # {marker}"]
    with pytest.raises(HyperloomError, match="did not serve .* within 1 s"):
        run_serve_sweep(ServeSweepRequest(base_url="http://127.0.0.1:9/v1", server_command=command, ready_timeout_s=1), workspace)
    assert _processes_with(marker) == []


def test_a_server_command_is_refused_when_something_already_answers_there(workspace):
    marker = f"hyperloom-second-server-{os.getpid()}"
    with stub_server(always("ok")) as stub, pytest.raises(HyperloomError, match="already answers"):
        run_serve_sweep(ServeSweepRequest(base_url=stub.base_url, server_command=f"sleep 30 {marker}"), workspace)
    assert _processes_with(marker) == []


def test_a_server_program_that_does_not_exist_is_named(workspace):
    with pytest.raises(HyperloomError, match="'no-such-llama-server' was not found"):
        run_serve_sweep(ServeSweepRequest(base_url="http://127.0.0.1:9/v1", server_command="no-such-llama-server -m x.gguf"), workspace)


def test_the_watchdog_ends_the_server_group_when_its_parent_dies(tmp_path):
    """A parent killed with SIGKILL cannot clean up: the watchdog sees it go and ends the group, grandchildren included."""
    import subprocess

    marker = f"hyperloom-orphan-{os.getpid()}"
    pid_file = tmp_path / "watchdog.pid"
    parent = subprocess.Popen([sys.executable, "-c", (
        "import os, sys, time\n"
        "from hyperloom.tools.serve.server import start\n"
        f"s = start(['sh', '-c', 'sleep 120 & sleep 120 # {marker}'], __import__('pathlib').Path('{tmp_path}'), "
        f"__import__('pathlib').Path('{tmp_path}/log'))\nopen('{pid_file}', 'w').write(str(s.process.pid))\n"
        "time.sleep(120)\n")])
    try:
        def server_processes() -> list[int]:
            return [pid for pid in _processes_with(marker) if pid != parent.pid]  # the parent's own source names the marker

        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and not (pid_file.exists() and len(_live_in_group(int(pid_file.read_text() or 0))) >= 4):
            time.sleep(0.1)
        assert len(server_processes()) >= 1, "the server did not start"
        group = int(pid_file.read_text())
        server_processes_seen = _live_in_group(group)  # the watchdog, sh and its two sleeps
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and _live_in_group(group):
            time.sleep(0.2)
        assert server_processes() == []
        assert _live_in_group(group) == [], "every process of the server's group has ended"
        assert len(server_processes_seen) >= 2
    finally:
        parent.kill()


def test_an_interrupted_sweep_keeps_its_finished_levels_labelled_interrupted(workspace):
    import subprocess

    with stub_server(after(6, "hang")) as stub:
        cli = subprocess.Popen([sys.executable, "-m", "hyperloom.cli.main", "serve", "sweep", "--base-url", stub.base_url, "--input-tokens",
                                "16", "--output-tokens", "4", "--requests-per-level", "4", "--max-concurrency", "8", "--no-plot"],
                               cwd=workspace.root, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=interruptible)
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline and stub.posts < 8:  # level 1 done, level 2 hanging
                time.sleep(0.1)
            saved = list(workspace.root.glob(".hyperloom/serve/*/serve_sweep.json"))
            assert stub.posts >= 8 and len(saved) == 1
            cli.send_signal(signal.SIGINT)
            assert cli.wait(timeout=30) != 0
        finally:
            if cli.poll() is None:
                cli.kill()
                cli.wait(timeout=10)
    partial = json.loads(saved[0].read_text())
    assert partial["stop_reason"] == "interrupted" and partial["complete"] is False
    assert [level["concurrency"] for level in partial["levels"]] == [1] and "partial result" in partial["stop_detail"]


def test_without_a_tokenizer_calibration_starts_small_and_grows_inside_a_tight_context(workspace):
    # 4 tokens a word and 64 a request: the old first guess (40 words for 40 tokens) would be 161 tokens, refused
    with stub_server(always("ok"), tokens_per_word=4, tokenizer=False, context_tokens=64) as stub:
        result = sweep(workspace, stub, max_concurrency=2, input_tokens=40)
    assert result.complete and all(level.requests_failed == 0 for level in result.levels)
    assert all(abs(level.input_tokens_mean - 40) <= 2 for level in result.levels) and "grown from 5 words" in result.workload.calibration
    assert "/tokenize" in stub.paths and not any(b.get("prompt", "").count(" ") > 15 for b in stub.bodies)


def test_a_context_refusal_on_the_first_request_is_reported_as_the_context_bound(workspace):
    with stub_server(always("ok"), tokens_per_word=4, tokenizer=False, context_tokens=3) as stub, \
            pytest.raises(HyperloomError, match="refused a calibration prompt of 2 words as longer than its context .*exceeds the "
                                                "available context size") as caught:
        sweep(workspace, stub, input_tokens=16)
    assert "serves this model" not in str(caught.value) and "larger context" in str(caught.value)


def _trace(tmp: Path, sessions: int = 2, turns: int = 3, words: int = 10) -> str:
    lines = []
    for s in range(sessions):
        lines.append(json.dumps({"id": f"s{s}", "turns": [
            {"messages": ([{"role": "system", "content": "shared prefix " * 20}] if t == 0 else [])
                         + [{"role": "user", "content": f"s{s} t{t} " + "x " * words}],
             "output_tokens": 4, **({"reply": f"reply {s} {t}"} if t == 0 else {})} for t in range(turns)]}))
    (tmp / "trace.jsonl").write_text("\n".join(lines) + "\n")
    return "trace.jsonl"


def test_a_recorded_trace_is_replayed_turn_by_turn_each_prompt_extending_the_last(workspace):
    name = _trace(workspace.root)
    with stub_server(always("ok")) as stub:
        result = sweep(workspace, stub, workload="agent_trace", prompts_file=name, max_concurrency=2, requests_per_level=6)
    assert result.complete and result.workload.kind == "agent_trace" and result.workload.trace_sessions == 2
    assert result.workload.trace_source == "recorded: trace.jsonl" and len(result.workload.prompts_sha256) == 64
    # the trace's requests, not the probes of the API's wrapping
    prompts = [b["prompt"] for b in stub.bodies if "user: s" in b.get("prompt", "")]
    assert len(prompts) >= 12 and all(p.startswith("system: shared prefix") for p in prompts), "every session shares the long prefix"
    firsts = [p for p in prompts if p.count("user:") == 1]
    for p in prompts:
        if p.count("user:") > 1:
            assert any(p.startswith(f) for f in firsts), "a later turn extends its session's first turn"
    assert "assistant: reply 0 0" in next(p for p in prompts if "s0 t1" in p), "the recorded reply is part of the next turn's context"
    assert [t.turn for t in result.levels[0].turns] == [1, 2, 3] and result.levels[0].prefix_cache_hit_fraction is None


def test_a_request_past_the_servers_context_mid_sweep_stops_it_as_the_context_limit(workspace):
    name = _trace(workspace.root, turns=3, words=30)
    # the first turn fits, the third does not; the stub says nothing of its context
    with stub_server(always("ok"), context_tokens=100) as stub:
        result = sweep(workspace, stub, workload="agent_trace", prompts_file=name, max_concurrency=2, requests_per_level=6)
    assert result.stop_reason == "context_limit" and "-c" in result.stop_detail and "--max-model-len" in result.stop_detail
    assert "exceeds the available context size" in result.levels[-1].failures[0]


def test_a_bad_trace_or_spec_is_refused_before_any_request(workspace):
    (workspace.root / "t.jsonl").write_text('{"id": "s", "turns": [{"messages": [], "output_tokens": 4}]}\n')
    (workspace.root / "spec.json").write_text('{"turns": {"median": 0}}')
    with pytest.raises(HyperloomError, match="t.jsonl line 1 is not an agent-trace session: turns.0.messages"):
        run_serve_sweep(ServeSweepRequest(base_url="http://127.0.0.1:9/v1", workload="agent_trace", prompts_file="t.jsonl"), workspace)
    with pytest.raises(HyperloomError, match="spec.json is not an agent-trace spec: turns.median"):
        run_serve_sweep(ServeSweepRequest(base_url="http://127.0.0.1:9/v1", workload="agent_trace", prompts_file="spec.json"), workspace)
