"""The CLI's commands that follow a task's events (``run``, ``watch``, ``reply``, ``steer``,
``retry``, ``handoff``, ``cancel``) or print tasks, attempts, events and diffs rebuilt from
the broker's answers (``tasks``, ``inspect``, ``diff``): websocket clients, like
:mod:`baton.cli.remote`.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any

from baton.cli.remote import (
    EXIT_FAILED,
    EXIT_OK,
    UsageError,
    any_broker,
    delegate_params,
    folder_of,
    read_text,
    redirected,
)
from baton.cli.render import Output, describe_event, print_event, print_outcome
from baton.core.diff import FileDiff
from baton.core.events import Event, EventType
from baton.core.task import Attempt, Task
from baton.surfaces.ws import answers
from baton.surfaces.ws.client import BrokerError, Client, broker_by_pid, connect_for, events_until


@asynccontextmanager
async def broker(args: argparse.Namespace) -> AsyncIterator[Client]:
    client = await connect_for(folder_of(args), any_broker=any_broker(args))
    try:
        yield client
    finally:
        await client.close()


async def call(c: Client, method: str, **params: Any) -> Any:
    """Call the broker; a task supervised by another broker is asked of that one."""
    try:
        return await c.call(method, **params)
    except BrokerError as exc:
        pid = redirected(exc, method)
        other = broker_by_pid(pid) if pid is not None else None
        if other is None:
            raise
    async with await Client.connect(other) as c2:
        return await c2.call(method, **params)


#: ``watch`` woke because a task hit a rate limit (it runs again by itself): watch again.
EXIT_HELD = 3

#: States in which a task no longer needs its agent: ``watch`` and ``run`` stop there.
STOP = answers.STOP
GOOD_ENDS = frozenset({"review", "answered", "needs_input"})
STARTED_NOT = frozenset({"queued", "preparing"})


async def follow(c: Client, task_id: str, out: Output) -> Task:
    """Print a task's progress until it stops needing the agent; print and return it."""
    status = None
    if not out.json_mode and out.console.is_terminal:
        status = out.console.status(task_id)
        status.start()

    def show(event: Event, history: bool) -> None:
        print_event(out, event)
        if status is not None:
            status.update(f"{task_id} {describe_event(event)}")

    try:
        await events_until(c, [task_id], lambda s: s in STOP, show)
    finally:
        if status is not None:
            status.stop()
    task = Task.from_json((await call(c, "get", id=task_id))["task"])
    if out.json_mode:
        res = await call(c, "diff", id=task_id)
        diff = {"final": res["final"], "files": res["files"]}
        out.json_doc({"task": answers.woke(task), "diff": diff})
    else:
        print_outcome(out, task)
    return task


async def run(args: argparse.Namespace, out: Output) -> int:
    params = delegate_params(args)
    async with broker(args) as c:
        task_id = (await call(c, "delegate", **params))["task"]["id"]
        if args.detach:
            # Return once the agent runs (detached: it outlives any broker).
            states, _ = await events_until(
                c, [task_id], lambda s: s not in STARTED_NOT, lambda e, h: None, timeout=60.0
            )
            out.result({"id": task_id, "state": states[task_id]}, task_id)
            return EXIT_OK
        final = await follow(c, task_id, out)
    return EXIT_OK if str(final.state) in GOOD_ENDS else EXIT_FAILED


