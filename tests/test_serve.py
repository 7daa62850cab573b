"""serve_sweep against a real OpenAI-compatible server: llama.cpp's llama-server serving a tiny Llama GGUF with random
weights that the tests write themselves (scripts/serve/write_gguf.py). .ci/run builds the server
(scripts/serve/llama_server.sh) and passes its path in HYPERLOOM_TEST_LLAMA_SERVER."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import jsonschema
import pytest

import llama_build

from helpers import interruptible
from hyperloom.core.errors import HyperloomError
from hyperloom.tools.serve.api import run_serve_sweep
from hyperloom.tools.serve.knee import find_knee
from hyperloom.tools.serve.models import ServeSweepRequest

REPO = Path(__file__).parent.parent
LLAMA_SERVER = llama_build.PATH
pytestmark = llama_build.NEEDED


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_command(model: Path, port: int, slots: int, context: int = 2048) -> list[str]:
    # one thread: the machine has two cores and the client needs one
    return [LLAMA_SERVER, "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-np", str(slots), "-c", str(context),
            "-t", "1", "--metrics", "--no-ui"]


def processes_serving(model: Path) -> list[int]:
    """Live processes whose command line names the model file (zombies waiting for a reaper have ended)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if str(model).encode() in (entry / "cmdline").read_bytes() and (entry / "stat").read_text().rsplit(")",
                                                                                                                   1)[1].split()[0] != "Z":
                    found.append(int(entry.name))
            except OSError:
                continue
    return found


def answers(port: int) -> bool:
    with socket.socket() as probe:
        probe.settimeout(1)
        return probe.connect_ex(("127.0.0.1", port)) == 0


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "tiny-llama.gguf"
    subprocess.run([sys.executable, str(REPO / "scripts/serve/write_gguf.py"), "--out", str(path)], check=True, timeout=120)
    return path


