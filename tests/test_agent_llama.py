"""`hyperloom agent` against a real llama.cpp llama-server started with its default context (the model's 4,096),
serving the random-weight tiny GGUF the serve tests write (scripts/serve/write_gguf.py). .ci/run builds the server
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

import httpx2
import pytest

import llama_build

from hyperloom.cli.main import EXIT_OK, main

REPO = Path(__file__).parent.parent
LLAMA_SERVER = llama_build.PATH
pytestmark = llama_build.NEEDED


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def default_server(tmp_path_factory):
    """llama-server as a user starts it: a model and a port, nothing else (one thread: the machine has two cores)."""
    folder = tmp_path_factory.mktemp("llama")
    model = folder / "tiny-llama.gguf"
    subprocess.run([sys.executable, str(REPO / "scripts/serve/write_gguf.py"), "--out", str(model)], check=True, timeout=120)
    port = _free_port()
    log = (folder / "server.log").open("wb")
    process = subprocess.Popen([LLAMA_SERVER, "-m", str(model), "--host", "127.0.0.1", "--port", str(port), "-t", "1", "--no-ui"],
                               stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    root = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            assert process.poll() is None, f"llama-server exited with {process.returncode}; see {log.name}"
            try:
                if httpx2.get(f"{root}/health", timeout=2, trust_env=False).status_code == 200:
                    break
            except httpx2.HTTPError:
                pass
            time.sleep(0.2)
        yield root
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait(timeout=10)
        log.close()


def _server_count(root: str, messages: list, tools: list) -> int:
    """The first request's prompt tokens, counted here independently of the agent: the server's template, its tokenizer."""
    prompt = httpx2.post(f"{root}/apply-template", json={"messages": messages, "tools": tools}, timeout=30,
                         trust_env=False).json()["prompt"]
    return len(httpx2.post(f"{root}/tokenize", json={"content": prompt, "add_special": True, "parse_special": True}, timeout=30,
                           trust_env=False).json()["tokens"])


def test_the_agent_runs_on_a_default_llama_server_and_its_first_request_fits_as_the_server_counts_it(default_server, workspace, capsys):
    n_ctx = httpx2.get(f"{default_server}/props", timeout=10, trust_env=False).json()["default_generation_settings"]["n_ctx"]
    assert n_ctx == 4096, "started without -c, the server takes the model's trained context"
    transcript = workspace.root / "t.json"
    code = main(["agent", "Is the stack sound?", "--base-url", f"{default_server}/v1", "--transcript", str(transcript), "--max-turns", "2"])
    err = capsys.readouterr().err
    assert code == EXIT_OK, err  # a random-weight model answers with text and no tool call: the run ends answered
    saved = json.loads(transcript.read_text())
    first = saved["requests"][0]
    assert saved["status"] == "answered" and saved["model"].endswith("tiny-llama.gguf")
    assert saved["context"] == {"tokens": 4096, "source": f"llama.cpp {default_server}/props default_generation_settings.n_ctx",
                                "tag": "MEASURED", "server": "llama.cpp"}
    assert first["counted_by"] == "the server's /apply-template and /tokenize"
    assert first["prompt_tokens_server"] == first["prompt_tokens_counted"], "the agent counts as the server does"
    assert first["prompt_tokens_server"] + first["max_tokens"] <= n_ctx and first["prompt_tokens_server"] <= 4096
    assert f"first request: the server counted {first['prompt_tokens_server']:,} prompt tokens" in err
    assert "the server is reading the prompt" in err, "llama.cpp's prompt progress is shown"
    messages = saved["messages"][:2]
    tools = [{"type": "function", "function": {"name": n}} for n in first["tools_offered"]]
    assert messages[0]["role"] == "system" and ("Iron rules" in messages[0]["content"] or "Rules:" in messages[0]["content"])
    assert _server_count(default_server, messages, tools) == first["prompt_tokens_server"]
