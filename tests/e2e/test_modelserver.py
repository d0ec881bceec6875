"""The scripted model server over real HTTP (urllib): wire shapes, turn picking, failure modes."""

from __future__ import annotations

import http.client
import json
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
if str(REPO) not in sys.path:
    sys.path.insert(0, str(REPO))

from tests.support.modelserver import (  # noqa: E402
    Answer,
    CutStream,
    Dead,
    DenyAllProxy,
    ModelServer,
    NoFinish,
    RateLimit,
    Script,
    ServerError,
    ToolCall,
    Unauthorized,
    find_cwd,
    write_file,
)

WRITE_SCHEMA = {
    "type": "object",
    "properties": {"file_path": {"type": "string"}, "content": {"type": "string"}},
}


# --- a minimal client per API -------------------------------------------------------------


def _post(
    url: str, body: Any, headers: dict[str, str] | None = None
) -> tuple[int, dict[str, str], bytes]:
    data = json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method="POST")
    req.add_header("content-type", "application/json")
    for key, value in (headers or {}).items():
        req.add_header(key, value)
    try:
        with urllib.request.urlopen(req, timeout=5) as resp:
            return resp.status, {k.lower(): v for k, v in resp.headers.items()}, resp.read()
    except urllib.error.HTTPError as err:
        return err.code, {k.lower(): v for k, v in err.headers.items()}, err.read()


def _events(raw: bytes) -> list[tuple[str | None, Any]]:
    """(event name, parsed data) for each SSE frame."""
    out: list[tuple[str | None, Any]] = []
    for frame in raw.decode().split("\n\n"):
        if not frame.strip():
            continue
        event, data = None, None
        for line in frame.splitlines():
            if line.startswith("event: "):
                event = line[7:]
            elif line.startswith("data: "):
                payload = line[6:]
                data = payload if payload == "[DONE]" else json.loads(payload)
        out.append((event, data))
    return out


def anthropic_request(
    srv: ModelServer, tools: list[str], stream: bool = True
) -> tuple[int, dict[str, str], bytes]:
    body = {
        "model": "claude-sonnet-4-5",
        "max_tokens": 100,
        "stream": stream,
        "system": "Primary working directory: /nonexistent",
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [{"name": n, "input_schema": WRITE_SCHEMA} for n in tools],
    }
    headers = {"x-api-key": "sekrit", "anthropic-version": "2023-06-01"}
    return _post(f"{srv.url}/v1/messages?beta=true", body, headers)


def responses_request(srv: ModelServer, tools: list[str]) -> tuple[int, dict[str, str], bytes]:
    body = {
        "model": "gpt-5.5",
        "stream": True,
        "input": [{"role": "user", "content": [{"type": "input_text", "text": "hi"}]}],
        "tools": [{"type": "function", "name": n, "parameters": WRITE_SCHEMA} for n in tools]
        + [{"type": "web_search"}],
    }
    return _post(f"{srv.url}/v1/responses", body, {"authorization": "Bearer sekrit"})


def chat_request(srv: ModelServer, tools: list[str]) -> tuple[int, dict[str, str], bytes]:
    body = {
        "model": "mock-model",
        "stream": True,
        "stream_options": {"include_usage": True},
        "messages": [{"role": "user", "content": "hi"}],
        "tools": [
            {"type": "function", "function": {"name": n, "parameters": WRITE_SCHEMA}} for n in tools
        ],
    }
    return _post(f"{srv.url}/v1/chat/completions", body, {"authorization": "Bearer sekrit"})


def gemini_request(srv: ModelServer, tools: list[str]) -> tuple[int, dict[str, str], bytes]:
    body = {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "tools": [
            {
                "functionDeclarations": [
                    {"name": n, "parametersJsonSchema": WRITE_SCHEMA} for n in tools
                ]
            }
        ],
    }
    url = f"{srv.url}/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
    return _post(url, body, {"x-goog-api-key": "sekrit"})


# --- decoding what came back, per API: (tool name, args) or final text, and the finish -------


