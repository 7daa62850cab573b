"""`hyperloom agent`: a scripted OpenAI-compatible server on loopback drives the real hyperloom-mcp over stdio."""

from __future__ import annotations

import json
import socket
from pathlib import Path

import numpy as np
import pytest

from helpers import save
from hyperloom.agent.endpoint import parse_completion
from hyperloom.cli.main import EXIT_FAILED_VERDICT, EXIT_INPUT_ERROR, EXIT_OK, main
from hyperloom.core.errors import HyperloomError
from openai_stub import Stall, answer, scripted_endpoint, tool_call

GATE, FREEZE = "mcp__hyperloom__correctness_gate", "mcp__hyperloom__gate_freeze"


def _agent(stub, workspace, *options: str, prompt: str = "Is good.npy correct against ref.npy?") -> tuple[int, Path]:
    transcript = workspace.root / "t.json"
    code = main(["agent", prompt, "--base-url", stub.base_url, "--transcript", str(transcript), *options])
    return code, transcript


def _tool_messages(request: dict) -> list[str]:
    return [m["content"] for m in request["messages"] if m["role"] == "tool"]


def test_the_agent_freezes_then_gates_through_the_real_server_and_saves_every_call(workspace, capsys, monkeypatch):
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")  # a proxy would swallow the request: none may be used
    ref = np.linspace(-1, 1, 256, dtype=np.float32)
    save(workspace, "ref.npy", ref)
    save(workspace, "good.npy", ref + np.float32(1e-6))
    script = [
        tool_call(FREEZE, {"out": "refs", "references": ["ref.npy"], "atol": 1e-5, "rtol": 0}),
        tool_call(GATE, {"candidates": ["good.npy"], "reference_set": "refs"}, call_id="call_2"),
        answer("good.npy passes the frozen gate (MEASURED)."),
    ]
    with scripted_endpoint(script) as stub:
        code, transcript = _agent(stub, workspace, "--model", "qwen3-coder")
    out = capsys.readouterr()
    assert code == EXIT_OK and out.out.strip() == "good.npy passes the frozen gate (MEASURED)."
    assert f"→ {FREEZE}" in out.err and "transcript:" in out.err

    first = stub.requests[0]
    assert first["model"] == "qwen3-coder" and first["messages"][0]["role"] == "system" and first["stream"] is True
    system = first["messages"][0]["content"]
    assert "## Iron rules" in system and "exit when the baseline passes the gate" in system and "# reference.md" not in system
    assert 0 < first["max_tokens"] <= 2048
    offered = [t["function"]["name"] for t in first["tools"]]
    assert offered == ["mcp__hyperloom__detect", "list_tools", "use_tools", "read_skill"], "DETECT's tools and the agent's, nothing else"
    second = {t["function"]["name"]: t["function"] for t in stub.requests[1]["tools"]}
    assert {GATE, FREEZE, "mcp__hyperloom__bench"} <= set(second), "calling gate_freeze moved the offer to FIND-GAPS"
    assert second[GATE]["parameters"]["required"] == ["candidates"]
    gate_result = json.loads(_tool_messages(stub.requests[2])[1])
    assert gate_result["passed"] is True and gate_result["evidence"]["tag"] == "MEASURED"
    assert (workspace.root / "refs" / "manifest.json").is_file()

    saved = json.loads(transcript.read_text())
    assert saved["status"] == "answered" and saved["turns"] == 3 and saved["model"] == "qwen3-coder"
    assert [(c["name"], c["is_error"], c["side"]) for c in saved["tool_calls"]] == [(FREEZE, False, "mcp"), (GATE, False, "mcp")]
    assert saved["context"]["tag"] == "ASSUMED" and saved["context"]["tokens"] == 4096, "the stub says nothing of its context"
    assert saved["requests"][0]["tools_offered"] == offered and saved["requests"][0]["prompt_tokens_server"] is not None
    assert json.loads(saved["tool_calls"][1]["result"])["passed"] is True
    assert saved["messages"][-1] == {"role": "assistant", "content": "good.npy passes the frozen gate (MEASURED)."}


