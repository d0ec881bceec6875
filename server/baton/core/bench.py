"""A bench suite (``baton bench``): cases run on several workers, and how their runs are judged.

A suite is a mapping (a TOML file read, or the cases a websocket client sends inline):
``name`` (default: the file's stem), ``repair_rounds`` (default 0: a case is judged on the
worker's first answer), and ``case``, a list of tables each with an ``instruction`` and its
``checks`` (argv lists, or ``{name, argv, timeout}`` tables, the shape of the project's
``verify`` step), optionally a ``key`` (default ``case-N``), a ``title``, ``files`` (paths,
``path:A-B``, or ``{path, start, end}``) and a ``scope`` (globs). docs/reference/bench.md is
the format's page.

:func:`parse_suite` reads one and refuses it with every problem said (:class:`SuiteError`);
:func:`verdict` says how one run of a case went from what its task recorded, and
:func:`summarize` turns runs into a worker's line of the table. Pure: no I/O.
"""

from __future__ import annotations

import re
import statistics
import tomllib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from baton.errors import InvalidInput

#: A check's default timeout (seconds), as the project's ``verify`` step has it.
CHECK_TIMEOUT = 300.0
MAX_CASES = 100
MAX_RUNS = 20
_KEY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_LINES = re.compile(r"^(?P<path>.+?):(?P<start>\d+)(?:-(?P<end>\d+))?$")
_SUITE_KEYS = frozenset({"name", "repair_rounds", "case"})
_CASE_KEYS = frozenset({"key", "title", "instruction", "files", "scope", "checks"})


class SuiteError(InvalidInput):
    """The suite cannot be run as written; the message lists every problem."""


@dataclass(frozen=True, slots=True)
class Case:
    key: str
    instruction: str
    title: str = ""
    files: tuple[tuple[str, int | None, int | None], ...] = ()  # (path, start, end)
    scope: tuple[str, ...] = ()
    checks: tuple[dict[str, Any], ...] = ()  # {name, argv, timeout}: the verify step's shape

    def to_json(self) -> dict[str, Any]:
        return {
            "key": self.key,
            "title": self.title,
            "instruction": self.instruction,
            "files": [{"path": p, "start": s, "end": e} for p, s, e in self.files],
            "scope": list(self.scope),
            "checks": [dict(c) for c in self.checks],
        }


@dataclass(frozen=True, slots=True)
class Suite:
    name: str
    cases: tuple[Case, ...]
    repair_rounds: int = 0

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "repair_rounds": self.repair_rounds,
            "case": [c.to_json() for c in self.cases],
        }