def anthropic_decode(raw: bytes) -> tuple[Any, str | None]:
    events = _events(raw)
    names = [e for e, _ in events]
    assert names[0] == "message_start" and names[-1] == "message_stop"
    start = next(d for e, d in events if e == "content_block_start")["content_block"]
    deltas = [d["delta"] for e, d in events if e == "content_block_delta"]
    finish = next(d for e, d in events if e == "message_delta")["delta"]["stop_reason"]
    if start["type"] == "tool_use":
        args = json.loads("".join(d["partial_json"] for d in deltas))
        return (start["name"], args), finish
    return "".join(d["text"] for d in deltas), finish


def responses_decode(raw: bytes) -> tuple[Any, str | None]:
    events = _events(raw)
    assert events[0][0] == "response.created"
    completed = events[-1][1]
    assert (
        events[-1][0] == "response.completed" and completed["response"]["usage"]["total_tokens"] > 0
    )
    item = next(d for e, d in events if e == "response.output_item.done")["item"]
    if item["type"] == "function_call":
        return (item["name"], json.loads(item["arguments"])), completed["response"]["status"]
    return item["content"][0]["text"], completed["response"]["status"]


def chat_decode(raw: bytes) -> tuple[Any, str | None]:
    events = [d for _, d in _events(raw)]
    assert events[-1] == "[DONE]"
    assert events[-2]["usage"]["total_tokens"] > 0
    chunks = [c for c in events[:-2] if c["choices"]]
    finish = chunks[-1]["choices"][0]["finish_reason"]
    deltas = [c["choices"][0]["delta"] for c in chunks]
    calls = [tc for d in deltas for tc in d.get("tool_calls", [])]
    if calls:
        name = calls[0]["function"]["name"]
        return (name, json.loads("".join(tc["function"]["arguments"] for tc in calls))), finish
    return "".join(d.get("content") or "" for d in deltas), finish