def test_unknown_tools_and_bad_arguments_go_back_to_the_model_and_the_loop_goes_on(workspace, capsys):
    broken_turn = {
        "role": "assistant", "content": "",
        "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "mcp__hyperloom__no_such_tool", "arguments": "{}"}},
            {"id": "b", "type": "function", "function": {"name": GATE, "arguments": '{"candidates": ['}},
            {"id": "c", "type": "function",
             "function": {"name": GATE, "arguments": '{"candidates": [[1.0]], "references": [[1.0]], "atol": "tiny", "rtol": 0}'}},
            {"id": "d", "type": "function", "function": {"name": GATE, "arguments": "[1, 2]"}},
        ],
    }
    script = [broken_turn, tool_call(GATE, {"candidates": [[1.0, 2.0]], "references": [[1.0, 2.0]], "atol": 0, "rtol": 0}), answer("done")]
    with scripted_endpoint(script) as stub:
        code, transcript = _agent(stub, workspace, "--model", "m")
    assert code == EXIT_OK and capsys.readouterr().out.strip() == "done"
    unknown, bad_json, bad_value, not_object = _tool_messages(stub.requests[1])
    assert unknown.startswith("ERROR: unknown tool 'mcp__hyperloom__no_such_tool'") and GATE in unknown
    assert bad_json.startswith("ERROR:") and "not valid JSON" in bad_json
    # one prefix (the loop's), not the SDK's "Error executing tool" too
    assert bad_value.startswith("ERROR: invalid argument: atol"), bad_value
    assert not_object.startswith("ERROR:") and "JSON object" in not_object
    assert json.loads(_tool_messages(stub.requests[2])[-1])["passed"] is True
    saved = json.loads(transcript.read_text())
    assert [c["is_error"] for c in saved["tool_calls"]] == [True, True, True, True, False]


def test_a_model_that_never_answers_stops_at_the_turn_limit(workspace, capsys):
    forever = tool_call(GATE, {"candidates": [[0.0]], "references": [[0.0]], "atol": 0, "rtol": 0})
    with scripted_endpoint([lambda body: forever]) as stub:
        code, transcript = _agent(stub, workspace, "--model", "m", "--max-turns", "3")
    assert code == EXIT_FAILED_VERDICT and "stopped after 3 turns" in capsys.readouterr().err
    assert len(stub.requests) == 3
    saved = json.loads(transcript.read_text())
    assert saved["status"] == "turn_limit" and len(saved["tool_calls"]) == 3


def test_without_a_model_the_first_model_the_endpoint_lists_is_used(workspace):
    with scripted_endpoint([answer("hello")]) as stub:
        code, transcript = _agent(stub, workspace)
    assert code == EXIT_OK and stub.requests[0]["model"] == "stub-model-7b"
    assert json.loads(transcript.read_text())["model"] == "stub-model-7b"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_endpoint_that_is_down_is_one_clear_line_and_exit_2(workspace, capsys):
    url = f"http://127.0.0.1:{_free_port()}/api/v1"
    assert main(["agent", "hello", "--base-url", url, "--model", "m", "--transcript", str(workspace.root / "t.json")]) == EXIT_INPUT_ERROR
    err = capsys.readouterr().err
    assert "could not reach the model endpoint" in err and "Next step" in err and "Traceback" not in err
    saved = json.loads((workspace.root / "t.json").read_text())
    assert saved["status"] == "error" and "could not reach" in saved["error"]


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ((200, b"<html>It works!</html>"), "not JSON"),
        ((200, b'{"object": "list", "data": []}'), "not an OpenAI chat completion"),
        ((200, b'{"choices": []}'), "not an OpenAI chat completion"),
        ((500, b'{"error": {"message": "model failed to load"}}'), "HTTP 500: {\"error\": {\"message\": \"model failed to load\"}}"),
        ((404, b'{"error": "model not found"}'), "HTTP 404"),
    ],
)
def test_an_endpoint_that_answers_garbage_is_a_clear_message_and_a_clean_exit(workspace, capsys, reply, message):
    with scripted_endpoint([reply]) as stub:
        code, transcript = _agent(stub, workspace, "--model", "m")
    err = capsys.readouterr().err
    assert code == EXIT_INPUT_ERROR and message in err and "Traceback" not in err
    assert json.loads(transcript.read_text())["status"] == "error"


