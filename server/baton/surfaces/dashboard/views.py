"""The dashboard's JSON and CSV shapes, from tasks and their events. Pure: no I/O.

A task's row (:func:`task_row`: its timeline from its ``state`` events, its tokens and
cost), the per-worker table with a trend per UTC day (:func:`worker_rows`), a task's detail
(:func:`detail`: the transcript the editors show, tool calls, files, checks, review) and the
CSV export (:func:`csv_text`). docs/reference/dashboard.md is the contract.
"""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from baton.core import usage as usage_
from baton.core.events import Event, EventType
from baton.core.lifecycle import SETTLED, TaskState
from baton.core.task import Task, next_moves
from baton.core.transcript import Transcript

#: The windows a snapshot may cover, in seconds.
WINDOWS: dict[str, float] = {
    "1h": 3600.0,
    "6h": 6 * 3600.0,
    "24h": 86400.0,
    "7d": 7 * 86400.0,
    "30d": 30 * 86400.0,
}
DEFAULT_WINDOW = "24h"
#: The longest instruction a row carries.
INSTRUCTION_CHARS = 300

_S = TaskState
#: The bar a state is drawn as on the timeline.
PHASES: dict[str, str] = {
    _S.QUEUED: "queued",
    _S.RATE_LIMITED: "queued",
    _S.PREPARING: "preparing",
    _S.RUNNING: "running",
    _S.NEEDS_INPUT: "running",
    _S.VERIFYING: "verifying",
    _S.REVIEW: "review",
    **{s: "settled" for s in SETTLED},
}
_SETTLED = frozenset(str(s) for s in SETTLED)

CSV_COLUMNS = (
    "id", "title", "worker", "provider", "model", "state", "completion", "created", "settled",
    "elapsed_s", "input_tokens", "cached_tokens", "output_tokens", "reasoning_tokens",
    "total_tokens", "cost_usd", "cost_source",
)  # fmt: skip


def _lean(d: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in d.items() if v is not None and v != "" and v != []}


def phase(state: str) -> str:
    return PHASES.get(state, "running")


def timeline(task: Task, states: Iterable[Event], now: float) -> list[dict[str, Any]]:
    """One segment per state the task was in, from its ``state`` events (in order): the
    last one open (``end`` None) while the task is in it, zero length once settled."""
    current: str | None = None
    start = task.created_at
    out: list[dict[str, Any]] = []
    for e in states:
        if e.type != EventType.STATE:
            continue
        to = str(e.data.get("to") or "")
        if current is None:
            current = str(e.data.get("from") or _S.QUEUED)
        if not to or to == current:
            continue
        out.append({"state": current, "phase": phase(current), "start": start, "end": e.ts})
        current, start = to, e.ts
    if current is None:  # no move yet: the state it was recorded in
        current = str(task.state)
    end: float | None = start if current in _SETTLED else None
    out.append({"state": current, "phase": phase(current), "start": start, "end": end})
    return out


def usage_json(u: usage_.Usage) -> dict[str, Any] | None:
    """Tokens and cost as the page shows them (None: nothing used)."""
    if u.empty:
        return None
    return _lean(
        {
            "input": u.input,
            "cached": u.cached_input,
            "output": u.output,
            "reasoning": u.reasoning,
            "tokens": u.tokens,
            "cost": u.cost,
            "costSource": u.cost_source,
        }
    )


def task_row(task: Task, states: Sequence[Event], now: float | None = None) -> dict[str, Any]:
    """A task as the snapshot and the live ``tasks`` messages carry it."""
    now = time.time() if now is None else now
    segments = timeline(task, states, now)
    started = next((s["start"] for s in segments if s["phase"] != "queued"), None)
    ended = task.settled_at if str(task.state) in _SETTLED else None
    instruction = task.instruction
    if len(instruction) > INSTRUCTION_CHARS:
        instruction = instruction[: INSTRUCTION_CHARS - 1].rstrip() + "…"
    row = {
        "id": task.id,
        "title": task.title or task.instruction.strip().split("\n", 1)[0][:200],
        "instruction": instruction,
        "worker": task.worker,
        "provider": task.provider,
        "model": task.model,
        "root": task.root,
        "group": task.group,
        "state": str(task.state),
        "completion": str(task.completion) if task.completion is not None else None,
        "message": task.message,
        "archived": True if task.archived_at is not None else None,
        "createdAt": task.created_at,
        "updatedAt": task.updated_at,
        "startedAt": started,
        "settledAt": ended,
        "elapsed": round(max(0.0, (ended or now) - task.created_at), 3),
        "timeline": segments,
        "usage": usage_json(usage_.of_task(task.options)),
        "next": next_moves(task),
    }
    return _lean(row)


def _day(ts: float) -> str:
    return time.strftime("%Y-%m-%d", time.gmtime(ts))