def read_toml(text: str, default_name: str) -> Suite:
    """A suite from the text of a TOML file (``default_name``: the file's stem)."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SuiteError(f"not valid TOML: {exc}") from None
    return parse_suite(data, default_name)


def parse_suite(data: Mapping[str, Any], default_name: str = "suite") -> Suite:
    """A suite from its mapping; :class:`SuiteError` naming every problem found."""
    problems: list[str] = []
    extra = sorted(set(data) - _SUITE_KEYS)
    if extra:
        problems.append(f"unknown keys {extra} (a suite has name, repair_rounds, case)")
    name = data.get("name", default_name)
    if not isinstance(name, str) or not _KEY.match(name):
        problems.append(f"name {name!r}: letters, digits, '.', '_' or '-', at most 64")
        name = default_name
    rounds = data.get("repair_rounds", 0)
    if not isinstance(rounds, int) or isinstance(rounds, bool) or not 0 <= rounds <= 5:
        problems.append(f"repair_rounds {rounds!r}: a whole number from 0 to 5")
        rounds = 0
    raw = data.get("case")
    if not isinstance(raw, list) or not raw:
        problems.append("no cases: add one or more [[case]] tables")
        raw = []
    elif len(raw) > MAX_CASES:
        problems.append(f"{len(raw)} cases: at most {MAX_CASES}")
    cases: list[Case] = []
    for i, item in enumerate(raw, start=1):
        case = _case(i, item, problems)
        if case is not None:
            cases.append(case)
    keys = [c.key for c in cases]
    twice = sorted({k for k in keys if keys.count(k) > 1})
    if twice:
        problems.append(f"case keys used twice: {', '.join(twice)}")
    if problems:
        raise SuiteError("; ".join(problems))
    return Suite(name, tuple(cases), rounds)


def _case(i: int, item: Any, problems: list[str]) -> Case | None:
    where = f"case {i}"
    if not isinstance(item, Mapping):
        problems.append(f"{where}: not a table")
        return None
    key = item.get("key", f"case-{i}")
    if isinstance(key, str) and _KEY.match(key):
        where = f"case {key}"
    else:
        problems.append(f"{where}: key {key!r}: letters, digits, '.', '_' or '-', at most 64")
        key = f"case-{i}"
    n = len(problems)
    extra = sorted(set(item) - _CASE_KEYS)
    if extra:
        problems.append(f"{where}: unknown keys {extra}")
    instruction = item.get("instruction")
    if not isinstance(instruction, str) or not instruction.strip():
        problems.append(f"{where}: no instruction")
    title = item.get("title", "")
    if not isinstance(title, str):
        problems.append(f"{where}: title must be text")
    scope = item.get("scope", [])
    if not isinstance(scope, list) or not all(isinstance(s, str) and s for s in scope):
        problems.append(f"{where}: scope must be a list of globs")
        scope = []
    files = _files(where, item.get("files", []), problems)
    checks = _checks(where, item.get("checks", []), problems)
    if len(problems) > n:
        return None
    return Case(str(key), str(instruction), str(title), files, tuple(scope), checks)


def _files(
    where: str, raw: Any, problems: list[str]
) -> tuple[tuple[str, int | None, int | None], ...]:
    if not isinstance(raw, list):
        problems.append(f"{where}: files must be a list")
        return ()
    out: list[tuple[str, int | None, int | None]] = []
    for f in raw:
        path: Any
        start: Any
        end: Any
        if isinstance(f, str):
            m = _LINES.match(f)
            path, start, end = (m["path"], int(m["start"]), m["end"]) if m else (f, None, None)
            end = int(end) if end is not None else start
        elif isinstance(f, Mapping):
            path, start, end = f.get("path"), f.get("start"), f.get("end", f.get("start"))
        else:
            path, start, end = None, None, None
        numbers_ok = all(v is None or (isinstance(v, int) and v >= 1) for v in (start, end))
        if (
            not isinstance(path, str)
            or not path
            or path.startswith("/")
            or not numbers_ok
            or (start is None) != (end is None)
            or (start is not None and end < start)
        ):
            problems.append(
                f"{where}: file {f!r}: a relative path, 'path:A-B' or {{path, start, end}}"
            )
            continue
        out.append((path, start, end))
    return tuple(out)


def _checks(where: str, raw: Any, problems: list[str]) -> tuple[dict[str, Any], ...]:
    if not isinstance(raw, list):
        problems.append(f"{where}: checks must be a list of argv lists")
        return ()
    out: list[dict[str, Any]] = []
    for j, c in enumerate(raw, start=1):
        argv: Any = c
        name: Any = None
        timeout: Any = CHECK_TIMEOUT
        if isinstance(c, Mapping):
            argv, name, timeout = c.get("argv"), c.get("name"), c.get("timeout", CHECK_TIMEOUT)
        if (
            not isinstance(argv, list)
            or not argv
            or not all(isinstance(a, str) and a for a in argv)
        ):
            problems.append(f"{where}: check {j}: argv must be a non-empty list of strings")
            continue
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            problems.append(f"{where}: check {j}: timeout must be a positive number of seconds")
            continue
        if name is not None and (not isinstance(name, str) or not name):
            problems.append(f"{where}: check {j}: name must be text")
            continue
        label = name or " ".join(argv)[:80]
        out.append({"name": str(label), "argv": list(argv), "timeout": float(timeout)})
    return tuple(out)


# ----------------------------------------------------------------------------- judging


#: A task the bench judged: ``passed`` is True/False; None: not counted (still running,
#: or stopped by someone — cancelled, interrupted — which says nothing of the worker).
@dataclass(frozen=True, slots=True)
class Verdict:
    passed: bool | None
    reason: str
    done: bool = True  # False while the task still runs


_WORKING = frozenset({"queued", "preparing", "running", "verifying", "rate_limited"})
_CHANGED = frozenset({"review", "rejected", "applied"})


def verdict(
    state: str, message: str, evidence: Mapping[str, Any] | None, note: str = ""
) -> Verdict:
    """How a run of a case went, from its task's state, message and evidence; ``note`` is
    what the bench itself said of it (it asked a question and was stopped)."""
    if note:
        return Verdict(False, note)
    if state in _WORKING or state == "needs_input":
        return Verdict(None, state, done=False)
    if state in ("cancelled", "interrupted"):
        return Verdict(None, f"{state}: {message}" if message else state)
    if state == "failed":
        return Verdict(False, f"failed: {message}" if message else "failed")
    if state == "answered":
        return Verdict(False, "the worker changed no file (the checks were not run)")
    if state not in _CHANGED:
        return Verdict(None, state, done=False)
    ev = evidence or {}
    checks = [c for c in ev.get("checks") or [] if isinstance(c, Mapping)]
    if not checks:
        unchecked = [str(u) for u in ev.get("unchecked") or []]
        return Verdict(False, "; ".join(unchecked) or "no checks were run")
    failed = [c for c in checks if c.get("exit_code") != 0]
    if not failed:
        return Verdict(True, "checks passed")
    return Verdict(False, "checks failed: " + "; ".join(_label(c) for c in failed))


def _label(check: Mapping[str, Any]) -> str:
    name = check.get("name") or "check"
    if check.get("timed_out"):
        return f"{name} timed out"
    if check.get("error"):
        return f"{name} could not start ({check['error']})"
    return f"{name} failed (exit {check.get('exit_code')})"


@dataclass(frozen=True, slots=True)
class Run:
    """One task of a bench: a case run once on a worker, judged."""

    worker: str
    case: str
    verdict: Verdict
    seconds: float = 0.0
    tokens: int = 0
    cost: float | None = None


@dataclass(frozen=True, slots=True)
class Line:
    """A worker's line of the table: its runs summed."""

    worker: str
    run: int  # runs judged (passed or failed)
    passed: int
    pending: int = 0  # still running
    stopped: int = 0  # cancelled or interrupted: not counted
    median_seconds: float | None = None
    tokens: int = 0
    cost: float | None = None

    @property
    def rate(self) -> float | None:
        return self.passed / self.run if self.run else None

    def to_json(self) -> dict[str, Any]:
        return {
            "worker": self.worker,
            "run": self.run,
            "passed": self.passed,
            "rate": round(self.rate, 3) if self.rate is not None else None,
            "pending": self.pending,
            "stopped": self.stopped,
            "medianSeconds": (
                round(self.median_seconds, 2) if self.median_seconds is not None else None
            ),
            "tokens": self.tokens,
            "cost": round(self.cost, 6) if self.cost is not None else None,
        }


def summarize(runs: Iterable[Run], workers: Sequence[str] = ()) -> list[Line]:
    """One line per worker (in the order of ``workers``, then any other by name): cases
    passed of those judged, the median time and the tokens and cost of the judged runs."""
    by: dict[str, list[Run]] = {w: [] for w in workers}
    for r in runs:
        by.setdefault(r.worker, []).append(r)
    order = list(workers) + sorted(w for w in by if w not in workers)
    lines = []
    for w in order:
        judged = [r for r in by[w] if r.verdict.passed is not None]
        costs = [r.cost for r in judged if r.cost is not None]
        lines.append(
            Line(
                worker=w,
                run=len(judged),
                passed=sum(1 for r in judged if r.verdict.passed),
                pending=sum(1 for r in by[w] if not r.verdict.done),
                stopped=sum(1 for r in by[w] if r.verdict.done and r.verdict.passed is None),
                median_seconds=statistics.median(r.seconds for r in judged) if judged else None,
                tokens=sum(r.tokens for r in judged),
                cost=sum(costs) if costs else None,
            )
        )
    return lines