def test_tool_calls_are_normalized_whatever_shape_the_server_sends():
    payload = {"choices": [{"message": {"role": "assistant", "content": None, "tool_calls": [
        {"type": "function", "function": {"name": GATE, "arguments": {"candidates": ["a.npy"]}}},
        {"id": "x", "type": "function"},
    ]}}]}
    message = parse_completion(payload, "stub")
    assert message == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_0", "type": "function", "function": {"name": GATE, "arguments": '{"candidates": ["a.npy"]}'}}
    ]}
    with pytest.raises(HyperloomError, match="not an OpenAI chat completion"):
        parse_completion({"choices": [{"message": "hi"}]}, "stub")


def test_the_agent_side_tools_read_the_skill_list_the_tools_and_change_the_offer(workspace, capsys):
    script = [
        tool_call("read_skill", {"page": "declaring-a-tolerance"}),
        tool_call("read_skill", {"page": "no-such-page"}, call_id="call_2"),
        tool_call("list_tools", {}, call_id="call_3"),
        tool_call("use_tools", {"phase": "TUNE", "names": ["mcp__hyperloom__serve_sweep"]}, call_id="call_4"),
        answer("done"),
    ]
    with scripted_endpoint(script) as stub:
        code, transcript = _agent(stub, workspace, "--model", "m")
    assert code == EXIT_OK
    page, missing = _tool_messages(stub.requests[1])[0], _tool_messages(stub.requests[2])[1]
    assert page.startswith("## Declaring a tolerance") and "gate_freeze" in page
    assert missing.startswith("ERROR: no page 'no-such-page'") and "iron-rules" in missing and "reference:evidence" in missing
    listing = _tool_messages(stub.requests[3])[2]
    assert "DETECT (offered now):" in listing and "mcp__hyperloom__tune:" in listing and "other (use_tools" in listing
    assert "mcp__hyperloom__serve_sweep" in listing.split("other (use_tools")[1]
    offered = [t["function"]["name"] for t in stub.requests[4]["tools"]]
    assert offered[0] == "mcp__hyperloom__serve_sweep", "a tool asked for by name comes first: a short context keeps a prefix"
    assert set(offered[1:-3]) <= {"mcp__hyperloom__tune"}
    assert offered[-3:] == ["list_tools", "use_tools", "read_skill"] and "web_fetch" not in offered, ("web tools only with "
                                                                                                      "HYPERLOOM_ALLOW_WEB=1")
    saved_request = json.loads(transcript.read_text())["requests"][4]
    # serve_sweep and the TUNE phase's one family tool
    assert saved_request["choice"].endswith(f"{len(offered) - 3} of 2 offered Hyperloom tools")
    saved = json.loads(transcript.read_text())
    assert [c["side"] for c in saved["tool_calls"]] == ["agent"] * 4 and saved["tool_calls"][1]["is_error"] is True


def test_a_small_context_gets_the_minimal_prompt_and_a_max_tokens_that_fits(workspace, capsys):
    with scripted_endpoint([answer("ok")]) as stub:
        code, transcript = _agent(stub, workspace, "--model", "m", "--context", "1200")
    err = capsys.readouterr().err
    assert code == EXIT_OK
    first = stub.requests[0]
    request = json.loads(transcript.read_text())["requests"][0]
    counted = request["prompt_tokens_counted"]
    assert "## Iron rules" not in first["messages"][0]["content"] and "Rules: 1. MEASURED or ASSUMED" in first["messages"][0]["content"]
    assert request["choice"].startswith("minimal prompt") and [t["function"]["name"]
                                                               for t in first["tools"]][-3:] == ["list_tools", "use_tools", "read_skill"]
    assert first["max_tokens"] == 1200 - counted and first["max_tokens"] >= 256
    assert f"{counted:,} prompt tokens" in err and "1,200-token context (--context" in err