async def watch(args: argparse.Namespace, out: Output) -> int:
    """One line per lifecycle event; exit 0 when a task settles, 3 when one hits a rate limit
    while watched (it runs again by itself once the limit resets), 1 on timeout."""
    lines: list[dict[str, Any]] = []
    woke_by: dict[str, Event] = {}  # the live event that woke the watch, per task

    def show(event: Event, history: bool) -> None:
        if event.type != EventType.STATE:
            return
        lines.append(event.to_json())
        if not history and answers.woke_by(event):
            woke_by.setdefault(event.task_id, event)
        if not out.json_mode:
            d = event.data
            when = datetime.fromtimestamp(event.ts).strftime("%H:%M:%S")
            reason = f"  {d.get('reason')}" if d.get("reason") else ""
            out.console.print(
                f"{when} {event.task_id} {d.get('from') or '-'} → {d.get('to')}{reason}",
                markup=False,
                highlight=False,
            )
            out.console.file.flush()

    async with broker(args) as c:
        states, ready = await events_until(
            c, args.ids, lambda s: s in STOP, show, args.timeout, lambda s: s in answers.WAKES
        )
        ids = [ready] if ready is not None else list(states)
        tasks = {i: Task.from_json((await call(c, "get", id=i))["task"]) for i in ids}
    if ready is None:
        if out.json_mode:
            brief = [answers.line(t) for t in tasks.values()]
            out.json_doc({"error": "timeout", "tasks": brief, "events": lines})
        else:
            out.err.print(f"timeout: no task settled within {args.timeout:g} s")
        return EXIT_FAILED
    event = woke_by.get(ready)
    held = event is not None and event.data.get("to") == "rate_limited"
    woke = answers.woke(tasks[ready], event if held else None)
    if out.json_mode:
        out.json_doc({"task": woke, "events": lines})
    else:
        msg = f": {woke['message']}" if woke.get("message") else ""
        wait = f"; runs again in {woke['retryIn']} s" if "retryIn" in woke else ""
        out.console.print(
            f"task {woke['id']} is {woke['state']}{msg}{wait}; next: {', '.join(woke['next'])}",
            markup=False,
            highlight=False,
        )
    return EXIT_HELD if held else EXIT_OK


async def tasks(args: argparse.Namespace, out: Output) -> int:
    async with broker(args) as c:
        res = await call(
            c,
            "tasks",
            state=args.state,
            text=args.query,
            worker=args.worker,
            group=args.group,
            since=_since(args.since),
            limit=args.limit,
            archived=True if args.archived else None,
            full=None if out.json_mode else True,
        )
    if out.json_mode:
        out.json_doc(res["tasks"])
    else:
        out.tasks([Task.from_json(t) for t in res["tasks"]])
    return EXIT_OK


def _since(value: str | None) -> float | None:
    """``--since 2h`` / ``30m`` / ``45s`` / ``3d`` → a timestamp."""
    if not value:
        return None
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    try:
        amount = float(value[:-1]) * units[value[-1]]
    except (KeyError, ValueError):
        raise UsageError(f"--since {value}: expected e.g. 30m, 2h or 3d") from None
    return time.time() - amount


async def inspect(args: argparse.Namespace, out: Output) -> int:
    """``--json``: the broker's ``inspect`` answer (short, plus the ``--detail`` sections);
    for people: everything, from the whole record, every event and the diff."""
    detail = _details(args.detail)
    async with broker(args) as c:
        if getattr(args, "transcript", False):
            return await _transcript(c, args.id, out)
        if out.json_mode:
            out.json_doc(await call(c, "inspect", id=args.id, detail=detail or None))
            return EXIT_OK
        info = await call(c, "inspect", id=args.id, detail=["attempts", "events"], events=10**7)
        task = Task.from_json((await call(c, "get", id=args.id))["task"])
        d = await call(c, "diff", id=task.id)
    out.inspect(
        task,
        [
            Attempt.from_json({"task_id": task.id, **a})
            for a in info.get("detail", {}).get("attempts", [])
        ],
        [Event.from_json(e) for e in info.get("detail", {}).get("events", [])],
        [FileDiff.from_json(f) for f in d["files"]],
        d["final"],
    )
    for perm in info.get("permissions") or []:
        options = ", ".join(f"{o['id']} ({o['kind']})" for o in perm.get("options") or [])
        out.console.print(
            f"asks permission {perm['id']}: {perm.get('tool')}\n{perm.get('preview') or ''}\n"
            f"  answer with: baton answer {task.id} <option>   options: {options}",
            markup=False,
        )
    return EXIT_OK


