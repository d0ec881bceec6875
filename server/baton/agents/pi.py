"""Pi (provider ``pi``): ``pi --mode json -p <prompt>``, one process per turn.

A prompt over :data:`ARGV_PROMPT_LIMIT` bytes goes on stdin instead (``pi … -p`` with no
message: Pi reads piped stdin as the message), as Linux caps one argv string at 128 KiB. Pi
strips the whitespace around stdin's text, so smaller prompts stay in argv, exactly as given.

A later turn resumes with ``--session <id>`` from the same worktree. Pi has no approval
prompts: its tools (read, bash, edit, write) run in Baton's worktree. The model is
``turn.model``/``profile.model`` (``provider/id`` works), the provider
``profile.options["provider"]`` when the model does not name one. The profile's ``config_dir``
becomes ``PI_CODING_AGENT_DIR`` (an account's ``models.json``, ``auth.json``, settings and
sessions); ``profile.env`` is passed through. Calling home: ``--offline`` (``PI_OFFLINE=1``),
``PI_SKIP_VERSION_CHECK=1``, ``PI_TELEMETRY=0``.

In json mode Pi exits 0 whatever happened, so the parser judges the end from the stream: the
last assistant message's ``stopReason`` (``stop`` | ``toolUse`` | ``error`` + ``errorMessage``)
and, when Pi retried, ``auto_retry_end`` (``success: false`` = it gave up). A retried stream
re-sends text the user already saw; :class:`~baton.agents.gemini.TextReplay` swallows the
repeat. Pi accepts a stream that ends without a finish reason as a normal answer; the only
trace is a final message without any token usage, which the parser reports as a truncated
answer (``worker_error``).
"""

from __future__ import annotations

import json
from typing import Any

from baton.agents.base import Launch, Turn
from baton.agents.classify import classify
from baton.agents.gemini import TextReplay
from baton.agents.stream import as_dict, clip, json_object, relative, unparsed
from baton.agents.worker_mcp import WorkerMcp, unsupported
from baton.config.profiles import Profile
from baton.core import events
from baton.core.events import Event, EventType
from baton.core.usage import Usage

QUIET_ENV = {"PI_OFFLINE": "1", "PI_SKIP_VERSION_CHECK": "1", "PI_TELEMETRY": "0"}
#: Prompts longer than this (in bytes) go on stdin instead of argv (Linux caps one at 128 KiB).
ARGV_PROMPT_LIMIT = 100_000
OUTPUT_CHARS = 2000
INPUT_CHARS = 200
PATH_KEYS = ("path", "file_path", "filePath")


def _content_text(content: object) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        str(c.get("text") or "") for c in content if isinstance(c, dict) and c.get("type") == "text"
    )


def safe_prompt(prompt: str) -> str:
    """Pi reads an argument starting with ``-`` as a flag and one with ``@`` as a file to attach;
    a leading space keeps such a prompt a prompt."""
    return " " + prompt if prompt.startswith(("-", "@")) else prompt