def gemini_decode(raw: bytes) -> tuple[Any, str | None]:
    chunks = [d for _, d in _events(raw)]
    finish = chunks[-1]["candidates"][0].get("finishReason")
    assert chunks[-1]["usageMetadata"]["totalTokenCount"] > 0
    parts = [p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    calls = [p["functionCall"] for p in parts if "functionCall" in p]
    if calls:
        return (calls[0]["name"], calls[0]["args"]), finish
    return "".join(p.get("text", "") for p in parts), finish


Request = Callable[[ModelServer, list[str]], tuple[int, dict[str, str], bytes]]
Decode = Callable[[bytes], tuple[Any, str | None]]
APIS: dict[str, tuple[Request, Decode, str, str]] = {
    # api: (request, decode, finish after a tool call, finish after text)
    "anthropic": (anthropic_request, anthropic_decode, "tool_use", "end_turn"),
    "responses": (responses_request, responses_decode, "completed", "completed"),
    "chat": (chat_request, chat_decode, "tool_calls", "stop"),
    "gemini": (gemini_request, gemini_decode, "STOP", "STOP"),
}


@pytest.mark.parametrize("api", list(APIS))
def test_each_api_streams_a_tool_call_then_a_final_answer(api: str, tmp_path: Path) -> None:
    request, decode, tool_finish, text_finish = APIS[api]
    target = tmp_path / "out.txt"
    script = Script.of(write_file(target, "hello\n"), Answer("All done."))
    with ModelServer(script) as srv:
        status, headers, raw = request(srv, ["Read", "Write"])
        assert status == 200 and headers["content-type"].startswith("text/event-stream")
        call, finish = decode(raw)
        assert call == ("Write", {"file_path": str(target), "content": "hello\n"})
        assert finish == tool_finish
        status, _, raw = request(srv, ["Read", "Write"])
        assert decode(raw) == ("All done.", text_finish)
        recs = srv.requests
    assert [r.api for r in recs] == [api, api]
    assert [r.outcome for r in recs] == ["tool_call Write", "answer"]
    assert [r.turn for r in recs] == [0, 1]
    assert all(r.client[0] == "127.0.0.1" and r.stream for r in recs)
    assert all("sekrit" not in json.dumps(r.headers) for r in recs)


def test_anthropic_answers_non_streaming_requests_and_records_the_query() -> None:
    with ModelServer(Script.of(ToolCall(("Write",), {"file_path": "/x", "content": "y"}))) as srv:
        status, _, raw = anthropic_request(srv, ["Write"], stream=False)
        rec = srv.requests[0]
    message = json.loads(raw)
    assert status == 200 and message["stop_reason"] == "tool_use"
    assert message["content"][0]["name"] == "Write"
    assert message["content"][0]["input"] == {"file_path": "/x", "content": "y"}
    assert message["usage"]["output_tokens"] > 0
    assert rec.path == "/v1/messages" and rec.query == {"beta": ["true"]}
    assert rec.headers["x-api-key"] == "***" and rec.headers["anthropic-version"] == "2023-06-01"
    assert rec.body["max_tokens"] == 100 and not rec.stream


def test_tool_is_picked_by_name_with_fallbacks_and_param_names_from_its_schema(
    tmp_path: Path,
) -> None:
    schema = {"type": "object", "properties": {"path": {}, "content": {}}}
    body = {
        "model": "m",
        "stream": True,
        "messages": [{"role": "system", "content": f"Current working directory: {tmp_path}"}],
        "tools": [
            {"type": "function", "function": {"name": n, "parameters": schema}}
            for n in ("read", "write", "write_file")
        ],
    }
    with ModelServer(Script.of(write_file("rel/a.txt", "A"))) as srv:
        _, _, raw = _post(f"{srv.url}/v1/chat/completions", body)
    assert chat_decode(raw)[0] == ("write", {"path": str(tmp_path / "rel/a.txt"), "content": "A"})


def test_codex_custom_apply_patch_tool_gets_an_add_file_patch(tmp_path: Path) -> None:
    body = {
        "model": "gpt-5.5",
        "stream": True,
        "input": [{"type": "message", "content": [{"text": f"<cwd>{tmp_path}</cwd>"}]}],
        "tools": [
            {"type": "function", "name": "exec_command", "parameters": {}},
            {"type": "custom", "name": "apply_patch", "format": {"type": "grammar"}},
        ],
    }
    with ModelServer(Script.of(write_file("new.txt", "one\ntwo\n"))) as srv:
        _, _, raw = _post(f"{srv.url}/v1/responses", body)
    events = _events(raw)
    assert "response.custom_tool_call_input.delta" in [e for e, _ in events]
    item = next(d for e, d in events if e == "response.output_item.done")["item"]
    assert item["type"] == "custom_tool_call" and item["name"] == "apply_patch"
    assert item["input"] == (
        f"*** Begin Patch\n*** Add File: {tmp_path / 'new.txt'}\n+one\n+two\n*** End Patch\n"
    )


def test_args_may_be_computed_from_the_request() -> None:
    seen: list[str] = []

    def args(ctx: Any) -> dict[str, Any]:
        seen.append(f"{ctx.api}:{ctx.tool.name}:{ctx.turn}")
        return {"file_path": "/f", "content": str(len(ctx.body["messages"]))}

    with ModelServer(Script.of(ToolCall(("Nope", "Write"), args))) as srv:
        _, _, raw = anthropic_request(srv, ["Write"])
    assert anthropic_decode(raw)[0] == ("Write", {"file_path": "/f", "content": "1"})
    assert seen == ["anthropic:Write:0"]


def test_a_tool_that_is_not_offered_is_a_500_and_a_recorded_script_error() -> None:
    with ModelServer(Script.of(ToolCall(("Write",), {}))) as srv:
        status, _, raw = chat_request(srv, ["read"])
        errors = srv.errors
    assert status == 500
    assert "none of ('Write',) offered" in json.loads(raw)["error"]["message"]
    assert errors and "got ['read']" in errors[0]


def test_requests_without_tools_are_side_calls_that_consume_no_turn() -> None:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "title?"}]}
    with ModelServer(Script(turns=(Answer("main answer"),), side_text="A title")) as srv:
        _, _, side = _post(f"{srv.url}/v1/chat/completions", body)
        _, _, main = chat_request(srv, ["write"])
        _, _, after = chat_request(srv, ["write"])
        kinds = [r.kind for r in srv.requests]
    assert chat_decode(side) == ("A title", "stop")
    assert chat_decode(main) == ("main answer", "stop")
    assert chat_decode(after)[0] == "(script exhausted)"
    assert kinds == ["side", "main", "main"]