async def _transcript(c: Client, task_id: str, out: Output) -> int:
    """``inspect --transcript``: the task's events rendered as the editors show them."""
    from baton.core.transcript import Transcript

    task = Task.from_json((await call(c, "get", id=task_id))["task"])
    info = await call(c, "inspect", id=task.id, detail=["events"], events=10**7)
    events = [Event.from_json(e) for e in info.get("detail", {}).get("events", [])]
    transcript = Transcript.of(task, events)
    if out.json_mode:
        out.json_doc({"taskId": task.id, "seq": transcript.seq, "lines": transcript.lines})
    else:
        out.console.print(transcript.text(), markup=False, highlight=False, end="")
    return EXIT_OK


def _details(value: str | None) -> list[str]:
    """``--detail attempts,events`` (or ``all``) as a list, each checked."""
    names = [n.strip() for n in (value or "").split(",") if n.strip()]
    for n in names:
        if n != "all" and n not in answers.DETAILS:
            known = ", ".join(("all", *answers.DETAILS))
            raise UsageError(f"--detail {n}: expected one or more of {known}")
    return names


async def diff(args: argparse.Namespace, out: Output) -> int:
    async with broker(args) as c:
        d = await call(c, "diff", id=args.id)
    if out.json_mode:
        out.json_doc(d)
    else:
        files = [FileDiff.from_json(f) for f in d["files"]]
        out.diff(d["task"]["id"], d["task"]["state"], files, d["final"])
        for line in diff_notes(d):
            out.info(line)
    return EXIT_OK


def diff_notes(d: dict[str, Any]) -> list[str]:
    """The diff answer's ``overlaps`` and ``standing`` as lines people read."""
    lines = []
    for o in d.get("overlaps", []):
        meets = ", ".join(f"{a}↔{b}" for a, b in o.get("hunks", []))
        how = f"; hunks that meet: {meets}" if meets else ""
        if "hunks" not in o:
            how = " (it started from another version of the file)"
        lines.append(f"{o['path']} is also changed by task {o['task']} ({o['state']}){how}")
    for hunk, s in sorted(d.get("standing", {}).items()):
        at = f", now at line {s['line']}" if s.get("line") else ""
        said = f"still applies{at}" if s["applies"] else f"conflicts: {s.get('why', '')}"
        lines.append(f"{hunk}: the file changed since the task started; {said}")
    return lines


async def cancel(args: argparse.Namespace, out: Output) -> int:
    async with broker(args) as c:
        tid = (await call(c, "cancel", id=args.id))["task"]["id"]
        await events_until(c, [tid], lambda s: s in STOP, lambda e, h: None, timeout=15.0)
        task = answers.line(Task.from_json((await call(c, "get", id=tid))["task"]))
    out.result({"task": task}, f"task {task['id']} is {task['state']}")
    return EXIT_OK if task["state"] == "cancelled" else EXIT_FAILED


async def turn(args: argparse.Namespace, out: Output) -> int:
    """reply, steer, retry and handoff: start a new turn of the task, then follow it like
    run."""
    params: dict[str, Any] = {"id": args.id}
    if args.command == "handoff" and args.worker:
        params["worker"] = args.worker
    if args.command in ("reply", "steer"):
        text = read_text(args.text)
        if not text.strip():
            raise UsageError(f"the {args.command} text is empty")
        params["text"] = text
    async with broker(args) as c:
        task = (await call(c, args.command, **params))["task"]
        if args.detach:
            out.result({"task": task}, f"task {task['id']} is {task['state']}")
            return EXIT_OK
        final = await follow(c, task["id"], out)
    return EXIT_OK if str(final.state) in GOOD_ENDS else EXIT_FAILED
