"""``baton plan "<goal>"``: a worker proposes a task graph, Baton checks it, you approve it,
it runs as a graph — over the broker's ``plan`` method (:mod:`baton.runtime.planning` holds
the flow every surface shares).

The planner is a read-only task (``--worker``, else the project's routing for a
``reasoning`` task), asked to answer with a JSON list of nodes (:mod:`baton.core.plan`
holds the brief and the checks). A question it asks instead comes to you (answer it on the
terminal; with ``--yes`` or ``--json`` it ends the command: answer with ``baton reply``).
A plan that fails a check is refused, every reason said; one that passes is shown, and
runs once you say yes (``--yes``: at once). ``--dry-run`` stops after the check.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from baton.cli.remote import EXIT_FAILED, EXIT_OK, UsageError, folder_of, read_text
from baton.cli.render import Output
from baton.cli.watching import STOP, broker, call
from baton.surfaces.ws.client import BrokerError, Client, events_until

#: How many questions the planner may ask before the command gives up.
MAX_QUESTIONS = 5


async def _read_plan(c: Client, task_id: str, out: Output) -> dict[str, Any]:
    """The planner's answer once it settles or asks (its state changes shown meanwhile)."""

    def show(event: Any, history: bool) -> None:
        if not history and str(event.type) == "state":
            out.info(f"planner {task_id}: {event.data.get('to')}")

    await events_until(c, [task_id], lambda s: s in STOP, show)
    found: dict[str, Any] = await call(c, "plan", id=task_id)
    return found


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


def _worker(args: argparse.Namespace) -> dict[str, str]:
    return {"worker": args.worker} if args.worker else {}


def _refused(out: Output, task_id: str, nodes: Any, wrong: list[str]) -> int:
    listed = "\n".join(f"  - {w}" for w in wrong)
    out.result(
        {"task": task_id, "plan": nodes, "problems": wrong},
        f"the plan of task {task_id} is refused:\n{listed}",
    )
    return EXIT_FAILED


async def plan(args: argparse.Namespace, out: Output) -> int:
    if (args.goal is None) == (args.task is None):
        raise UsageError("give a goal, or --task with a planner's id")
    goal = read_text(args.goal) if args.goal is not None else None
    if goal is not None and not goal.strip():
        raise UsageError("the goal is empty")
    if args.task is not None and args.worker:
        raise UsageError("--worker is for a new planner, not with --task")
    root = str(folder_of(args).resolve())
    interactive = not (args.yes or out.json_mode) and sys.stdin.isatty()
    async with broker(args) as c:
        if goal is not None:
            params = {"goal": goal, "cwd": root}
            task_id = (await call(c, "plan", **params, **_worker(args)))["task"]["id"]
        else:
            task_id = (await call(c, "get", id=args.task))["task"]["id"]
        found = await _read_plan(c, task_id, out)
        for _ in range(MAX_QUESTIONS):
            if "question" not in found:
                break
            reply = await _ask(out, str(found["question"]), interactive)
            if reply is None:
                out.result(
                    {"task": task_id, "question": found["question"], "plan": None},
                    f"the planner asks: {found['question']}\n"
                    f'answer with: baton reply {task_id} "…", then: baton plan --task {task_id}',
                )
                return EXIT_FAILED
            await call(c, "reply", id=task_id, text=reply)
            found = await _read_plan(c, task_id, out)
        if "problems" not in found:  # still asking after MAX_QUESTIONS, or working
            out.error(f"the planner {task_id} has not answered with a plan")
            return EXIT_FAILED
        nodes, wrong = found["nodes"], found["problems"]
        if wrong:
            return _refused(out, task_id, nodes, wrong)
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
                await call(c, "plan", id=task_id, reject=True)
                out.info("rejected: nothing of it runs")
                return EXIT_OK
        try:
            res = await call(c, "plan", id=task_id, approve=True)
        except BrokerError as exc:  # the policy changed meanwhile, or approved already
            problems = (exc.data or {}).get("problems") if isinstance(exc.data, dict) else None
            if not problems:
                raise
            return _refused(out, task_id, nodes, list(problems))
    ids = {k: t["id"] for k, t in res["tasks"].items()}
    out.result(
        {"task": task_id, "plan": nodes, "problems": [], "tasks": ids},
        "\n".join(f"{k} {i}" for k, i in ids.items()),
    )
    return EXIT_OK
