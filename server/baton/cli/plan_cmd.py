"""``baton plan "<goal>"``: a worker proposes a task graph, Baton checks it, you approve it,
it runs as a graph (``baton graph``).

The planner is a task like any other (``--worker``, else the project's routing for a
``reasoning`` task), asked to change no file and to answer with a JSON list of nodes
(:mod:`baton.core.plan` holds the brief and the checks). A question it asks instead comes
to you (answer it on the terminal; with ``--yes`` or ``--json`` it ends the command). A plan
that fails a check is refused, every reason said; one that passes is shown, and runs once
you say yes (``--yes``: at once). ``--dry-run`` stops after the check.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from baton.cli.remote import EXIT_FAILED, EXIT_OK, UsageError, folder_of, read_text
from baton.cli.render import Output
from baton.cli.watching import STOP, broker, call
from baton.core import plan as plans
from baton.surfaces.ws.client import Client, events_until

#: How many questions the planner may ask before the command gives up.
MAX_QUESTIONS = 5


async def _settle(c: Client, task_id: str, out: Output) -> dict[str, Any]:
    def show(event: Any, history: bool) -> None:
        if not history and str(event.type) == "state":
            out.info(f"planner {task_id}: {event.data.get('to')}")

    await events_until(c, [task_id], lambda s: s in STOP, show)
    task: dict[str, Any] = (await call(c, "get", id=task_id))["task"]
    return task


async def _answer_text(c: Client, task_id: str) -> str:
    """The planner's last final text (its answer), from its events."""
    text, after = "", 0
    while True:
        got = await call(c, "events", id=task_id, after=after)
        for e in got["events"]:
            if e["type"] == "final":
                text = str(e["data"].get("text", ""))
            after = max(after, int(e["seq"]))
        if not got["more"] or not got["events"]:
            return text


async def _read(prompt: str) -> str:
    """A line from the terminal (off the event loop: the broker's connection stays read)."""
    try:
        return (await asyncio.to_thread(input, prompt)).strip()
    except EOFError:
        return ""


async def _ask(out: Output, question: str, interactive: bool) -> str | None:
    if not interactive:
        return None
    out.console.print(f"[bold]The planner asks:[/bold] {question}")
    return await _read("> ") or None


def _show(out: Output, nodes: list[dict[str, Any]]) -> None:
    for n in nodes:
        after = f" after {', '.join(n['after'])}" if n.get("after") else ""
        where = f" in {', '.join(n['scope'])}" if n.get("scope") else ""
        who = f" [{n['worker']}]" if n.get("worker") else ""
        out.console.print(f"[bold]{n['key']}[/bold]{who}{after}{where}: {n['instruction']}")


async def plan(args: argparse.Namespace, out: Output) -> int:
    goal = read_text(args.goal)
    if not goal.strip():
        raise UsageError("the goal is empty")
    root = str(folder_of(args).resolve())
    interactive = not (args.yes or out.json_mode) and sys.stdin.isatty()
    async with broker(args) as c:
        listed = await call(c, "workers", root=root)
        allowed = [w["name"] for w in listed["workers"] if w["allowed"] and w["can_run"]]
        params = {"instruction": plans.brief(goal, allowed), "cwd": root}
        params |= {"worker": args.worker} if args.worker else {"kind": "reasoning"}
        task_id = (await call(c, "delegate", **params))["task"]["id"]
        task = await _settle(c, task_id, out)
        for _ in range(MAX_QUESTIONS):
            if task["state"] != "needs_input":
                break
            reply = await _ask(out, str(task.get("message", "")), interactive)
            if reply is None:
                out.result(
                    {"task": task_id, "question": task.get("message"), "plan": None},
                    f"the planner asks: {task.get('message')}\n"
                    f'answer with: baton reply {task_id} "…" (then baton plan again)',
                )
                return EXIT_FAILED
            await call(c, "reply", id=task_id, text=reply)
            task = await _settle(c, task_id, out)
        if task["state"] not in ("answered", "review"):
            why = task.get("message") or task.get("completion") or ""
            out.error(f"the planner {task_id} ended {task['state']}: {why}")
            return EXIT_FAILED
        text = await _answer_text(c, task_id)
        if task["state"] == "review":  # it changed files it was asked to leave alone
            await call(c, "reject", id=task_id)
            out.info(f"the planner changed files; its changes were rejected (task {task_id})")
        try:
            nodes: Any = plans.parse(text)
            wrong = plans.problems(nodes, allowed)
        except ValueError as exc:
            nodes, wrong = None, [str(exc)]
        if wrong:
            listed_ = "\n".join(f"  - {w}" for w in wrong)
            out.result(
                {"task": task_id, "plan": nodes, "problems": wrong},
                f"the plan of task {task_id} is refused:\n{listed_}",
            )
            return EXIT_FAILED
        if not out.json_mode:
            _show(out, nodes)
        if args.dry_run:
            out.result({"task": task_id, "plan": nodes, "problems": []}, "the plan passes")
            return EXIT_OK
        if not args.yes:
            if not interactive:
                out.result({"task": task_id, "plan": nodes, "problems": []},
                           "run it with --yes (nothing started)")  # fmt: skip
                return EXIT_OK
            said = await _read(f"Run these {len(nodes)} tasks? [y/N] ")
            if said.lower() not in ("y", "yes"):
                out.info("nothing started")
                return EXIT_OK
        res = await call(c, "graph", nodes=[{"cwd": root, **n} for n in nodes])
    ids = {k: t["id"] for k, t in res["tasks"].items()}
    out.result(
        {"task": task_id, "plan": nodes, "problems": [], "tasks": ids},
        "\n".join(f"{k} {i}" for k, i in ids.items()),
    )
    return EXIT_OK