def test_gemini_structured_side_call_gets_an_object_matching_its_schema() -> None:
    schema = {
        "type": "object",
        "properties": {
            "complexity_reasoning": {"type": "string"},
            "complexity_score": {"type": "integer", "minimum": 1, "maximum": 100},
        },
    }
    body = {
        "contents": [{"role": "user", "parts": [{"text": "route"}]}],
        "generationConfig": {"responseJsonSchema": schema},
    }
    with ModelServer(Script.of()) as srv:
        status, _, raw = _post(f"{srv.url}/v1beta/models/flash-lite:generateContent", body)
    answer = json.loads(json.loads(raw)["candidates"][0]["content"]["parts"][0]["text"])
    assert status == 200 and answer == {"complexity_reasoning": "mock", "complexity_score": 2}


def test_gemini_generate_content_and_count_tokens_answer_plain_json() -> None:
    tools = [{"functionDeclarations": [{"name": "write_file", "parameters": WRITE_SCHEMA}]}]
    body = {"contents": [{"parts": [{"text": "hi"}]}], "tools": tools}
    with ModelServer(Script.of(Answer("plain"))) as srv:
        _, _, count = _post(f"{srv.url}/v1beta/models/g:countTokens", body)
        status, _, raw = _post(f"{srv.url}/v1beta/models/g:generateContent", body)
    assert json.loads(count)["totalTokens"] >= 1
    reply = json.loads(raw)
    assert status == 200 and reply["candidates"][0]["content"]["parts"] == [{"text": "plain"}]
    assert reply["candidates"][0]["finishReason"] == "STOP"


def test_unknown_paths_are_404_and_recorded() -> None:
    with ModelServer(Script.of()) as srv:
        status, _, _ = _post(f"{srv.url}/v2/what", {})
        assert status == 404 and srv.requests[0].status == 404


# --- failure modes ------------------------------------------------------------------------


@pytest.mark.parametrize("api", list(APIS))
def test_unauthorized_is_a_401_in_the_api_error_shape(api: str) -> None:
    request = APIS[api][0]
    with ModelServer(Script.of(Unauthorized())) as srv:
        status, _, raw = request(srv, ["Write"])
    error = json.loads(raw)["error"]
    assert status == 401 and error["message"] == "mock invalid api key"


@pytest.mark.parametrize("api", list(APIS))
def test_rate_limit_has_retry_after_and_a_reset_time_then_recovers(api: str) -> None:
    request, decode, _, text_finish = APIS[api]
    script = Script.of(RateLimit(times=2, retry_after=7, reset_in=120), Answer("ok"))
    with ModelServer(script) as srv:
        first = request(srv, ["Write"])
        second = request(srv, ["Write"])
        third = request(srv, ["Write"])
    for status, headers, raw in (first, second):
        message = json.loads(raw)["error"]["message"]
        assert status == 429 and headers["retry-after"] == "7"
        reset = int(headers["anthropic-ratelimit-unified-reset"])
        assert 110 < reset - time.time() <= 121
        assert f"({reset})" in message and "limit resets at 20" in message
    assert third[0] == 200 and decode(third[2]) == ("ok", text_finish)


def test_rate_limit_forever_never_advances() -> None:
    with ModelServer(Script.of(RateLimit(times=None), Answer("never"))) as srv:
        statuses = [chat_request(srv, ["write"])[0] for _ in range(4)]
    assert statuses == [429] * 4