def days_between(since: float, now: float) -> list[str]:
    """The UTC days from ``since``'s to ``now``'s, oldest first."""
    out: list[str] = []
    day = since - since % 86400
    while day <= now:
        out.append(_day(day))
        day += 86400
    return out


def _sums(u: usage_.Usage) -> dict[str, Any]:
    """Token counts (zeros kept) and the cost with its source, when there is one."""
    out: dict[str, Any] = {
        "input": u.input,
        "cached": u.cached_input,
        "output": u.output,
        "tokens": u.tokens,
    }
    if u.cost is not None:
        out["cost"] = round(u.cost, 6)
        out["costSource"] = u.cost_source
    return out


def worker_rows(tasks: Sequence[Task], since: float, now: float) -> list[dict[str, Any]]:
    """Per worker (profile): its tasks, tokens, cost, states, and a trend per UTC day."""
    days = days_between(since, now)
    by: dict[str, list[Task]] = {}
    for t in tasks:
        by.setdefault(t.worker, []).append(t)
    rows = []
    for worker, mine in by.items():
        total = usage_.Usage()
        per_day: dict[str, tuple[int, usage_.Usage]] = {d: (0, usage_.Usage()) for d in days}
        states: dict[str, int] = {}
        for t in mine:
            u = usage_.of_task(t.options)
            total = total + u
            states[str(t.state)] = states.get(str(t.state), 0) + 1
            day = _day(t.created_at)
            if day in per_day:
                n, du = per_day[day]
                per_day[day] = (n + 1, du + u)
        trend = [
            {"day": d, "tasks": n, "tokens": du.tokens}
            | ({"cost": round(du.cost, 6)} if du.cost is not None else {})
            for d, (n, du) in per_day.items()
        ]
        rows.append({"worker": worker, "tasks": len(mine), "states": states, **_sums(total)})
        rows[-1]["days"] = trend
    rows.sort(key=lambda r: (-r["tasks"], r["worker"]))
    return rows


def totals(tasks: Sequence[Task]) -> dict[str, Any]:
    total = usage_.Usage()
    for t in tasks:
        total = total + usage_.of_task(t.options)
    return {"tasks": len(tasks), **_sums(total)}


def detail(
    task: Task, events: Sequence[Event], diff: Mapping[str, Any] | None, now: float | None = None
) -> dict[str, Any]:
    """One task in full: its row, transcript, tool calls, files, checks, review, diff."""
    tools: list[dict[str, Any]] = []
    files: dict[str, None] = {}
    checks: list[dict[str, Any]] = []
    review: list[dict[str, Any]] = []
    waiting: dict[str, Any] | None = None  # the last tool call without its result
    for e in events:
        d = e.data
        if e.type == EventType.TOOL:
            touched = [str(f) for f in d.get("files") or []]
            waiting = _lean(
                {
                    "seq": e.seq,
                    "ts": e.ts,
                    "name": str(d.get("name") or "tool"),
                    "input": str(d.get("input") or "")[:2000],
                    "files": touched,
                }
            )
            tools.append(waiting)
            files.update(dict.fromkeys(touched))
        elif e.type == EventType.TOOL_RESULT:
            if waiting is not None:
                waiting["ok"] = bool(d.get("ok", True))
            waiting = None
        elif e.type == EventType.VERIFY:
            checks.append(dict(d))
        elif e.type == EventType.REVIEW:
            review.append(dict(d))
    states = [e for e in events if e.type == EventType.STATE]
    out = {
        "task": task_row(task, states, now),
        "transcript": Transcript.of(task, events).lines,
        "tools": tools,
        "files": list(files),
        "checks": checks,
        "review": review,
        "diff": dict(diff) if diff and diff.get("files") else None,
        "seq": events[-1].seq if events else 0,
    }
    return {k: v for k, v in out.items() if v is not None}


def _iso(ts: float | None) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(ts)) if ts else ""


def csv_text(rows: Sequence[Mapping[str, Any]]) -> str:
    """The CSV export of task rows (as :func:`task_row` makes them), one line each."""
    buf = io.StringIO()
    out = csv.writer(buf, lineterminator="\r\n")
    out.writerow(CSV_COLUMNS)
    for r in rows:
        u = r.get("usage") or {}
        cost = u.get("cost")
        out.writerow(
            [
                r["id"], r.get("title", ""), r.get("worker", ""), r.get("provider", ""),
                r.get("model", ""), r.get("state", ""), r.get("completion", ""),
                _iso(r.get("createdAt")), _iso(r.get("settledAt")), f"{r.get('elapsed', 0):.1f}",
                u.get("input", 0), u.get("cached", 0), u.get("output", 0),
                u.get("reasoning", ""), u.get("tokens", 0),
                f"{cost:.6f}" if isinstance(cost, int | float) else "", u.get("costSource", ""),
            ]
        )  # fmt: skip
    return buf.getvalue()
