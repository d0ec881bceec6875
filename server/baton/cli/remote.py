"""The CLI's commands that go through the broker serving the folder (a websocket client).

Each handler gets the parsed arguments and the output, connects to the broker for the folder
(starting one on demand), and returns the exit code. A move refused because another broker
supervises the task is sent again to that broker.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

from baton.cli import render
from baton.core.diff import FileDiff
from baton.core.events import Event, EventType
from baton.core.task import Attempt, Task
from baton.core.transcript import Transcript
from baton.surfaces.ws import answers, protocol
from baton.surfaces.ws.client import (
    BrokerError,
    Client,
    broker_by_pid,
    connect_for,
    events_until,
)

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
#: ``watch`` woke because a task hit a rate limit (it runs again by itself): watch again.
EXIT_HELD = 3

#: States in which a task no longer needs its agent: ``watch`` and ``run`` stop there.
STOP = answers.STOP
GOOD_ENDS = frozenset({"review", "answered", "needs_input"})
STARTED_NOT = frozenset({"queued", "preparing"})


class UsageError(Exception):
    """Bad input from the user: exit code 2 with a clear message."""


#: Broker error codes that mean the user asked for something wrong (exit 2).
USAGE_CODES = frozenset(
    {
        protocol.INVALID_PARAMS,
        protocol.UNKNOWN_TASK,
        protocol.WRONG_STATE,
        protocol.METHOD_NOT_FOUND,
        protocol.TOO_LARGE,
    }
)

#: Requests that carry the user's text (a brief, a reply), and what to do when it is too long.
_LONG_TEXT = frozenset({"delegate", "graph", "reply", "steer"})
_SHORTEN = "shorten it, or save the material in a file of the workspace and name that file"


def folder_of(args: argparse.Namespace) -> Path:
    cwd = getattr(args, "cwd", None)
    return Path(cwd).resolve() if cwd else Path.cwd()


@asynccontextmanager
async def broker(args: argparse.Namespace) -> AsyncIterator[Client]:
    # A command about a task by id may use any broker of this state home.
    by_id = args.command not in ("delegate", "run", "memory", "graph")
    client = await connect_for(folder_of(args), any_broker=by_id)
    try:
        yield client
    finally:
        await client.close()


async def call(c: Client, method: str, **params: Any) -> Any:
    """Call the broker; a task supervised by another broker is asked of that one."""
    try:
        return await c.call(method, **params)
    except BrokerError as exc:
        if exc.code == protocol.TOO_LARGE and method in _LONG_TEXT:
            exc.message = f"{exc.message}: {_SHORTEN}"
            raise
        pid = (exc.data or {}).get("brokerPid") if isinstance(exc.data, dict) else None
        other = broker_by_pid(int(pid)) if isinstance(pid, int) else None
        if other is None:
            raise
    async with await Client.connect(other) as c2:
        return await c2.call(method, **params)


def read_text(value: str) -> str:
    return sys.stdin.read() if value == "-" else value


# ------------------------------------------------------------------------------ following


async def follow(c: Client, task_id: str, out: render.Output) -> Task:
    """Print a task's progress until it stops needing the agent; print and return it."""
    status = None
    if not out.json_mode and out.console.is_terminal:
        status = out.console.status(task_id)
        status.start()

    def show(event: Event, history: bool) -> None:
        render.print_event(out, event)
        if status is not None:
            status.update(f"{task_id} {render.describe_event(event)}")

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
        render.print_outcome(out, task)
    return task


# ------------------------------------------------------------------------------ commands


def _targets(args: argparse.Namespace, root: Path) -> list[dict[str, Any]]:
    if not args.file:
        if args.lines:
            raise UsageError("--lines needs --file")
        return []
    start = end = None
    if args.lines:
        try:
            a, _, b = args.lines.partition("-")
            start, end = int(a), int(b or a)
        except ValueError:
            raise UsageError(f"--lines {args.lines}: expected A-B, e.g. 10-40") from None
        if start < 1 or end < start:
            raise UsageError(f"--lines {args.lines}: expected 1 <= A <= B")
    if not (root / args.file).is_file():
        raise UsageError(f"--file {args.file}: no such file under {root}")
    return [{"path": args.file, "start": start, "end": end}]


def _delegate_params(args: argparse.Namespace) -> dict[str, Any]:
    instruction = read_text(args.instruction)
    if not instruction.strip():
        raise UsageError("the instruction is empty")
    root = Path(args.cwd).resolve()
    if not root.is_dir():
        raise UsageError(f"--cwd {args.cwd}: not a folder")
    return {
        "instruction": instruction,
        "cwd": str(root),
        "action": args.action,
        "targets": _targets(args, root) or None,
        "scope": args.scope or None,
        "worker": args.worker,
        "model": args.model,
        "kind": getattr(args, "kind", None),
        "isolation": getattr(args, "isolation", None),
    }


async def delegate(args: argparse.Namespace, out: render.Output) -> int:
    """Print the new task's id at once; the work runs in the broker."""
    params = _delegate_params(args)
    if args.after:
        params["dependsOn"] = args.after
    if args.compare:
        workers = [w.strip() for w in args.compare.split(",") if w.strip()]
        if len(workers) < 2:
            raise UsageError("--compare needs two or more workers, e.g. --compare a,b")
        params["workers"] = workers
    async with broker(args) as c:
        res = await call(c, "delegate", **params)
    if "tasks" in res:
        out.result(res, "\n".join(t["id"] for t in res["tasks"]))
    else:
        out.result(res["task"], res["task"]["id"])
    return EXIT_OK