def test_server_error_is_a_500() -> None:
    with ModelServer(Script.of(ServerError(), Answer("after"))) as srv:
        status, _, raw = gemini_request(srv, ["write_file"])
        after = gemini_request(srv, ["write_file"])
    assert status == 500 and json.loads(raw)["error"]["status"] == "INTERNAL"
    assert gemini_decode(after[2])[0] == "after"


@pytest.mark.parametrize("api", list(APIS))
def test_cut_stream_resets_the_connection_mid_sse(api: str) -> None:
    request = APIS[api][0]
    with ModelServer(Script.of(CutStream(), Answer("after the cut"))) as srv:
        with pytest.raises((http.client.IncompleteRead, ConnectionError, urllib.error.URLError)):
            request(srv, ["Write"])
        status, _, raw = request(srv, ["Write"])
        outcomes = [r.outcome for r in srv.requests]
    assert status == 200 and APIS[api][1](raw)[0] == "after the cut"
    assert outcomes == ["cut", "answer"]


def test_cut_stream_really_sent_part_of_the_stream_first() -> None:
    with ModelServer(Script.of(CutStream())) as srv:
        conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
        body = json.dumps({"stream": True, "tools": [{"name": "Write"}], "messages": []})
        conn.request("POST", "/v1/messages", body, {"content-type": "application/json"})
        resp = conn.getresponse()
        assert resp.status == 200
        first = resp.read1(65536)
        assert b"event: message_start" in first
        with pytest.raises((http.client.IncompleteRead, ConnectionError)):
            resp.read()
        conn.close()


@pytest.mark.parametrize("api", list(APIS))
def test_no_finish_ends_cleanly_without_any_finish_reason(api: str) -> None:
    request = APIS[api][0]
    with ModelServer(Script.of(NoFinish(text="half"))) as srv:
        status, _, raw = request(srv, ["Write"])
    assert status == 200
    text = raw.decode()
    assert "ha" in text and "lf" in text  # the content went out...
    for marker in (
        "message_stop",
        "response.completed",
        "[DONE]",
        'finish_reason":"stop',
        "STOP",
        "end_turn",
    ):
        assert marker not in text  # ...but nothing that finishes it


def test_dead_resets_every_connection_from_then_on() -> None:
    with ModelServer(Script.of(Answer("one"), Dead())) as srv:
        assert chat_request(srv, ["write"])[0] == 200
        for _ in range(3):
            with pytest.raises((urllib.error.URLError, ConnectionError, http.client.HTTPException)):
                chat_request(srv, ["write"])
        assert srv.dead and srv.dead_connections >= 3


def test_server_dump_writes_jsonl(tmp_path: Path) -> None:
    with ModelServer(Script.of(Answer("x"))) as srv:
        chat_request(srv, ["write"])
        srv.dump(tmp_path / "log.jsonl")
    (line,) = (tmp_path / "log.jsonl").read_text().splitlines()
    rec = json.loads(line)
    assert rec["api"] == "chat" and rec["headers"]["authorization"] == "***"


def test_find_cwd_only_accepts_existing_directories(tmp_path: Path) -> None:
    assert find_cwd({"s": f"Primary working directory: {tmp_path}\n"}) == tmp_path
    assert find_cwd({"s": [f"  <cwd>{tmp_path}</cwd>"]}) == tmp_path
    assert find_cwd({"s": f"- **Workspace Directories:**\n  - {tmp_path}\n"}) == tmp_path
    assert find_cwd({"s": "Working directory: /does/not/exist"}) is None


def test_deny_all_proxy_records_connect_attempts() -> None:
    with DenyAllProxy() as proxy:
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({"https": proxy.url, "http": proxy.url})
        )
        with pytest.raises((urllib.error.URLError, OSError)):
            opener.open("https://example.invalid/", timeout=5)
        (attempt,) = proxy.attempts
        assert attempt.startswith("CONNECT example.invalid:443 HTTP/")