@pytest.fixture(scope="module")
def running_server(tiny_model, tmp_path_factory):
    """A llama-server started by the test, two slots, for the sweeps of a running endpoint."""
    port = free_port()
    log = (tmp_path_factory.mktemp("server") / "server.log").open("wb")
    process = subprocess.Popen(server_command(tiny_model, port, slots=2), stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not answers(port):
            assert process.poll() is None, f"llama-server exited with {process.returncode}; see {log.name}"
            time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        log.close()


def test_the_sweep_finds_the_slot_limit_reports_the_knee_and_is_cached_on_the_second_call(workspace, tiny_model):
    port = free_port()
    request = ServeSweepRequest(base_url=f"http://127.0.0.1:{port}/v1", server_command=server_command(tiny_model, port, slots=4),
                                max_concurrency=16, input_tokens=32, output_tokens=16, requests_per_level=8, ready_timeout_s=120)
    result = run_serve_sweep(request, workspace)

    assert result.server.kind == "llama.cpp" and result.server.started_by_tool and result.server.version
    assert result.capacity.slots == 4 and result.capacity.max_concurrency == 4 and result.capacity.bound == "slots"
    assert [level.concurrency for level in result.levels] == [1, 2, 4], "the sweep stops at the server's 4 slots, not at 16"
    assert result.stop_reason == "server_capacity" and "4 slots" in result.stop_detail and result.complete
    assert all(level.requests_ok == 8 and level.requests_failed == 0 for level in result.levels)
    assert all(level.output_tokens_min == 16 for level in result.levels), "ignore_eos forces every request to 16 tokens"
    assert all(abs(level.input_tokens_mean - 32) <= 8 for level in result.levels), "calibrated prompts are about 32 tokens"
    assert all(level.ttft_s.p50 > 0 and level.itl_s.count > 0 and level.e2e_s.p99 >= level.e2e_s.p50 for level in result.levels)
    points = [(level.concurrency, level.output_tokens_per_s) for level in result.levels]
    knee = find_knee(points, 0.9)
    assert (result.knee_concurrency, result.best_concurrency) == (knee.knee_concurrency, knee.best_concurrency)
    assert result.knee_output_tokens_per_s >= 0.9 * result.best_output_tokens_per_s
    assert result.saturation in ("saturated", "not_saturated") and "2 -> 4 streams" in result.saturation_reason
    assert result.evidence.tag.value == "MEASURED" and result.evidence.target == result.model and result.model.endswith("tiny-llama.gguf")
    assert result.evidence.toolchain["server"].startswith("llama.cpp ")

    saved = json.loads((workspace.root / result.files[0]).read_text())
    jsonschema.validate(saved, json.loads((REPO / "validators/serve_sweep.schema.json").read_text()))
    assert {Path(f).name for f in result.files} == {"serve_sweep.json", "serve_sweep.png", "serve_sweep.svg", "server.log"}
    assert (workspace.root / result.files[1]).stat().st_size > 10_000
    assert processes_serving(tiny_model) == [] and not answers(port), "the started server is gone"

    started = time.monotonic()
    again = run_serve_sweep(request, workspace)
    assert again.cached and time.monotonic() - started < 5 and not answers(port), "the cache answers without starting the server"
    assert again.evidence.at == result.evidence.at and again.levels == result.levels and "CACHED" in again.summary
    refreshed = run_serve_sweep(request.model_copy(update={"refresh": True, "max_concurrency": 2}), workspace)
    assert not refreshed.cached and refreshed.cache_key != result.cache_key and refreshed.stop_reason == "max_concurrency"


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGINT])
def test_killing_the_tool_mid_sweep_leaves_no_server_process(workspace, tiny_model, how, tmp_path):
    port = free_port()
    errors = tmp_path / "cli.stderr"
    handle = errors.open("wb")
    cli = subprocess.Popen(
        [sys.executable, "-m", "hyperloom.cli.main", "serve", "sweep", "--base-url", f"http://127.0.0.1:{port}/v1", "--max-concurrency",
         "4", "--input-tokens", "16", "--output-tokens", "64", "--requests-per-level", "100000", "--no-plot", "--",
         *server_command(tiny_model, port, slots=4)],
        cwd=workspace.root, stdout=subprocess.DEVNULL, stderr=handle, start_new_session=True, preexec_fn=interruptible)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not processes_serving(tiny_model)[1:]:  # the watchdog and the server
            time.sleep(0.2)
        while time.monotonic() < deadline and not answers(port):
            time.sleep(0.2)
        assert answers(port), f"the server never started: {errors.read_text()}"
        time.sleep(2)  # mid-level: requests in flight
        assert cli.poll() is None, f"the sweep ended before it could be interrupted: {errors.read_text()}"
        os.kill(cli.pid, how)
        cli.wait(timeout=60)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and (processes_serving(tiny_model) or answers(port)):
            time.sleep(0.2)
        assert processes_serving(tiny_model) == [] and not answers(port)
    finally:
        if cli.poll() is None:
            cli.kill()
            cli.wait(timeout=10)
        handle.close()


def test_a_running_endpoint_is_swept_through_chat_without_starting_anything(workspace, running_server):
    result = run_serve_sweep(ServeSweepRequest(base_url=running_server, api="chat", max_concurrency=8, input_tokens=24, output_tokens=8,
                                               requests_per_level=4, plot=False), workspace)
    assert not result.server.started_by_tool and result.server.command is None
    assert [level.concurrency for level in result.levels] == [1, 2] and result.stop_reason == "server_capacity"
    assert all(level.output_tokens_min == 8 and level.requests_failed == 0 for level in result.levels)
    assert result.evidence.device == f"unknown ({running_server})" and result.files == [result.files[0]]


def test_lengths_that_do_not_fit_a_slot_are_refused_before_any_level(workspace, running_server):
    with pytest.raises(HyperloomError, match="each request needs 3016 tokens .* a slot of this llama.cpp server holds 1024"):
        run_serve_sweep(ServeSweepRequest(base_url=running_server, input_tokens=3000, output_tokens=16), workspace)


def test_a_model_file_the_server_cannot_load_is_an_error_with_the_servers_log(workspace, tmp_path):
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"GGUF" + b"\x00" * 64)
    port = free_port()
    with pytest.raises(HyperloomError, match="exited with status .* before serving"):
        run_serve_sweep(ServeSweepRequest(base_url=f"http://127.0.0.1:{port}/v1", server_command=server_command(broken, port, slots=1)),
                        workspace)
    assert processes_serving(broken) == []


@pytest.fixture
def anyio_backend():
    return "asyncio"