class PiParser:
    """Maps ``pi --mode json`` lines to Baton's events."""

    def __init__(self, cwd: str | None = None) -> None:
        self.cwd = cwd  # learnt from the ``session`` line when not given
        self.ended = False
        self.session_id: str | None = None
        self.text = TextReplay()
        self._last: dict[str, Any] | None = None  # the last assistant message
        self._agent_ended = False
        self._retry_failed: str | None = None
        self._usage = Usage()  # the running total of the assistant messages' usage

    def feed(self, line: str) -> list[Event]:
        obj = json_object(line)
        if obj is None:
            return unparsed(line, "pi", "info")
        match obj.get("type"):
            case "session":
                self.session_id = str(obj.get("id") or "") or None
                self.cwd = self.cwd or (str(obj["cwd"]) if obj.get("cwd") else None)
                return (
                    [Event(EventType.SESSION, {"id": self.session_id})] if self.session_id else []
                )
            case "agent_start":
                self._agent_ended = False
                return []
            case "message_update":
                return self._update(obj.get("assistantMessageEvent"))
            case "message_end":
                return self._message_end(obj.get("message"))
            case "tool_execution_start":
                return self._tool_start(obj)
            case "tool_execution_end":
                return self._tool_end(obj)
            case "agent_end":
                self._agent_ended = True
                return []
            case "auto_retry_start":
                self.text.restart()
                message = (
                    f"retrying ({obj.get('attempt')}/{obj.get('maxAttempts')}) after: "
                    f"{obj.get('errorMessage')}"
                )
                return [Event(EventType.LOG, {"level": "warning", "message": message})]
            case "auto_retry_end":
                if obj.get("success") is False:
                    self._retry_failed = str(obj.get("finalError") or "")
                    return self._fail(self._retry_failed)
                self._retry_failed = None
                return []
            case _:
                return []

    def _update(self, event: object) -> list[Event]:
        if not isinstance(event, dict) or event.get("type") != "text_delta":
            return []
        shown = self.text.feed(str(event.get("delta") or ""))
        return [events.text(shown, delta=True)] if shown else []

    def _message_end(self, message: object) -> list[Event]:
        if not isinstance(message, dict) or message.get("role") != "assistant":
            return []
        self._last = message
        if message.get("stopReason") == "toolUse":
            self.text.boundary()
        usage = as_dict(message.get("usage"))
        if not usage:
            return []
        # Pi counts cache reads and writes apart from input; its cost is 0 for a model it
        # knows no price of (then Baton estimates).
        total = as_dict(usage.get("cost")).get("total")
        message_usage = Usage.of(
            input=int(usage.get("input") or 0) + int(usage.get("cacheWrite") or 0),
            cached_input=usage.get("cacheRead"),
            output=usage.get("output"),
            cost=total if isinstance(total, int | float) and total > 0 else None,
        )
        self._usage = self._usage + message_usage
        data = self._usage.to_json()
        if message.get("model"):
            data["model"] = str(message["model"])  # Pi names it nowhere else
        return [Event(EventType.USAGE, data)]

    def _tool_start(self, obj: dict[str, Any]) -> list[Event]:
        name = str(obj.get("toolName") or "tool")
        args = as_dict(obj.get("args"))
        files = [
            relative(str(args[k]), self.cwd) for k in PATH_KEYS if isinstance(args.get(k), str)
        ][:1]
        summary = files[0] if files else str(args.get("command") or "")
        if not summary and args:
            summary = json.dumps(args)
        data = {"name": name, "input": clip(summary, INPUT_CHARS), "files": files}
        return [Event(EventType.TOOL, data)]

    def _tool_end(self, obj: dict[str, Any]) -> list[Event]:
        result = as_dict(obj.get("result"))
        data = {
            "name": str(obj.get("toolName") or "tool"),
            "ok": not obj.get("isError"),
            "output": clip(_content_text(result.get("content")), OUTPUT_CHARS),
        }
        return [Event(EventType.TOOL_RESULT, data)]

    def _fail(self, raw: str) -> list[Event]:
        if self.ended:
            return []
        self.ended = True
        message = raw or "Pi reported an error without a message"
        if message.strip().lower() == "terminated":
            message = "the model's stream broke off (terminated); the answer is incomplete"
        found = classify(message)
        return [
            events.error(
                str(found.kind), message, retry_after=found.retry_after, resets_at=found.resets_at
            )
        ]

    def finish(self, exit_code: int | None, stderr_tail: str) -> list[Event]:
        if self.ended:
            return []
        last = self._last or {}
        reason = last.get("stopReason")
        if reason == "error" or reason == "aborted":
            return self._fail(str(last.get("errorMessage") or f"the model request {reason}"))
        usage = as_dict(last.get("usage"))
        if self._agent_ended and reason in ("stop", "length"):
            text = _content_text(last.get("content")).strip()
            if usage and not usage.get("totalTokens") and not usage.get("output"):
                self.ended = True
                message = (
                    "the model's stream ended without a finish reason or token usage; "
                    f"the answer is likely truncated: {clip(text, 200)!r}"
                )
                return [events.error("worker_error", message)]
            self.ended = True
            return [Event(EventType.FINAL, {"text": text})]
        self.ended = True
        how = f"exit code {exit_code}" if exit_code is not None else "an unknown exit status"
        message = f"Pi stopped with {how} before the model finished"
        lines = [ln for ln in stderr_tail.strip().splitlines() if ln.strip()]
        if lines:
            message += ": " + clip(lines[-1].strip(), 500)
        kind = classify(stderr_tail).kind if lines else "worker_error"
        return [events.error(str(kind), message, exit_code=exit_code)]


class PiAdapter:
    """Provider ``pi``: ``pi --mode json --offline [--provider …] [--model …] [--session …] -p``.

    The prompt follows ``-p``, or comes on stdin when it is over :data:`ARGV_PROMPT_LIMIT`.
    """

    provider = "pi"

    def launch(self, turn: Turn, profile: Profile) -> Launch:
        env = dict(profile.env)
        if profile.config_dir:
            env["PI_CODING_AGENT_DIR"] = profile.config_dir
        env.update(QUIET_ENV)
        notes = (unsupported("Pi"),) if WorkerMcp.of(profile) is not None else ()
        argv = [profile.binary or "pi", "--mode", "json", "--offline"]
        model = turn.model or profile.model
        provider = profile.options.get("provider")
        if provider and not (model and "/" in model):
            argv += ["--provider", str(provider)]
        if model:
            argv += ["--model", model]
        if turn.session_id:
            argv += ["--session", turn.session_id]
        if len(turn.prompt.encode()) > ARGV_PROMPT_LIMIT:
            argv.append("-p")  # no message: Pi takes piped stdin as the prompt
            return Launch(argv=argv, env=env, cwd=turn.cwd, stdin=turn.prompt, notes=notes)
        argv += ["-p", safe_prompt(turn.prompt)]
        return Launch(argv=argv, env=env, cwd=turn.cwd, notes=notes)

    def parser(self) -> PiParser:
        return PiParser()