async def graph(args: argparse.Namespace, out: render.Output) -> int:
    """Delegate a small graph in one call; print one "key id" line per node."""
    try:
        nodes = json.loads(
            read_text(args.file) if args.file == "-" else Path(args.file).read_text()
        )
    except (OSError, ValueError) as exc:
        raise UsageError(f"{args.file}: not a readable JSON list of nodes ({exc})") from None
    if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
        raise UsageError(f"{args.file}: expected a JSON list of node objects")
    root = str(Path(args.cwd).resolve())
    nodes = [{"cwd": root, **n} for n in nodes]
    async with broker(args) as c:
        res = await call(c, "graph", nodes=nodes)
    out.result(res, "\n".join(f"{k} {t['id']}" for k, t in res["tasks"].items()))
    return EXIT_OK


async def run(args: argparse.Namespace, out: render.Output) -> int:
    params = _delegate_params(args)
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


async def watch(args: argparse.Namespace, out: render.Output) -> int:
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


async def tasks(args: argparse.Namespace, out: render.Output) -> int:
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


async def inspect(args: argparse.Namespace, out: render.Output) -> int:
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


async def _transcript(c: Client, task_id: str, out: render.Output) -> int:
    """``inspect --transcript``: the task's events rendered as the editors show them."""
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


async def answer(args: argparse.Namespace, out: render.Output) -> int:
    """Answer an ACP agent's permission request (allow, always, reject, or an option id)."""
    params: dict[str, Any] = {"id": args.id, "option": args.option}
    if args.permission:
        params["permission"] = args.permission
    async with broker(args) as c:
        res = (await call(c, "answer", **params))["answered"]
    option = res["option"]
    out.result(
        {"answered": res},
        f"task {res['taskId']}: answered {res['permission']} with {option['name']} "
        f"({option['kind']})",
    )
    return EXIT_OK


async def diff(args: argparse.Namespace, out: render.Output) -> int:
    async with broker(args) as c:
        d = await call(c, "diff", id=args.id)
    if out.json_mode:
        out.json_doc(d)
    else:
        files = [FileDiff.from_json(f) for f in d["files"]]
        out.diff(d["task"]["id"], d["task"]["state"], files, d["final"])
    return EXIT_OK


async def accept(args: argparse.Namespace, out: render.Output) -> int:
    async with broker(args) as c:
        allow = True if args.allow_secret else None
        res = await call(c, "accept", id=args.id, hunks=args.hunks or None, allowSecret=allow)
    if out.json_mode:
        out.json_doc(res)
    else:
        out.accepted_json(res)
    return EXIT_OK if not res.get("conflicts") and not res.get("refused") else EXIT_FAILED


async def reject(args: argparse.Namespace, out: render.Output) -> int:
    async with broker(args) as c:
        res = await call(c, "reject", id=args.id, hunks=args.hunks or None)
    task = res["task"]
    out.result(
        res,
        f"rejected {len(res['rejected'])} hunk(s); task {task['id']} is {task['state']}",
    )
    return EXIT_OK


async def cancel(args: argparse.Namespace, out: render.Output) -> int:
    async with broker(args) as c:
        tid = (await call(c, "cancel", id=args.id))["task"]["id"]
        await events_until(c, [tid], lambda s: s in STOP, lambda e, h: None, timeout=15.0)
        task = answers.line(Task.from_json((await call(c, "get", id=tid))["task"]))
    out.result({"task": task}, f"task {task['id']} is {task['state']}")
    return EXIT_OK if task["state"] == "cancelled" else EXIT_FAILED


async def turn(args: argparse.Namespace, out: render.Output) -> int:
    """reply, steer and retry: start a new turn of the task, then follow it like run."""
    params: dict[str, Any] = {"id": args.id}
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


async def memory(args: argparse.Namespace, out: render.Output) -> int:
    root = str(folder_of(args))
    params: dict[str, Any] = {"op": args.op, "root": root}
    if args.op == "add":
        params["text"] = read_text(" ".join(args.value))
    elif args.op == "remove":
        try:
            params["id"] = int(args.value[0]) if args.value else None
        except ValueError:
            raise UsageError("memory remove takes the memory's number") from None
    async with broker(args) as c:
        res = await call(c, "memory", **params)
    human = "\n".join(f"{m['id']:>4}  {m['text']}" for m in res["memory"]) or "no memory"
    out.result(res, human)
    return EXIT_OK


async def workers(args: argparse.Namespace, out: render.Output) -> int:
    async with broker(args) as c:
        res = await call(c, "workers", root=str(Path(args.cwd).resolve()))
    lines = [
        f"{w['name']:<14} {w['provider']:<9} {w.get('model') or '-':<20} {w.get('label', '')}"
        + ("" if w["enabled"] else "  (disabled)")
        + ("" if w.get("allowed", True) else "  (not allowed here)")
        + (f"  [{w['source']}]" if w.get("source") in ("user", "project") else "")
        for w in res["workers"]
    ]
    default = res.get("default")
    why = res.get("default_reason") or ""
    lines.append(f"default: {default} ({why})" if default else f"no default worker: {why}")
    out.result(res, "\n".join(lines))
    return EXIT_OK


async def health(args: argparse.Namespace, out: render.Output) -> int:
    async with broker(args) as c:
        res = await call(c, "health")
    res["url"] = c.info.url
    out.result(res, f"broker pid {res['pid']} on {c.info.url}, serving {', '.join(res['roots'])}")
    return EXIT_OK