@pytest.mark.anyio
async def test_serve_sweep_answers_over_stdio_mcp_with_progress_a_valid_result_and_a_cache_hit(running_server, tmp_path, private_cache):
    from mcp import ClientSession, StdioServerParameters, stdio_client

    server = Path(sys.executable).parent / "hyperloom-mcp"
    params = StdioServerParameters(command=str(server), cwd=str(tmp_path), env={**os.environ, "HYPERLOOM_CACHE_DIR": str(private_cache)})
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        tools = {t.name: t for t in (await session.list_tools()).tools}
        hints = tools["serve_sweep"].annotations
        assert hints.open_world_hint and not hints.read_only_hint and tools["serve_sweep"].input_schema["required"] == ["base_url"]
        updates: list[tuple[float, float | None]] = []

        async def on_progress(progress, total, message):
            updates.append((progress, total))

        arguments = {"base_url": running_server, "max_concurrency": 2, "input_tokens": 16, "output_tokens": 8, "requests_per_level": 4}
        first = await session.call_tool("serve_sweep", arguments, read_timeout_seconds=120, progress_callback=on_progress)
        assert not first.is_error, first.content
        jsonschema.validate(first.structured_content, tools["serve_sweep"].output_schema)
        jsonschema.validate(first.structured_content, json.loads((REPO / "validators/serve_sweep.schema.json").read_text()))
        assert first.structured_content["evidence"]["tag"] == "MEASURED" and first.structured_content["cached"] is False
        assert [level["concurrency"] for level in first.structured_content["levels"]] == [1, 2]
        assert updates and updates[-1][0] == updates[-1][1] == 4 + 1 + 4 + 2  # measured and warm-up requests of both levels
        assert (tmp_path / first.structured_content["files"][1]).suffix == ".png"

        second = await session.call_tool("serve_sweep", arguments, read_timeout_seconds=120)
        assert second.structured_content["cached"] is True and second.structured_content["levels"] == first.structured_content["levels"]

        refused = await session.call_tool("serve_sweep", {"base_url": "ftp://127.0.0.1/v1"})
        assert refused.is_error and "http:// or https://" in refused.content[0].text
        down = await session.call_tool("serve_sweep", {"base_url": "http://127.0.0.1:9/v1"})
        assert down.is_error and "could not reach the /models page" in down.content[0].text and "Next step" in down.content[0].text


def test_the_local_model_agent_calls_serve_sweep_through_the_real_mcp_server(workspace, running_server, capsys):
    from hyperloom.cli.main import EXIT_OK, main
    from openai_stub import answer, scripted_endpoint, tool_call

    sweep = {"base_url": running_server, "max_concurrency": 8, "input_tokens": 16, "output_tokens": 8, "requests_per_level": 4,
             "plot": False}
    script = [tool_call("mcp__hyperloom__serve_sweep", sweep),
              answer("Serve at 2 streams: the server's 2 slots bound the sweep (MEASURED).")]
    transcript = workspace.root / "t.json"
    with scripted_endpoint(script) as stub:
        code = main(["agent", "Pick a serving concurrency for the model at " + running_server, "--base-url", stub.base_url,
                     "--model", "local", "--transcript", str(transcript)])
    assert code == EXIT_OK, capsys.readouterr().err
    # serve_sweep belongs to no phase of the loop: not offered at first (a small context has no room for every tool),
    # callable all the same, and offered from then on
    assert "mcp__hyperloom__serve_sweep" not in {t["function"]["name"] for t in stub.requests[0]["tools"]}
    assert stub.requests[1]["tools"][0]["function"]["name"] == "mcp__hyperloom__serve_sweep"
    assert next(m["content"] for m in stub.requests[1]["messages"] if m["role"] == "tool").startswith('{"')
    saved = json.loads(transcript.read_text())
    assert [(c["name"], c["is_error"]) for c in saved["tool_calls"]] == [("mcp__hyperloom__serve_sweep", False)]
    result = json.loads(saved["tool_calls"][0]["result"])  # the whole result: the model may have read it trimmed to fit its context
    assert result["stop_reason"] == "server_capacity" and result["capacity"]["slots"] == 2 and result["evidence"]["tag"] == "MEASURED"


