"""The scripted model server: a threaded stdlib HTTP server on 127.0.0.1 speaking four model APIs.

    with ModelServer(Script.of(write_file("out.txt", "hi\\n"), Answer("done"))) as srv:
        run_the_cli(base_url=srv.url)
        assert srv.main_requests[0].api == "anthropic"

Every request is recorded (path, query, headers with secrets masked, JSON body and its size,
what was answered).
"""

from __future__ import annotations

import json
import os
import re
import socket
import struct
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import Any, Literal
from urllib.parse import parse_qs, urlsplit

from .anthropic import AnthropicMessages
from .chat import OpenAIChat
from .gemini import GeminiGenerate
from .responses import OpenAIResponses
from .script import (
    Answer,
    Api,
    CallContext,
    CutStream,
    Dead,
    NoFinish,
    RateLimit,
    Script,
    ServerError,
    Tool,
    ToolCall,
    Turn,
    Unauthorized,
)
from .wire import Dialect, Reply, Text, ToolUse, Usage, new_id, sample_for_schema

SECRET_HEADERS = frozenset(
    {"authorization", "x-api-key", "x-goog-api-key", "api-key", "cookie", "proxy-authorization"}
)
_GEMINI_PATH = re.compile(r"/models/(?P<model>[^/:]+):(?P<method>[A-Za-z]+)$")

RequestKind = Literal["main", "side", "other"]


@dataclass
class RecordedRequest:
    """One HTTP request the server received and what it answered."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: Any
    client: tuple[str, int]
    api: Api | None = None
    kind: RequestKind = "other"
    turn: int | None = None  # index in the script of the turn that answered it
    stream: bool = False
    status: int = 0  # 0 = connection reset without an HTTP answer
    outcome: str = ""  # "tool_call Write", "answer", "rate_limit", "cut", "no_finish", ...
    tools: list[str] = field(default_factory=list)
    size: int = 0  # bytes of the request body as sent

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (for logs)."""
        return {k: v for k, v in self.__dict__.items()}


def mask_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """Headers lower-cased, with secret values replaced by `***`."""
    return {k.lower(): ("***" if k.lower() in SECRET_HEADERS else v) for k, v in headers.items()}


