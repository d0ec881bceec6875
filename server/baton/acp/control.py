"""The session runner's control channel: a unix socket (mode 0600) in or for the task's folder.

One request per connection: a JSON object on one line, answered by one JSON line::

    {"op": "prompt", "attempt": 2, "text": "…", "reason": "reply"}  → {"ok": true}
    {"op": "cancel"}                                                → {"ok": true, "busy": true}
    {"op": "answer", "id": "p1", "option": "allow"}                 → {"ok": true, "option": {…}}
    {"op": "status"}                       → {"ok": true, "busy": false, "session": "…", …}
    {"op": "stop"}                                                  → {"ok": true}

A refused request answers ``{"ok": false, "error": "…"}``. Where the runner listens is written
to ``acp-runner.json`` in the task's folder (:class:`RunnerRecord`), so any broker finds it.
Both ends are here: :func:`listen` (the runner's) and :func:`call` (a broker's).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from baton.errors import BatonError

RECORD = "acp-runner.json"
#: Unix socket paths longer than this do not fit in ``sockaddr_un`` (108 bytes with the NUL).
MAX_SOCKET_PATH = 100
TIMEOUT = 10.0


class ControlError(BatonError, RuntimeError):
    """The runner could not be reached, or refused the request (the message says why)."""


@dataclass(frozen=True, slots=True)
class RunnerRecord:
    """Where a task's runner listens, and the process to watch for it."""

    socket: str
    pid: int  # the runner's wrapper: its process group, and what an attempt records
    create_time: float
    err_path: str
    started_at: float

    @classmethod
    def load(cls, task_dir: Path) -> RunnerRecord | None:
        try:
            obj = json.loads((task_dir / RECORD).read_text(encoding="utf-8"))
            return cls(**{k: obj[k] for k in cls.__dataclass_fields__})
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def save(self, task_dir: Path) -> None:
        tmp = task_dir / f"{RECORD}.tmp{os.getpid()}"
        tmp.write_text(json.dumps(asdict(self)), encoding="utf-8")
        os.replace(tmp, task_dir / RECORD)


def socket_path(task_dir: Path) -> Path:
    """``<task_dir>/acp.sock``, or a short path in a private runtime folder if that is too long."""
    path = task_dir / "acp.sock"
    if len(str(path)) <= MAX_SOCKET_PATH:
        return path
    base = os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir()
    folder = Path(base) / f"baton-{os.getuid()}"
    digest = hashlib.sha256(str(task_dir).encode()).hexdigest()[:16]
    candidate = folder / f"acp-{digest}.sock"
    if len(str(candidate)) > MAX_SOCKET_PATH:
        folder = Path(tempfile.gettempdir()) / f"baton-{os.getuid()}"
        candidate = folder / f"acp-{digest}.sock"
    folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    return candidate


async def listen(
    path: str, serve: Callable[[dict[str, Any]], Awaitable[dict[str, Any]]]
) -> asyncio.Server:
    """Answer each request at ``path`` (a socket of mode 0600) with ``serve``'s answer."""

    async def one(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            line = await asyncio.wait_for(reader.readline(), TIMEOUT)
            try:
                request = json.loads(line)
                answer = await serve(request if isinstance(request, dict) else {})
            except ValueError:
                answer = {"ok": False, "error": "not a JSON request"}
            writer.write(json.dumps(answer).encode() + b"\n")
            await writer.drain()
        except (OSError, TimeoutError):
            pass
        finally:
            writer.close()

    server = await asyncio.start_unix_server(one, path=path)
    os.chmod(path, 0o600)
    return server


async def call(
    path: str | Path, request: dict[str, Any], timeout: float = TIMEOUT
) -> dict[str, Any]:
    """Send one request to the runner at ``path``; its answer, or :class:`ControlError`."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_unix_connection(str(path)), timeout)
    except (OSError, TimeoutError) as exc:
        raise ControlError(f"the task's ACP runner does not answer at {path}: {exc}") from None
    try:
        writer.write(json.dumps(request).encode() + b"\n")
        await writer.drain()
        line = await asyncio.wait_for(reader.readline(), timeout)
    except (OSError, TimeoutError) as exc:
        raise ControlError(f"the task's ACP runner did not answer: {exc!r}") from None
    finally:
        writer.close()
        with contextlib.suppress(Exception):
            await writer.wait_closed()
    try:
        answer = json.loads(line)
    except ValueError:
        raise ControlError("the task's ACP runner closed the connection") from None
    if not isinstance(answer, dict):
        raise ControlError(f"the task's ACP runner answered {answer!r}")
    if not answer.get("ok"):
        raise ControlError(str(answer.get("error") or "refused"))
    return answer
