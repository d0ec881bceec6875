"""The fake agent: a real program that follows a JSON script, so every path can be tested.

Run as ``python -m baton.agents.fake_agent --prompt-file F [--resume ID] [--model M]``.
The script (:mod:`baton.agents.fake_script`: where it comes from, its steps) is played in
the working folder. File paths are relative to the working folder and must stay inside it
(the exceptions, test plumbing: ``spawn_sleeper``'s pid file may be an absolute path
anywhere, and ``escape`` tries to read or append to any path, saying what came of it, for
the sandbox's tests).

Output is one JSON object per line on stdout, flushed per line, in the fake agent's own wire
format (``session``, ``delta``, ``tool``, ``tool_result``, ``usage``, ``question``,
``error``, ``done``), which :mod:`baton.agents.fake` maps to Baton's events. ``done`` is the
end marker; ``ask`` ends the turn with a ``question`` instead, and ``end_turn`` ends it with
``done`` early (a later resumed turn — reply, repair — plays the steps after it).

Sessions live in ``$BATON_TASK_DIR/fake-sessions/<id>.json`` (script and position); a turn
with ``--resume ID`` continues after the step where the previous turn stopped, starting with
``reply: <prompt>`` when that step was an ``ask`` (the position is saved after each step,
so a turn Baton stopped resumes after the last step it finished). A resumed prompt with a
script of its own starts that script instead.

With ``BATON_FAKE_RUNLOG`` naming a file, each run first appends a line about itself to it
(see :mod:`baton.agents.fake_runlog`).

Exit codes: 0 done or asked (also after an ``error`` step with ``"exit": 0``), 1 a failed
step or rate limit, 2 a broken script, ``crash``'s code for a crash.
"""

from __future__ import annotations

import argparse
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any, NoReturn

from baton.agents.fake_runlog import log_run
from baton.agents.fake_script import (
    FENCE,
    BrokenScript,
    Step,
    default_script,
    parse_script,
    script_for,
)
from baton.errors import BatonError


class StepFailed(BatonError):
    """A step could not be done (a missing file, an edit whose ``old`` text is absent…)."""


# -- running it ------------------------------------------------------------------------------