def estimate_tokens(text: str) -> int:
    """A rough token count (4 characters a token, at least 1)."""
    return max(1, len(text) // 4)


def _reset(sock: socket.socket) -> None:
    """Close `sock` with an RST (SO_LINGER 0), even while file objects still refer to it."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        os.close(sock.detach())
    except OSError:
        pass


class _ScriptCursor:
    """Hands out the script's turns to main requests, honouring each failure's `times`."""

    def __init__(self, script: Script) -> None:
        self.script = script
        self.index = 0
        self.used = 0
        self.dead = False

    def next(self) -> tuple[int | None, Turn | None]:
        turns = self.script.turns
        if self.index >= len(turns):
            return None, None
        index, turn = self.index, turns[self.index]
        if isinstance(turn, Dead):
            self.dead = True
            return index, turn
        times = getattr(turn, "times", 1)
        if times is None:
            return index, turn
        self.used += 1
        if self.used >= times:
            self.index += 1
            self.used = 0
        return index, turn


class ModelServer:
    """A scripted model server on 127.0.0.1 with an ephemeral port, run in a thread."""

    def __init__(self, script: Script | Sequence[Turn], host: str = "127.0.0.1") -> None:
        self.script = script if isinstance(script, Script) else Script(tuple(script))
        self._cursor = _ScriptCursor(self.script)
        self._lock = threading.Lock()
        self._requests: list[RecordedRequest] = []
        self.errors: list[str] = []  # script problems: tool not offered, args function failed
        self.dead_connections = 0
        self._httpd = _HTTPServer((host, 0), _Handler)
        self._httpd.model = self
        self._thread: threading.Thread | None = None

    # -- lifecycle ---------------------------------------------------------------------------

    @property
    def port(self) -> int:
        return int(self._httpd.server_address[1])

    @property
    def url(self) -> str:
        """`http://127.0.0.1:PORT` (no trailing slash, no `/v1`)."""
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> ModelServer:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._thread is not None:
            self._httpd.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._httpd.server_close()

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- what tests look at ------------------------------------------------------------------

    @property
    def requests(self) -> list[RecordedRequest]:
        """Every request so far, in arrival order (a copy)."""
        with self._lock:
            return list(self._requests)

    @property
    def main_requests(self) -> list[RecordedRequest]:
        """Requests that offered tools (the agent loop)."""
        return [r for r in self.requests if r.kind == "main"]

    @property
    def dead(self) -> bool:
        return self._cursor.dead

    def wait_for(self, count: int, timeout: float = 5.0) -> list[RecordedRequest]:
        """Wait until at least `count` requests arrived; return them."""
        deadline = time.monotonic() + timeout
        while len(self.requests) < count and time.monotonic() < deadline:
            time.sleep(0.02)
        return self.requests

    def dump(self, path: Path) -> None:
        """Write every recorded request as JSONL to `path`."""
        lines = [json.dumps(r.to_json()) for r in self.requests]
        path.write_text("".join(line + "\n" for line in lines))

    # -- deciding the answer -----------------------------------------------------------------

    def _record(self, rec: RecordedRequest) -> None:
        with self._lock:
            self._requests.append(rec)

    def _decide(self, rec: RecordedRequest, tools: list[Tool]) -> tuple[Turn | None, Reply | None]:
        """Pick the turn answering `rec` and, for tool calls and answers, the reply to render."""
        if not tools:
            rec.kind = "side"
            return None, Text(self._side_text(rec.body))
        rec.kind = "main"
        with self._lock:
            index, turn = self._cursor.next()
        rec.turn = index
        if turn is None:
            return None, Text(self.script.exhausted_text)
        if isinstance(turn, Answer):
            return turn, Text(turn.text)
        if isinstance(turn, ToolCall):
            return turn, self._tool_use(turn, tools, rec, index or 0)
        return turn, None

    def _side_text(self, body: Any) -> str:
        config = body.get("generationConfig") if isinstance(body, dict) else None
        schema = None
        if isinstance(config, dict):
            schema = config.get("responseJsonSchema") or config.get("responseSchema")
        if isinstance(schema, dict):
            return json.dumps(sample_for_schema(schema))
        return self.script.side_text

    def _tool_use(
        self, turn: ToolCall, tools: list[Tool], rec: RecordedRequest, index: int
    ) -> Reply | None:
        offered = {t.name: t for t in tools}
        tool = next((offered[n] for n in turn.names if n in offered), None)
        if tool is None:
            self.errors.append(f"turn {index}: none of {turn.names} offered; got {sorted(offered)}")
            return None
        ctx = CallContext(api=rec.api or "anthropic", tool=tool, body=rec.body, turn=index)
        try:
            args = turn.build(ctx)
        except Exception as exc:
            self.errors.append(f"turn {index}: arguments for {tool.name} failed: {exc!r}")
            return None
        return ToolUse(tool=tool, args=args, call_id=new_id("call_"))


class _HTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that resets connections once the script has died."""

    daemon_threads = True
    model: ModelServer

    def verify_request(self, request: Any, client_address: Any) -> bool:
        if self.model.dead:
            self.model.dead_connections += 1
            _reset(request)
            return False
        return True


class _Handler(BaseHTTPRequestHandler):
    """Parses one request, asks the ModelServer what to answer, and writes it on the wire."""

    protocol_version = "HTTP/1.1"
    timeout = 30
    server: _HTTPServer
    dialects: dict[str, Dialect] = {
        "anthropic": AnthropicMessages(),
        "responses": OpenAIResponses(),
        "chat": OpenAIChat(),
        "gemini": GeminiGenerate(),
    }

    def log_message(self, format: str, *args: Any) -> None:
        pass

    @property
    def model(self) -> ModelServer:
        return self.server.model

    # -- reading -----------------------------------------------------------------------------

    def _read_body(self) -> bytes:
        if self.headers.get("transfer-encoding", "").lower() == "chunked":
            data = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    return data
                data += self.rfile.read(size)
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self) -> None:
        self._handle()

    def do_POST(self) -> None:
        self._handle()

    def _handle(self) -> None:
        split = urlsplit(self.path)
        raw = self._read_body() if self.command == "POST" else b""
        try:
            body: Any = json.loads(raw) if raw else None
        except ValueError:
            body = {"_unparsed": raw.decode("utf-8", "replace")}
        rec = RecordedRequest(
            method=self.command,
            path=split.path,
            query=parse_qs(split.query),
            headers=mask_headers(dict(self.headers.items())),
            body=body,
            client=(self.client_address[0], int(self.client_address[1])),
            size=len(raw),
        )
        if self.model.dead:
            rec.outcome = "dead"
            self.model._record(rec)
            self.model.dead_connections += 1
            self.close_connection = True
            _reset(self.connection)
            return
        self._route(rec, split.path)

    def _route(self, rec: RecordedRequest, path: str) -> None:
        gemini = _GEMINI_PATH.search(path)
        body = rec.body if isinstance(rec.body, dict) else {}
        if self.command != "POST":
            self._finish_plain(rec, 404, {"error": {"message": f"mock: no route for GET {path}"}})
            return
        if path.endswith("/messages/count_tokens"):
            rec.api = "anthropic"
            self._finish_plain(rec, 200, {"input_tokens": estimate_tokens(json.dumps(body))})
            return
        if gemini and gemini["method"] == "countTokens":
            rec.api = "gemini"
            self._finish_plain(rec, 200, {"totalTokens": estimate_tokens(json.dumps(body))})
            return
        api: Api
        model, stream = str(body.get("model", "mock")), bool(body.get("stream"))
        if path.endswith("/messages"):
            api = "anthropic"
        elif path.endswith("/responses"):
            api = "responses"
        elif path.endswith("/chat/completions"):
            api = "chat"
        elif gemini and gemini["method"] in ("generateContent", "streamGenerateContent"):
            api, model = "gemini", gemini["model"]
            stream = gemini["method"] == "streamGenerateContent"
        else:
            self._finish_plain(rec, 404, {"error": {"message": f"mock: no route for {path}"}})
            return
        rec.api, rec.stream = api, stream
        self._answer(rec, self.dialects[api], model, body)

    # -- writing -----------------------------------------------------------------------------

    def _answer(self, rec: RecordedRequest, dialect: Dialect, model: str, body: Any) -> None:
        tools = dialect.tools(body)
        rec.tools = [t.name for t in tools]
        turn, reply = self.model._decide(rec, tools)
        usage_in = estimate_tokens(json.dumps(body))
        if reply is not None:
            out_text = reply.text if isinstance(reply, Text) else json.dumps(reply.args)
            usage = Usage(usage_in, estimate_tokens(out_text))
            known = self.model.script.usage
            if known is not None:  # counts a test knows in advance
                usage = Usage(*known) if rec.kind == "main" else Usage(0, 0)
            rec.outcome = f"tool_call {reply.tool.name}" if isinstance(reply, ToolUse) else "answer"
            if rec.stream:
                self._send_stream(rec, dialect.stream(reply, model, usage).frames)
            else:
                self._finish_plain(rec, 200, dialect.json(reply, model, usage))
            return
        if isinstance(turn, Dead):
            rec.outcome = "dead"
            self.model._record(rec)
            self.model.dead_connections += 1
            self.close_connection = True
            _reset(self.connection)
            return
        if isinstance(turn, Unauthorized):
            rec.outcome = "unauthorized"
            self._finish_plain(rec, 401, dialect.error(401, turn.message))
        elif isinstance(turn, RateLimit):
            rec.outcome = "rate_limit"
            message = turn.full_message()
            reset = turn.reset_at()
            headers = {
                "retry-after": str(turn.retry_after),
                "x-ratelimit-reset-requests": f"{turn.reset_in}s",
                "anthropic-ratelimit-requests-reset": reset.isoformat().replace("+00:00", "Z"),
                "anthropic-ratelimit-unified-reset": str(int(reset.timestamp())),
            }
            self._finish_plain(rec, 429, dialect.error(429, message), headers)
        elif isinstance(turn, ServerError):
            rec.outcome = "server_error"
            self._finish_plain(rec, 500, dialect.error(500, turn.message))
        elif isinstance(turn, CutStream | NoFinish):
            plan = dialect.stream(Text(turn.text), model, Usage(usage_in, 1))
            if isinstance(turn, CutStream):
                rec.outcome = "cut"
                self._send_stream(rec, plan.frames[: max(1, plan.finish_at - 1)], cut=True)
            else:
                rec.outcome = "no_finish"
                self._send_stream(rec, plan.frames[: plan.finish_at])
        else:  # a ToolCall whose tool was not offered, or whose arguments failed
            rec.outcome = "script_error"
            message = self.model.errors[-1] if self.model.errors else "mock: script error"
            self._finish_plain(rec, 500, dialect.error(500, message))

    def _finish_plain(
        self,
        rec: RecordedRequest,
        status: int,
        payload: Any,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        rec.status = status
        self.model._record(rec)
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", new_id("req_"))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(data)

    def _send_stream(self, rec: RecordedRequest, frames: list[bytes], cut: bool = False) -> None:
        """Send `frames` as a chunked SSE body; with `cut`, reset instead of the final chunk."""
        rec.status = 200
        self.model._record(rec)
        self.send_response(200)
        self.send_header("content-type", "text/event-stream; charset=utf-8")
        self.send_header("cache-control", "no-cache")
        self.send_header("transfer-encoding", "chunked")
        self.send_header("request-id", new_id("req_"))
        self.end_headers()
        try:
            for frame in frames:
                self.wfile.write(b"%x\r\n%s\r\n" % (len(frame), frame))
                self.wfile.flush()
            if cut:
                time.sleep(0.05)  # let the client read what was sent before the reset
                self.close_connection = True
                _reset(self.connection)
                return
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except OSError:
            self.close_connection = True
