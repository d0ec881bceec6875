"""``baton adapter check CMD…``: the adapter protocol's contract kit.

It runs a candidate program (what a profile with ``provider = "external"`` would start)
through the cases Baton relies on, in a throwaway git repository, and says which pass:

- ``happy``: a plain request ends with ``final``, after a ``session``, exit 0;
- ``question``: asked to ask first, it ends with ``question``, exit 0;
- ``resume``: a next turn in the session ``happy`` announced ends well, in that session;
- ``error``: a start of an unknown protocol version gets an ``error`` event, a non-zero exit;
- ``garbage``: a start line that is not JSON: the same;
- ``cancel``: SIGTERM to its process group stops all of it within the grace period.

Every line of every case must be a protocol event (``docs/reference/adapter-protocol.md``):
a JSON object of a known type with its fields of the right types, one end event, nothing
after it. A case the candidate ends before it can be tried (``cancel`` on a program that is
done at once) is skipped, not passed.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.agents.external import ENDS, KINDS, PROTOCOL
from baton.cli.render import Output

EXIT_OK, EXIT_FAILED = 0, 1
#: How long the cancel case lets the program stop after SIGTERM.
GRACE = 5.0

_FIELDS: dict[str, dict[str, type | tuple[type, ...]]] = {
    "session": {"id": str},
    "text": {"text": str},
    "tool": {"name": str},
    "tool_result": {"name": str},
    "usage": {},
    "final": {"text": str},
    "question": {"text": str},
    "error": {"kind": str, "message": str},
}
_NUMBERS = ("input", "cached", "output", "reasoning", "cost")


@dataclass
class Run:
    """One run of the candidate: its events, the lines that broke the protocol, its exit."""

    events: list[dict[str, Any]] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    code: int | None = None
    timed_out: bool = False
    stderr: str = ""

    @property
    def end(self) -> str | None:
        ends = [e["type"] for e in self.events if e["type"] in ENDS]
        return ends[0] if len(ends) == 1 else None

    def sessions(self) -> list[str]:
        return [str(e["id"]) for e in self.events if e["type"] == "session"]


def check_line(line: str) -> tuple[dict[str, Any] | None, str | None]:
    """The event on ``line``, or what is wrong with it."""
    try:
        obj = json.loads(line)
    except ValueError:
        return None, f"not JSON: {line[:120]!r}"
    if not isinstance(obj, dict):
        return None, f"not a JSON object: {line[:120]!r}"
    kind = obj.get("type")
    if kind not in KINDS:
        return None, f"unknown type {kind!r} (known: {', '.join(KINDS)})"
    for name, want in _FIELDS[str(kind)].items():
        if not isinstance(obj.get(name), want) or (want is str and not obj[name]):
            return None, f"{kind}: {name!r} must be a non-empty string"
    if kind == "usage":
        for name in _NUMBERS:
            value = obj.get(name)
            if value is not None and (not isinstance(value, int | float) or value < 0):
                return None, f"usage: {name!r} must be a number ≥ 0"
    if kind == "tool" and not isinstance(obj.get("files", []), list):
        return None, "tool: 'files' must be a list of paths"
    return obj, None


def start(cwd: Path, prompt: str, **extra: Any) -> str:
    line = {
        "type": "start", "protocol": PROTOCOL, "task": "check", "prompt": prompt,
        "cwd": str(cwd), "reason": "first", "session": None, "model": None, "files": [],
        "scope": [],
    }  # fmt: skip
    return json.dumps({**line, **extra}) + "\n"


def run_once(argv: list[str], cwd: Path, stdin: str, timeout: float) -> Run:
    run = Run()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(stdin, timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        out, err = proc.communicate()
        run.timed_out = True
    run.code, run.stderr = proc.returncode, err[-2000:]
    _read(run, out)
    return run


def _read(run: Run, out: str) -> None:
    ended = False
    for line in out.splitlines():
        if not line.strip():
            continue
        obj, wrong = check_line(line)
        if obj is None:
            run.broken.append(wrong or line)
            continue
        if ended:
            run.broken.append(f"{obj['type']} after the end event")
        ended = ended or obj["type"] in ENDS
        run.events.append(obj)


def _kill_group(pgid: int) -> None:
    try:
        os.killpg(pgid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _verdict(run: Run, end: str, *, code_zero: bool) -> str | None:
    """None when ``run`` kept the protocol and ended with ``end``; else what went wrong."""
    if run.timed_out:
        return "did not end in time"
    if run.broken:
        return "; ".join(run.broken[:3])
    if not run.events:
        said = run.stderr.strip().splitlines()[-1:] or ["nothing"]
        return f"no protocol event (exit code {run.code}; stderr: {said[0][:160]})"
    if run.end != end:
        got = [e["type"] for e in run.events if e["type"] in ENDS]
        return f"ended with {got or 'no end event'}, wanted one {end!r}"
    if code_zero and run.code != 0:
        return f"exit code {run.code} after {end!r}"
    if not code_zero and run.code == 0:
        return "exit code 0 after an error"
    return None


def check(argv: list[str], timeout: float) -> list[dict[str, Any]]:
    """Run every case; one ``{case, result: pass|fail|skip, why}`` each."""
    results: list[dict[str, Any]] = []
    folder = Path(tempfile.mkdtemp(prefix="baton-adapter-check-"))
    try:
        repo = folder / "repo"
        repo.mkdir()
        (repo / "README.md").write_text("A throwaway repository for an adapter check.\n")
        for args in (["init", "-q"], ["add", "."], ["commit", "-q", "-m", "init"]):
            subprocess.run(
                ["git", "-c", "user.name=check", "-c", "user.email=check@localhost", *args],
                cwd=repo,
                check=True,
                capture_output=True,
            )

        def case(name: str, why: str | None, skip: bool = False) -> None:
            result = "skip" if skip else ("pass" if why is None else "fail")
            results.append({"case": name, "result": result, "why": why or ""})

        happy = run_once(argv, repo, start(repo, "Reply with one short sentence."), timeout)
        why = _verdict(happy, "final", code_zero=True)
        if why is None and not happy.sessions():
            why = "no session event before the end"
        case("happy", why)
        ask = "Do nothing yet: ask me one question about what to do, then stop."
        case("question", _verdict(run_once(argv, repo, start(repo, ask), timeout), "question",
                                  code_zero=True))  # fmt: skip
        sessions = happy.sessions()
        if not sessions:
            case("resume", "no session to resume (see happy)", skip=True)
        else:
            line = start(repo, "Go on.", reason="reply", session=sessions[0])
            resumed = run_once(argv, repo, line, timeout)
            why = _verdict(resumed, resumed.end or "final", code_zero=True)
            if why is None and resumed.end not in ("final", "question"):
                why = f"ended with {resumed.end!r}"
            if why is None and any(s != sessions[0] for s in resumed.sessions()):
                why = f"announced session {resumed.sessions()} instead of {sessions[0]}"
            case("resume", why)
        newer = run_once(argv, repo, start(repo, "Hello.", protocol=PROTOCOL + 98), timeout)
        case("error", _verdict(newer, "error", code_zero=False))
        case("garbage", _verdict(run_once(argv, repo, "this is not json\n", timeout), "error",
                                 code_zero=False))  # fmt: skip
        case("cancel", *_cancel(argv, repo, timeout))
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return results


def _cancel(argv: list[str], repo: Path, timeout: float) -> tuple[str | None, bool]:
    """SIGTERM to the group once the program is working; (what went wrong, skipped)."""
    line = start(repo, "Think it through at length, step by step, before you answer.")
    proc = subprocess.Popen(
        argv, cwd=repo, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, text=True, start_new_session=True,
    )  # fmt: skip
    assert proc.stdin is not None and proc.stdout is not None
    proc.stdin.write(line)
    proc.stdin.close()
    first = proc.stdout.readline()  # it is working once it has said something
    if proc.poll() is not None or not first:
        proc.wait()
        proc.stdout.close()
        return "it ended before it could be cancelled", True
    os.killpg(proc.pid, signal.SIGTERM)
    deadline = time.monotonic() + GRACE
    try:
        proc.wait(timeout=GRACE)
    except subprocess.TimeoutExpired:
        _kill_group(proc.pid)
        proc.wait()
        proc.stdout.close()
        return f"still running {GRACE:.0f} s after SIGTERM", False
    proc.stdout.close()
    while _group_alive(proc.pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if _group_alive(proc.pid):
        _kill_group(proc.pid)
        return "a process it started outlived the SIGTERM", False
    return None, False


def _options(args: argparse.Namespace, out: Output) -> list[str] | None:
    """The program's argv; ``--timeout`` and ``--json`` given between ``check`` and ``--``
    are taken (argparse hands everything after ``check`` over as it is)."""
    rest = list(args.argv)
    while rest and rest[0] != "--":
        if rest[0] == "--json":
            out.json_mode = True
        elif rest[0].startswith("--timeout"):
            value = rest.pop(0).partition("=")[2] or (rest.pop(0) if rest else "")
            try:
                args.timeout = float(value)
            except ValueError:
                out.error(f"adapter check: --timeout takes seconds, not {value!r}")
                return None
            continue
        else:
            break
        rest.pop(0)
    rest = rest[1:] if rest[:1] == ["--"] else rest
    # The cases run in a throwaway repository: a path given from here is made absolute.
    return [str(Path(a).resolve()) if os.sep in a and Path(a).exists() else a for a in rest]


async def adapter(args: argparse.Namespace, out: Output) -> int:
    argv = _options(args, out)
    if argv is None:
        return 2
    if not argv:
        out.error("adapter check: name the program to check (baton adapter check -- CMD …)")
        return 2
    import asyncio

    results = await asyncio.to_thread(check, argv, args.timeout)
    ok = all(r["result"] != "fail" for r in results)
    width = max(len(r["case"]) for r in results)
    lines = [f"{r['case']:<{width}}  {r['result'].upper()}  {r['why']}".rstrip() for r in results]
    passed = sum(r["result"] == "pass" for r in results)
    lines.append(f"{passed} of {len(results)} cases pass" + ("" if ok else "; the adapter fails"))
    out.result({"ok": ok, "cases": results}, "\n".join(lines))
    return EXIT_OK if ok else EXIT_FAILED