def emit(obj: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


class Session:
    """One fake conversation: its script, where it stopped, and where that is stored."""

    def __init__(self, store: Path, sid: str, script: dict[str, Any], position: int = 0):
        self.store = store
        self.id = sid
        self.script = script
        self.position = position
        self.awaiting_reply = False

    @property
    def path(self) -> Path:
        return self.store / f"{self.id}.json"

    def save(self) -> None:
        self.store.mkdir(parents=True, exist_ok=True)
        state = {
            "id": self.id,
            "script": self.script,
            "position": self.position,
            "awaiting_reply": self.awaiting_reply,
        }
        tmp = self.path.with_suffix(".tmp")
        tmp.write_text(json.dumps(state), encoding="utf-8")
        os.replace(tmp, self.path)

    @classmethod
    def load(cls, store: Path, sid: str) -> Session:
        if not re.fullmatch(r"[0-9a-fA-F-]{1,64}", sid):
            raise StepFailed(f"not a fake session id: {sid!r}")
        try:
            state = json.loads((store / f"{sid}.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            raise StepFailed(f"no fake session {sid} in {store}") from None
        session = cls(store, sid, state["script"], int(state["position"]))
        session.awaiting_reply = bool(state.get("awaiting_reply"))
        return session


class Player:
    """Plays a session's remaining steps in ``cwd``."""

    def __init__(self, session: Session, cwd: Path) -> None:
        self.session = session
        self.cwd = cwd.resolve()
        self.said: list[str] = []

    def inside(self, rel: str) -> Path:
        path = Path(os.path.realpath(self.cwd / rel))
        if path != self.cwd and self.cwd not in path.parents:
            raise StepFailed(f"refusing {rel!r}: outside the working folder {self.cwd}")
        return path

    def tool(self, name: str, paths: list[str], action: Any) -> None:
        emit({"type": "tool", "name": name, "path": paths[0], "paths": paths})
        try:
            output = action()
        except StepFailed as exc:
            emit({"type": "tool_result", "name": name, "ok": False, "output": str(exc)})
            raise
        except OSError as exc:
            message = f"{name} {paths[0]}: {exc.strerror or exc}"
            emit({"type": "tool_result", "name": name, "ok": False, "output": message})
            raise StepFailed(message) from None
        emit({"type": "tool_result", "name": name, "ok": True, "output": output or "ok"})

    def say(self, text: str, chunks: int, delay: float) -> None:
        size = max(1, math.ceil(len(text) / chunks))
        pieces = [text[i : i + size] for i in range(0, len(text), size)] or [""]
        for i, piece in enumerate(pieces):
            if i and delay:
                time.sleep(delay)
            emit({"type": "delta", "text": piece})
        self.said.append(text)

    def write(self, rel: str, content: str) -> str:
        path = self.inside(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content, encoding="utf-8")
        return f"wrote {len(content)} characters"

    def edit(self, rel: str, old: str, new: str) -> str:
        path = self.inside(rel)
        content = path.read_text(encoding="utf-8")
        if old not in content:
            raise StepFailed(f"edit {rel}: the text to replace is not in the file: {old!r}")
        path.write_text(content.replace(old, new, 1), encoding="utf-8")
        return "edited"

    def append(self, rel: str, text: str) -> str:
        path = self.inside(rel)
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as f:
            f.write(text)
        return "appended"

    def delete(self, rel: str) -> str:
        self.inside(rel).unlink()
        return "deleted"

    def rename(self, old: str, new: str) -> str:
        target = self.inside(new)
        target.parent.mkdir(parents=True, exist_ok=True)
        self.inside(old).rename(target)
        return f"renamed to {new}"

    def spawn_sleeper(self, rel: str) -> str:
        # The pid file is test plumbing, not a worker's edit: an absolute path may be anywhere.
        path = Path(rel) if os.path.isabs(rel) else self.inside(rel)
        sleep = shutil.which("sleep")
        argv = [sleep, "600"] if sleep else [sys.executable, "-c", "import time; time.sleep(600)"]
        child = subprocess.Popen(
            argv,
            start_new_session=True,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        path.write_text(str(child.pid), encoding="utf-8")
        return f"started sleeper {child.pid}"

    def escape(self, target: str, content: str | None) -> str:
        """Try to read (``content`` None) or append to ``target``, a path anywhere (a glob for
        a read): what an agent escaping its checkout would do. Never fails; says what came of
        it, so a test can check the sandbox stopped it."""
        try:
            found = sorted(glob.glob(target)) if content is None else [target]
            if not found:
                raise FileNotFoundError(f"nothing matches {target}")
            if content is None:
                text = Path(found[0]).read_text(encoding="utf-8")
                return f"escape {target}: read {len(text)} characters"
            with open(target, "a", encoding="utf-8") as f:
                f.write(content)
            return f"escape {target}: written"
        except OSError as exc:
            return f"escape {target}: refused ({exc.strerror or exc})"

    def stream(self, count: int, rate: float, size: int) -> None:
        start = time.monotonic()
        for i in range(count):
            due = start + i / rate
            now = time.monotonic()
            if due > now:
                time.sleep(due - now)
            stamp = f"{time.time():.6f} "
            emit({"type": "delta", "text": stamp + "x" * max(0, size - len(stamp))})

    def run(self) -> int:
        """Play steps from the session's position; return the exit code."""
        session = self.session
        steps: list[Step] = session.script["steps"]
        while session.position < len(steps):
            step = steps[session.position]
            session.position += 1
            code = self.step(step)
            if code is not None:
                return code
            session.save()  # a turn stopped from outside resumes after its last step done
        session.save()
        summary = session.script.get("summary") or "".join(self.said) or "done"
        emit({"type": "done", "result": summary})
        return 0

    def step(self, step: Step) -> int | None:
        """Do one step; an exit code when the turn ends here, else None."""
        session = self.session
        match step:
            case {"say": str(text)}:
                self.say(text, int(step.get("chunks", 1)), float(step.get("delay", 0)))
            case {"write": str(rel)}:
                self.tool("write", [rel], lambda: self.write(rel, step.get("content", "")))
            case {"edit": str(rel)}:
                self.tool("edit", [rel], lambda: self.edit(rel, step["old"], step["new"]))
            case {"append": str(rel)}:
                self.tool("append", [rel], lambda: self.append(rel, step.get("text", "")))
            case {"delete": str(rel)}:
                self.tool("delete", [rel], lambda: self.delete(rel))
            case {"rename": [str(old), str(new)]}:
                self.tool("rename", [old, new], lambda: self.rename(old, new))
            case {"read": str(rel)}:
                self.tool("read", [rel], lambda: self.inside(rel).read_text(encoding="utf-8"))
            case {"sleep": seconds}:
                time.sleep(float(seconds))
            case {"end_turn": str(text)}:
                # The turn ends as if the work were done; a resumed turn (reply, repair)
                # goes on with the next step.
                session.save()
                emit({"type": "done", "result": text or "".join(self.said) or "done"})
                return 0
            case {"ask": str(question)}:
                session.awaiting_reply = True
                session.save()
                emit({"type": "question", "text": question})
                return 0
            case {"rate_limit": dict(limit)}:
                session.save()
                now = time.time()
                event: dict[str, Any] = {"type": "error", "kind": "rate_limit"}
                if "resets_in" in limit:
                    event["resets_at"] = now + float(limit["resets_in"])
                    event["message"] = f"usage limit reached; resets in {limit['resets_in']} s"
                else:
                    event["retry_after"] = float(limit["retry_after"])
                    event["resets_at"] = now + float(limit["retry_after"])
                    event["message"] = f"rate limited; retry after {limit['retry_after']} s"
                emit(event)
                return 1
            case {"error": dict(err)}:
                session.save()
                kind = str(err.get("kind", "worker_error"))
                event = {"type": "error", "kind": kind, "message": str(err.get("message", ""))}
                if err.get("session_lost"):  # as a CLI asked to resume a session it lost
                    event["session_lost"] = True
                emit(event)
                return int(step.get("exit", 1))
            case {"hang": True}:
                session.save()
                while True:
                    time.sleep(3600)
            case {"crash": int(code)}:
                session.save()
                print(f"fake agent: crashing with exit code {code}", file=sys.stderr, flush=True)
                return code
            case {"spawn_sleeper": str(rel)}:
                self.tool("spawn_sleeper", [rel], lambda: self.spawn_sleeper(rel))
            case {"escape": str(target)}:
                self.say(self.escape(target, step.get("content")) + "\n", 1, 0)
            case {"stream": int(count)}:
                self.stream(count, float(step.get("rate", 100)), int(step.get("size", 64)))
            case {"usage": dict(usage)}:
                session.save()  # reported once: a turn stopped on it resumes after it
                emit(
                    {
                        "type": "usage",
                        "input": int(usage.get("input", 0)),
                        "cached": int(usage.get("cached", 0)),
                        "output": int(usage.get("output", 0)),
                        "reasoning": usage.get("reasoning"),
                        "cost": usage.get("cost"),
                    }
                )
            case _:  # pragma: no cover - parse_script refuses these
                raise BrokenScript(f"unknown step {json.dumps(step)}")
        return None


# -- the program -----------------------------------------------------------------------------


def _fail(kind: str, message: str, code: int) -> NoReturn:
    emit({"type": "error", "kind": kind, "message": message})
    print(f"fake agent: {message}", file=sys.stderr, flush=True)
    sys.exit(code)


def _session_store() -> Path:
    task_dir = os.environ.get("BATON_TASK_DIR")
    base = Path(task_dir) if task_dir else Path(tempfile.gettempdir()) / "baton-fake"
    return base / "fake-sessions"


def start(prompt: str, resume: str | None, model: str | None) -> Session:
    """The session this turn plays: a new one, or the resumed one (maybe with a new script)."""
    store = _session_store()
    fenced = FENCE.search(prompt)
    if resume is None:
        session = Session(store, str(uuid.uuid4()), script_for(prompt))
        emit({"type": "session", "id": session.id, "model": model, "resumed": False})
        return session
    session = Session.load(store, resume)
    emit({"type": "session", "id": session.id, "model": model, "resumed": True})
    if fenced:  # a follow-up that brings its own script (steer, repair)
        session.script, session.position = parse_script(fenced.group(1)), 0
    elif session.awaiting_reply:
        emit({"type": "delta", "text": f"reply: {prompt}"})
    elif session.position >= len(session.script["steps"]):
        session.script, session.position = default_script(prompt), 0
    session.awaiting_reply = False
    return session


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m baton.agents.fake_agent")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--prompt-file", help="read the prompt from this file")
    source.add_argument("--prompt", help="the prompt itself")
    parser.add_argument("--resume", metavar="ID", help="continue this session")
    parser.add_argument("--model", help="reported in the session event")
    args = parser.parse_args(argv)
    log_run(args.resume, args.prompt_file)
    try:
        if args.prompt_file:
            prompt = Path(args.prompt_file).read_text(encoding="utf-8")
        else:
            prompt = args.prompt if args.prompt is not None else sys.stdin.read()
    except OSError as exc:
        _fail("worker_error", f"cannot read the prompt: {exc.strerror or exc}", 2)
    try:
        session = start(prompt, args.resume, args.model)
        return Player(session, Path.cwd()).run()
    except BrokenScript as exc:
        _fail("worker_error", f"broken fake script: {exc}", 2)
    except StepFailed as exc:
        _fail("worker_error", str(exc), 1)


if __name__ == "__main__":
    sys.exit(main())
