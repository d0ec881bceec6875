"""The language server reads its client on the event loop: framing (any split of the bytes,
several messages at once, headers in any case), a message that fails, the end of stdin;
and a plain request handler answers in the callback that read the request, or later when
it returns an awaitable (``answer_later``)."""

from __future__ import annotations

import asyncio
import itertools
import json
import os
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lsprotocol import types

from baton.surfaces.lsp.protocol import answer_later
from baton.surfaces.lsp.server import BatonServer
from baton.surfaces.lsp.stdio import MessageReader, RequestsFirstLoop, serve_stdin


def frame(obj: dict[str, Any], headers: str = "") -> bytes:
    body = json.dumps(obj).encode()
    return f"Content-Length: {len(body)}\r\n{headers}\r\n".encode() + body


MESSAGES = [{"jsonrpc": "2.0", "id": i, "method": "m", "params": {"x": "é" * i}} for i in range(4)]
STREAM = b"".join(
    frame(m, "Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n") for m in MESSAGES
)


@settings(max_examples=60, deadline=None)
@given(cuts=st.lists(st.integers(min_value=0, max_value=len(STREAM)), max_size=8))
def test_every_message_is_handled_once_in_order_however_the_bytes_are_split(
    cuts: list[int],
) -> None:
    got: list[Any] = []
    reader = MessageReader(got.append, lambda d: d)
    points = [0, *sorted(cuts), len(STREAM)]
    for a, b in itertools.pairwise(points):
        reader.feed(STREAM[a:b])
    assert got == MESSAGES


def test_header_case_and_a_message_without_length() -> None:
    got: list[Any] = []
    reader = MessageReader(got.append, lambda d: d)
    body = json.dumps(MESSAGES[0]).encode()
    reader.feed(b"X-Other: 1\r\n\r\n")  # no Content-Length: skipped, the next one read
    reader.feed(b"content-length: %d\r\n\r\n" % len(body) + body)
    assert got == [MESSAGES[0]]


def test_a_message_that_fails_is_reported_and_the_next_one_is_read() -> None:
    got: list[Any] = []
    failures: list[tuple[Exception, Any]] = []

    def handle(message: Any) -> None:
        if message["id"] == 1:
            raise ValueError("broken handler")
        got.append(message["id"])

    reader = MessageReader(handle, lambda d: d, lambda e, t: failures.append((e, t)), KeyError)
    reader.feed(b"Content-Length: 5\r\n\r\n{nope" + frame(MESSAGES[1]) + frame(MESSAGES[2]))
    assert got == [2]
    assert [type(e) for e, _ in failures] == [json.JSONDecodeError, ValueError]
    assert all(t is KeyError for _, t in failures)


def test_exit_is_not_swallowed() -> None:
    def handle(message: Any) -> None:
        raise SystemExit(0)

    with pytest.raises(SystemExit):
        MessageReader(handle, lambda d: d).feed(frame(MESSAGES[0]))


async def test_reads_a_pipe_until_its_end_and_leaves_it_blocking() -> None:
    read_end, write_end = os.pipe()
    got: list[Any] = []
    try:
        served = asyncio.create_task(serve_stdin(read_end, MessageReader(got.append, lambda d: d)))
        os.write(write_end, STREAM[:10])
        await asyncio.sleep(0.05)
        assert got == []
        os.write(write_end, STREAM[10:])
        for _ in range(100):
            if len(got) == len(MESSAGES):
                break
            await asyncio.sleep(0.01)
        assert got == MESSAGES
        assert not served.done()
        os.close(write_end)
        write_end = -1
        await asyncio.wait_for(served, 5)  # end of file: serving stops
        assert os.get_blocking(read_end)  # a descriptor the client may share is left as it was
    finally:
        os.close(read_end)
        if write_end >= 0:
            os.close(write_end)


class Captured:
    """A writer keeping what the server sends."""

    def __init__(self) -> None:
        self.data = b""

    def write(self, data: bytes) -> None:
        self.data += data

    def close(self) -> None:
        pass

    def messages(self) -> list[dict[str, Any]]:
        out, rest = [], self.data
        while rest:
            head, _, rest = rest.partition(b"\r\n\r\n")
            length = int(head.split(b":")[1].split(b"\r\n")[0])
            out.append(json.loads(rest[:length]))
            rest = rest[length:]
        return out


def code_action_request(msg_id: int) -> bytes:
    return frame(
        {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": types.TEXT_DOCUMENT_CODE_ACTION,
            "params": {
                "textDocument": {"uri": "file:///a.py"},
                "range": {
                    "start": {"line": 0, "character": 0},
                    "end": {"line": 0, "character": 0},
                },
                "context": {"diagnostics": []},
            },
        }
    )