@pytest.fixture(scope="module")
def tight_server(tiny_model, tmp_path_factory):
    """Two slots of 256 tokens (-np 2 -c 512): less than one word per token asks of this character-level tokenizer."""
    port = free_port()
    log = (tmp_path_factory.mktemp("tight") / "server.log").open("wb")
    process = subprocess.Popen(server_command(tiny_model, port, slots=2, context=512), stdout=log, stderr=subprocess.STDOUT,
                               start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not answers(port):
            assert process.poll() is None, f"llama-server exited with {process.returncode}; see {log.name}"
            time.sleep(0.2)
        yield port
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        log.close()


def _server_counts(port: int) -> dict[str, float]:
    import urllib.request

    text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10).read().decode()
    return {line.split()[0]: float(line.split()[1]) for line in text.splitlines() if line.startswith("llamacpp:")}


def _tokens(port: int, text: str) -> int:
    import urllib.request

    request = urllib.request.Request(f"http://127.0.0.1:{port}/tokenize", json.dumps({"content": text, "add_special": True}).encode())
    return len(json.loads(urllib.request.urlopen(request, timeout=10).read())["tokens"])


def test_a_slot_smaller_than_the_first_guess_still_sweeps_at_the_asked_length(workspace, tight_server):
    from hyperloom.tools.serve.workload import synthetic_prompt

    asked = 160
    assert _tokens(tight_server, synthetic_prompt(asked, 0, -1)) > 256, "one word per token would overflow a slot: the H200 failure"
    result = run_serve_sweep(ServeSweepRequest(base_url=f"http://127.0.0.1:{tight_server}/v1", max_concurrency=2, input_tokens=asked,
                                               output_tokens=16, requests_per_level=4, plot=False), workspace)
    assert result.complete and [level.concurrency for level in result.levels] == [1, 2]
    assert result.capacity.context_per_slot_tokens == 256 and "/tokenize" in result.workload.calibration
    assert all(level.requests_failed == 0 and abs(level.input_tokens_mean - asked) <= 0.05 * asked for level in result.levels), \
        [level.input_tokens_mean for level in result.levels]


def test_an_impossible_length_is_refused_with_the_numbers_before_any_load(workspace, tight_server):
    before = _server_counts(tight_server)
    with pytest.raises(HyperloomError, match=r"needs 316 tokens \(input 300 \+ output 16\) but a slot of this llama.cpp server holds 256 "
                                             r"\(-c 512 shared by -np 2 slots\).*-c 1024 -np 2"):
        run_serve_sweep(ServeSweepRequest(base_url=f"http://127.0.0.1:{tight_server}/v1", input_tokens=300, output_tokens=16), workspace)
    after = _server_counts(tight_server)
    assert after["llamacpp:prompt_tokens_total"] == before["llamacpp:prompt_tokens_total"], "no request reached the model"
    assert after["llamacpp:n_decode_total"] == before["llamacpp:n_decode_total"]


def test_an_agent_trace_sweep_reports_ttft_per_turn_and_the_prefix_reuse_the_server_saw(workspace, running_server):
    spec = {"shared_prefix_tokens": 300, "turns": {"median": 4}, "task_tokens": {"median": 40},
            "tool_result_tokens": {"median": 60, "sigma": 0.3}, "file_read_probability": 0.5,
            "file_read_tokens": {"median": 100, "low": 16}, "files": 2, "output_tokens": {"median": 8, "low": 1}}
    (workspace.root / "agent.json").write_text(json.dumps(spec))
    result = run_serve_sweep(ServeSweepRequest(base_url=running_server, workload="agent_trace", prompts_file="agent.json",
                                               max_concurrency=2, requests_per_level=8, plot=True), workspace)
    assert result.complete and result.workload.kind == "agent_trace" and result.workload.trace_source == "generated: the spec agent.json"
    assert result.workload.longest_request_tokens <= 1024 and result.workload.trace_spec["max_context_tokens"] == 921  # 90 % of the slot
    for level in result.levels:
        assert level.requests_ok == 8 and level.requests_failed == 0
        turns = {t.turn: t for t in level.turns}
        assert len(turns) >= 3 and all(t.ttft_s.count == t.requests > 0 for t in turns.values())
        ordered = [turns[n].input_tokens_mean for n in sorted(turns)]
        assert ordered == sorted(ordered), f"the context grows turn by turn: {ordered}"
        later = [t for n, t in turns.items() if n > 1]
        assert all(t.cached_input_tokens_mean >= 300 for t in later), "a later turn reuses at least the shared prefix"
        assert 0.3 < level.prefix_cache_hit_fraction < 1 and "responses" in level.prefix_cache_source
    assert {Path(f).suffix for f in result.files} == {".json", ".png", ".svg"}
