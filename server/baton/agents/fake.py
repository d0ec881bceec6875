"""The fake agent's adapter (provider ``fake``): launches :mod:`baton.agents.fake_agent`.

The prompt goes to a file in the task's folder (never through a shell or argv); the fake
agent keeps its sessions under ``$BATON_TASK_DIR/fake-sessions``. The script can come from
the prompt itself, from ``profile.options["script"]`` or from ``BATON_FAKE_SCRIPT`` in the
profile's env (see :mod:`baton.agents.fake_script` for the script format).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from baton.agents.base import Launch, Turn
from baton.agents.fake_runlog import ENV as RUNLOG
from baton.agents.stream import json_object, unparsed
from baton.config.profiles import Profile
from baton.core import events
from baton.core.events import Event, EventType
from baton.core.usage import Usage


def write_prompt(turn: Turn, stem: str = "prompt") -> Path:
    """Write the turn's prompt to a fresh file in its task folder (a temp folder if none)."""
    folder = Path(turn.task_dir) if turn.task_dir else Path(tempfile.mkdtemp(prefix="baton-"))
    folder = folder / "prompts"
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{stem}-{time.time_ns()}-{turn.reason}.txt"
    path.write_text(turn.prompt, encoding="utf-8")
    return path


class FakeParser:
    """Maps the fake agent's JSON lines to Baton's events."""

    def __init__(self) -> None:
        self.ended = False  # an end marker, a question or an error came

    def feed(self, line: str) -> list[Event]:
        obj = json_object(line)
        if obj is None:
            return unparsed(line, "unparsed")
        return self._map(obj)

    def _map(self, obj: dict[str, Any]) -> list[Event]:
        data: dict[str, Any]
        match obj.get("type"):
            case "session":
                return [
                    Event(EventType.SESSION, {"id": str(obj.get("id")), "model": obj.get("model")})
                ]
            case "delta":
                return [events.text(str(obj.get("text", "")), delta=True)]
            case "tool":
                paths = [str(p) for p in obj.get("paths") or [obj.get("path")] if p]
                data = {"name": str(obj.get("name", "")), "input": " ".join(paths), "files": paths}
                return [Event(EventType.TOOL, data)]
            case "tool_result":
                data = {
                    "name": str(obj.get("name", "")),
                    "ok": bool(obj.get("ok", True)),
                    "output": str(obj.get("output", "")),
                }
                return [Event(EventType.TOOL_RESULT, data)]
            case "usage":
                used = Usage.of(
                    input=obj.get("input", 0),
                    cached_input=obj.get("cached", 0),
                    output=obj.get("output", 0),
                    reasoning=obj.get("reasoning"),
                    cost=obj.get("cost"),
                )
                return [Event(EventType.USAGE, used.to_json())]
            case "question":
                self.ended = True
                return [Event(EventType.QUESTION, {"text": str(obj.get("text", ""))})]
            case "error":
                self.ended = True
                lost = {"session_lost": True} if obj.get("session_lost") else {}
                return [
                    events.error(
                        str(obj.get("kind") or "worker_error"),
                        str(obj.get("message", "")),
                        retry_after=obj.get("retry_after"),
                        resets_at=obj.get("resets_at"),
                        **lost,
                    )
                ]
            case "done":
                self.ended = True
                return [Event(EventType.FINAL, {"text": str(obj.get("result", ""))})]
            case other:
                message = f"unknown fake event {other!r}"
                return [Event(EventType.LOG, {"level": "warning", "message": message})]

    def finish(self, exit_code: int | None, stderr_tail: str) -> list[Event]:
        if self.ended:
            return []
        self.ended = True
        how = f"exit code {exit_code}" if exit_code is not None else "an unknown exit status"
        message = f"the fake agent stopped with {how} and no end marker"
        if stderr_tail.strip():
            message += f": {stderr_tail.strip()}"
        return [events.error("worker_error", message, exit_code=exit_code)]


class FakeAdapter:
    """Provider ``fake``: Baton's own scripted agent, for tests and demos."""

    provider = "fake"

    def launch(self, turn: Turn, profile: Profile) -> Launch:
        prompt_file = write_prompt(turn)
        python = profile.binary or sys.executable
        argv = [python, "-P", "-m", "baton.agents.fake_agent", "--prompt-file", str(prompt_file)]
        if turn.session_id:
            argv += ["--resume", turn.session_id]
        model = turn.model or profile.model
        if model:
            argv += ["--model", model]
        env = dict(profile.env)
        task_dir = prompt_file.parent.parent
        env["BATON_TASK_DIR"] = str(task_dir)
        script = profile.options.get("script")
        if script:
            env["BATON_FAKE_SCRIPT"] = str(script)
        # What the sandbox must let it see: its prompt and script; and its own state, the
        # sessions (and the run log the crash tests count processes with).
        readable = [str(prompt_file)]
        inherited = env.get("BATON_FAKE_SCRIPT") or os.environ.get("BATON_FAKE_SCRIPT")
        if inherited:  # a script may also come from the broker's own environment
            readable.append(inherited)
        writable = [str(task_dir / "fake-sessions")]
        runlog = env.get(RUNLOG) or os.environ.get(RUNLOG, "")
        if runlog:
            Path(runlog).touch()  # the sandbox can only open a file that exists
            writable.append(runlog)
        return Launch(
            argv=argv,
            env=env,
            cwd=turn.cwd,
            readable=tuple(readable),
            writable=tuple(writable),
        )

    def parser(self) -> FakeParser:
        return FakeParser()
