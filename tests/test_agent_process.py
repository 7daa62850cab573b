"""`hyperloom agent` as its own process: Ctrl-C mid-request, the sockets it opens, and the opt-in web lookups."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from hyperloom.cli.main import EXIT_OK, main
from openai_stub import Stall, answer, scripted_endpoint, tool_call

# Runs the CLI with an audit hook that records every socket.connect of this process into $AUDIT_LOG.
AUDITED = """
import json, os, sys
connects = []
def hook(event, args):
    if event == "socket.connect":
        connects.append(repr(args[1]))
sys.addaudithook(hook)
from hyperloom.cli.main import main
try:
    code = main(sys.argv[1:])
finally:
    with open(os.environ["AUDIT_LOG"], "w") as out:
        json.dump(connects, out)
sys.exit(code)
"""


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("HYPERLOOM_ALLOW_WEB", "HYPERLOOM_SEARCH_URL")}
    return {**env, **extra}


def test_ctrl_c_mid_request_ends_the_run_within_2_s_with_an_interrupted_transcript(workspace):
    transcript = workspace.root / "t.json"
    with scripted_endpoint([Stall(120.0, answer("never"))]) as stub:
        process = subprocess.Popen(
            [sys.executable, "-m", "hyperloom.cli.main", "agent", "hello", "--base-url", stub.base_url, "--model", "m", "--transcript",
             str(transcript)],
            cwd=workspace.root, env=_env(HYPERLOOM_WORKSPACE=str(workspace.root)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            text=True,
        )
        try:
            assert stub.in_flight.wait(60), "the request never reached the server"
            time.sleep(0.3)
            sent = time.monotonic()
            process.send_signal(signal.SIGINT)
            out, err = process.communicate(timeout=30)
            ended_s = time.monotonic() - sent
        finally:
            if process.poll() is None:
                process.kill()
                process.wait()
    assert process.returncode == 130 and ended_s < 2.0, (ended_s, err)
    assert "interrupted (Ctrl-C)" in err and "Traceback" not in err and out == ""
    saved = json.loads(transcript.read_text())
    assert saved["status"] == "interrupted" and saved["error"] == "interrupted by SIGINT (Ctrl-C)" and saved["finished_at"]
    assert len(saved["requests"]) == 1 and "prompt_tokens_server" not in saved["requests"][0], "the request in flight was dropped"


@contextmanager
def loopback_pages(pages: dict[str, tuple[str, bytes]]):
    """Serve {path: (content type, body)} on 127.0.0.1."""
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            content_type, body = pages.get(urlsplit(self.path).path, ("text/plain", b"missing"))
            self.send_response(200 if urlsplit(self.path).path in pages else 404)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            server.seen.append(self.path)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.seen = []
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", server.seen
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


PAGE = b"""<!doctype html><html><head><title>s_waitcnt on gfx942</title></head><body>
<nav><a href="/">Home</a> | <a href="/about">About</a> | Sign in</nav>
<article><h1>s_waitcnt on gfx942</h1>
<p>On gfx942 a vector memory load is counted by vmcnt; the kernel must wait with s_waitcnt vmcnt(0) before it reads the loaded register.</p>
<p>The LDS counter is lgkmcnt, and scalar memory loads are counted there too, which is why a wait on lgkmcnt follows s_load_dwordx4.</p>
</article><footer>Copyright 2026 Example Corp. All rights reserved.</footer></body></html>"""


def test_without_allow_web_no_socket_but_the_endpoints_is_opened_and_no_lookup_is_offered(workspace, tmp_path):
    audit = tmp_path / "connects.json"
    with loopback_pages({"/page": ("text/html", PAGE)}) as (site, seen), scripted_endpoint(
        [tool_call("web_fetch", {"url": f"{site}/page"}), answer("done")]
    ) as stub:
        run = subprocess.run(
            [sys.executable, "-c", AUDITED, "agent", "hello", "--base-url", stub.base_url, "--model", "m", "--transcript",
             str(workspace.root / "t.json")],
            cwd=workspace.root, env=_env(AUDIT_LOG=str(audit), HYPERLOOM_WORKSPACE=str(workspace.root),
                                         HYPERLOOM_SEARCH_URL=f"{site}/search?q={{query}}"),
            capture_output=True, text=True, timeout=120,
        )
        port = urlsplit(stub.base_url).port
    assert run.returncode == EXIT_OK, run.stderr
    connects = json.loads(audit.read_text())
    assert connects and set(connects) == {repr(("127.0.0.1", port))}, connects
    assert seen == [], "the page was never fetched"
    assert all(t["function"]["name"] not in ("web_fetch", "web_search") for r in stub.requests for t in r["tools"])
    refused = [m["content"] for m in stub.requests[1]["messages"] if m["role"] == "tool"][0]
    assert refused.startswith("ERROR: unknown tool 'web_fetch'")


def test_with_allow_web_a_loopback_page_is_fetched_extracted_and_cited_in_the_transcript(workspace, monkeypatch, capsys):
    pytest.importorskip("trafilatura", reason="web_fetch reads HTML with trafilatura: pip install 'hyperloom[web]'")
    results = json.dumps({"results": [{"title": "s_waitcnt on gfx942", "url": "http://127.0.0.1/page",
                                       "content": "vmcnt and lgkmcnt"}]}).encode()
    with loopback_pages({"/page": ("text/html; charset=utf-8", PAGE), "/search": ("application/json", results)}) as (site, seen):
        monkeypatch.setenv("HYPERLOOM_ALLOW_WEB", "1")
        monkeypatch.setenv("HYPERLOOM_SEARCH_URL", f"{site}/search?q={{query}}&format=json")
        script = [tool_call("web_search", {"query": "s_waitcnt gfx942"}), tool_call("web_fetch", {"url": f"{site}/page"}, call_id="call_2"),
                  answer(f"Wait with s_waitcnt vmcnt(0) ({site}/page, outside material).")]
        with scripted_endpoint(script) as stub:
            transcript = workspace.root / "t.json"
            code = main(["agent", "How do I wait for a load on gfx942?", "--base-url", stub.base_url, "--model", "m", "--transcript",
                         str(transcript)])
    assert code == EXIT_OK and "web lookups on" in capsys.readouterr().err
    assert {"web_fetch", "web_search"} <= {t["function"]["name"] for t in stub.requests[0]["tools"]}
    assert seen == ["/search?q=s_waitcnt+gfx942&format=json", "/page"]
    found = [m["content"] for m in stub.requests[1]["messages"] if m["role"] == "tool"][0]
    assert found.startswith("OUTSIDE MATERIAL (search results for 's_waitcnt gfx942'") and ("1. s_waitcnt on gfx942 "
                                                                                            "<http://127.0.0.1/page>") in found
    page = [m["content"] for m in stub.requests[2]["messages"] if m["role"] == "tool"][1]
    assert page.startswith(f"OUTSIDE MATERIAL (fetched from {site}/page") and "Not a measurement" in page
    assert "s_waitcnt vmcnt(0)" in page and "lgkmcnt" in page
    assert "Sign in" not in page and "All rights reserved" not in page, "navigation and footer are not the page's text"

    saved = json.loads(transcript.read_text())
    assert [c["side"] for c in saved["tool_calls"]] == ["outside", "outside"]
    search, fetch = saved["outside_material"]
    assert search["kind"] == "web_search" and search["tag"] == "OUTSIDE" and search["results"] == ["http://127.0.0.1/page"]
    assert fetch["kind"] == "web_fetch" and fetch["url"] == f"{site}/page" and fetch["title"] == ("s_waitcnt on "
                                                                                                  "gfx942") and fetch["tag"] == "OUTSIDE"
    assert fetch["bytes"] == len(PAGE) and len(fetch["sha256"]) == 64 and fetch["call_id"] == "call_2"
    assert f"{site}/page" in saved["messages"][-1]["content"], "the answer cites the page"


def test_web_fetch_refuses_pages_over_its_size_limit_and_addresses_that_are_not_http(workspace, monkeypatch):
    import anyio

    from hyperloom.agent.web import WebConfig, new_web_client, web_fetch
    from hyperloom.core.errors import HyperloomError

    async def fetch(url: str, config: WebConfig):
        async with new_web_client(config) as client:
            return await web_fetch(client, url, config)

    with loopback_pages({"/big": ("text/plain", b"x" * 5000)}) as (site, _):
        with pytest.raises(HyperloomError, match="larger than the 1,000-byte limit"):
            anyio.run(fetch, f"{site}/big", WebConfig(allowed=True, max_bytes=1000))
        assert anyio.run(fetch, f"{site}/big", WebConfig(allowed=True)).citation["bytes"] == 5000
    with pytest.raises(HyperloomError, match="http or https"):
        anyio.run(fetch, "file:///etc/passwd", WebConfig(allowed=True))


def test_the_package_declares_the_web_extra():
    import tomlkit

    extras = tomlkit.parse((Path(__file__).parent.parent / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    assert any(d.startswith("trafilatura") for d in extras["web"]) and any(d.startswith("trafilatura") for d in extras["test"])