async def test_a_plain_handler_answers_at_once_or_later_when_it_returns_an_awaitable() -> None:
    server = BatonServer()
    out = Captured()
    server.protocol.set_writer(out)
    release = asyncio.Event()

    async def slow() -> list[types.CodeAction]:
        await release.wait()
        return [types.CodeAction(title="later")]

    @server.feature(types.TEXT_DOCUMENT_CODE_ACTION)
    def actions(ls: BatonServer, params: types.CodeActionParams) -> Any:
        if params.range.start.line == 0 and not release.is_set():
            return answer_later(slow())
        return [types.CodeAction(title="now")]

    reader = MessageReader(server.protocol.handle_message, server.protocol.structure_message)
    reader.feed(code_action_request(1))
    assert out.messages() == []  # waits for slow()
    release.set()
    reader.feed(code_action_request(2))
    # Request 2 is answered within the feed (no turn of the loop): before request 1.
    assert [m["id"] for m in out.messages()] == [2]
    assert out.messages()[0]["result"] == [{"title": "now"}]
    for _ in range(100):
        if len(out.messages()) == 2:
            break
        await asyncio.sleep(0.01)
    assert out.messages()[1] == {"jsonrpc": "2.0", "id": 1, "result": [{"title": "later"}]}


def hover_request(msg_id: int) -> bytes:
    return frame(
        {
            "jsonrpc": "2.0",
            "id": msg_id,
            "method": types.TEXT_DOCUMENT_HOVER,
            "params": {
                "textDocument": {"uri": "file:///a.py"},
                "position": {"line": msg_id, "character": 0},
            },
        }
    )


async def test_an_async_handler_is_answered_from_its_task_and_a_cancel_still_answers() -> None:
    server = BatonServer()
    out = Captured()
    server.protocol.set_writer(out)
    steps: list[str] = []

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: BatonServer, params: types.HoverParams) -> types.Hover:
        steps.append("ran")
        await asyncio.sleep(0)
        if params.position.line == 3:
            raise ValueError("no hover here")
        return types.Hover(contents=f"line {params.position.line}")

    reader = MessageReader(server.protocol.handle_message, server.protocol.structure_message)
    reader.feed(hover_request(1) + hover_request(2) + hover_request(3))
    cancel = {"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": 2}}
    reader.feed(frame(cancel))  # before its task ran
    for _ in range(100):
        if len(out.messages()) == 3:
            break
        await asyncio.sleep(0.01)
    by_id = {m["id"]: m for m in out.messages()}
    assert by_id[1]["result"] == {"contents": "line 1"}
    assert by_id[2]["error"]["code"] == -32800  # RequestCancelled
    assert "no hover here" in by_id[3]["error"]["message"]
    assert steps == ["ran", "ran"]  # the cancelled one never ran
    assert len(out.messages()) == 3


@pytest.mark.parametrize("first", [True, False], ids=["requests-first", "plain-loop"])
def test_a_request_runs_ahead_of_the_callbacks_queued_before_it(first: bool) -> None:
    """The server's loop runs the reader of the client's messages before the callbacks
    the broker queued in the turn before (a plain asyncio loop runs it after them)."""
    order: list[str] = []
    loop = RequestsFirstLoop() if first else asyncio.new_event_loop()
    read_end, write_end = os.pipe()

    async def main() -> None:
        reader = MessageReader(lambda m: order.append("request"), lambda d: d)
        served = asyncio.create_task(serve_stdin(read_end, reader))
        await asyncio.sleep(0.01)  # serving

        def queue_work() -> None:
            os.write(write_end, frame(MESSAGES[0]))  # the request arrives meanwhile
            for i in range(5):
                loop.call_soon(order.append, f"queued {i}")

        loop.call_soon(queue_work)
        await asyncio.sleep(0.05)
        os.close(write_end)
        await asyncio.wait_for(served, 5)

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
        os.close(read_end)
    queued = [f"queued {i}" for i in range(5)]
    assert order == (["request", *queued] if first else [*queued, "request"])


def test_a_command_s_arguments_are_read_without_evaluating_annotations() -> None:
    """pygls reads a command handler's annotations at every call; Baton's are objects, so
    that costs no evaluation of strings on the loop."""
    import typing

    from baton.surfaces.lsp import create_language_server

    server = create_language_server()
    handler = server.protocol.fm.commands["baton.delegate"]
    annotations = handler.func.__annotations__
    assert not any(isinstance(a, str) for a in annotations.values())
    assert typing.get_type_hints(handler.func)["ls"] is BatonServer


def test_an_async_handler_starts_ahead_of_the_callbacks_queued_before_it() -> None:
    order: list[str] = []
    loop = RequestsFirstLoop()
    read_end, write_end = os.pipe()
    server = BatonServer()
    server.protocol.set_writer(Captured())

    @server.feature(types.TEXT_DOCUMENT_HOVER)
    async def hover(ls: BatonServer, params: types.HoverParams) -> None:
        order.append("handler")

    async def main() -> None:
        reader = MessageReader(server.protocol.handle_message, server.protocol.structure_message)
        served = asyncio.create_task(serve_stdin(read_end, reader))
        await asyncio.sleep(0.01)

        def queue_work() -> None:
            os.write(write_end, hover_request(1))
            for i in range(3):
                loop.call_soon(order.append, f"queued {i}")

        loop.call_soon(queue_work)
        await asyncio.sleep(0.05)
        os.close(write_end)
        await asyncio.wait_for(served, 5)

    try:
        loop.run_until_complete(main())
    finally:
        loop.close()
        os.close(read_end)
    assert order == ["handler", "queued 0", "queued 1", "queued 2"]