def test_a_context_too_small_for_the_smallest_request_is_refused_with_the_numbers(workspace, capsys):
    props = {"default_generation_settings": {"n_ctx": 512}, "total_slots": 1}
    with scripted_endpoint([answer("never sent")], props=props) as stub:
        code, transcript = _agent(stub, workspace, "--model", "m")
    err = capsys.readouterr().err
    assert code == EXIT_INPUT_ERROR and stub.requests == [], "nothing is sent that cannot fit"
    assert "cannot fit the server's context" in err and "> 512 tokens of context (llama.cpp" in err and "/props" in err
    assert "a reply needs at least 256 more" in err and "-c 8192" in err and "Traceback" not in err
    saved = json.loads(transcript.read_text())
    assert saved["status"] == "error" and saved["context"] == {"tokens": 512, "source": saved["context"]["source"], "tag": "MEASURED",
                                                               "server": "llama.cpp"}


def test_the_servers_own_context_refusal_is_counted_and_the_request_fitted_again(workspace, capsys):
    refusal = json.dumps({"error": {"code": 400, "message": "request (2600 tokens) exceeds the available context size (2048 tokens)",
                                    "type": "exceed_context_size_error"}}).encode()
    with scripted_endpoint([(400, refusal), answer("fits now")]) as stub:
        code, transcript = _agent(stub, workspace, "--model", "m", "--context", "8192")
    err = capsys.readouterr().err
    assert code == EXIT_OK and "the server counted 2,600 tokens" in err
    first, second = stub.requests
    assert (len(json.dumps(second["messages"])) + len(json.dumps(second["tools"]))
            < len(json.dumps(first["messages"])) + len(json.dumps(first["tools"])))
    assert second["max_tokens"] <= 2048 - 256
    saved = json.loads(transcript.read_text())
    assert saved["requests"][0]["prompt_tokens_server"] == 2600 and saved["requests"][1]["context_tokens"] == 2048


def test_a_server_that_stalls_its_first_token_is_reported_as_slow_not_down(workspace, capsys):
    with scripted_endpoint([Stall(5.0, answer("too late"))]) as stub:
        code, transcript = _agent(stub, workspace, "--model", "m", "--timeout", "1")
    err = capsys.readouterr().err
    assert code == EXIT_INPUT_ERROR and len(stub.requests) == 1
    assert "is up (it accepted the request) but is slow" in err and "no first token within 1 s" in err and "raise --timeout" in err
    assert "could not reach" not in err and "Traceback" not in err
    assert "is slow" in json.loads(transcript.read_text())["error"]


def test_a_slow_first_token_within_the_timeout_is_waited_for_with_progress_shown(workspace, capsys):
    script = [Stall(2.5, answer("slow but here")), Stall(2.5, answer("again"), progress_s=0.4)]
    with scripted_endpoint(script) as stub:
        code, _ = _agent(stub, workspace, "--model", "m", "--timeout", "4")
        assert code == EXIT_OK and capsys.readouterr().out.strip() == "slow but here"
        # llama.cpp's progress events keep a stalled-looking request alive past --timeout: each one resets the wait
        code, _ = _agent(stub, workspace, "--model", "m", "--timeout", "1.5", prompt="again")
    out = capsys.readouterr()
    assert code == EXIT_OK and out.out.strip() == "again"


def test_the_wait_for_a_first_token_is_reported_while_it_lasts(workspace, capsys):
    with scripted_endpoint([Stall(2.5, answer("here"))]) as stub:
        code, _ = _agent(stub, workspace, "--model", "m", "--timeout", "4")
    err = capsys.readouterr().err
    assert code == EXIT_OK and "… waiting for the first token: 1 s" in err and "… waiting for the first token: 2 s" in err
