"""The ``baton`` command.

At this stage the CLI runs a broker in its own process for commands that need one (``run``,
``cancel``, ``accept``, ``reject``, ``demo``) and reads the store directly for the others.
Every command takes ``--json`` and then prints exactly one JSON document.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from baton import __version__
from baton.cli import render
from baton.core.lifecycle import NEXT_MOVES, TaskState
from baton.core.task import Target
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor, TaskError
from baton.store import AmbiguousTask, StoreError, UnknownTask
from baton.store.paths import state_home

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad input from the user: exit code 2 with a clear message."""


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="baton",
        description="Delegate work to coding-agent CLIs and review it hunk by hunk.",
    )
    p.add_argument("--version", action="version", version=f"baton {__version__}")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def cmd(name: str, help: str) -> argparse.ArgumentParser:
        c = sub.add_parser(name, help=help, description=help)
        c.add_argument("--json", action="store_true", help="print one JSON document")
        return c

    c = cmd("run", "delegate a task and follow it in the foreground")
    c.add_argument("instruction", help="what to do ('-' reads it from stdin)")
    c.add_argument("--worker", help="profile to run (default: fake)")
    c.add_argument("--model")
    c.add_argument("--file", help="the file the task is about (relative to --cwd)")
    c.add_argument("--lines", help="line range A-B of --file (1-based, inclusive)")
    c.add_argument("--cwd", default=".", help="the project folder (default: .)")
    c.add_argument("--scope", action="append", default=[], help="write-scope glob (repeatable)")
    c.add_argument(
        "--action", default="run", choices=["run", "delegate", "fix", "explain", "tests"]
    )
    c.add_argument("--detach", action="store_true", help="print the task id and return")

    c = cmd("tasks", "list tasks, newest first")
    c.add_argument("--state", action="append", choices=[str(s) for s in TaskState])
    c.add_argument("--query", "-q", help="full-text search over title, brief and summary")
    c.add_argument("--limit", type=int, default=50)

    c = cmd("inspect", "show a task: state, attempts, events")
    c.add_argument("id")

    c = cmd("diff", "show a task's diff per hunk, with hunk ids")
    c.add_argument("id")

    for name, verb in (("accept", "apply"), ("reject", "drop")):
        c = cmd(name, f"{verb} all pending hunks of a task, or the ones named")
        c.add_argument("id")
        c.add_argument("hunks", nargs="*", metavar="HUNK")

    c = cmd("cancel", "cancel a task (kills its agent process tree)")
    c.add_argument("id")

    c = cmd("reply", "answer a task's question, or ask a task in review for changes")
    c.add_argument("id")
    c.add_argument("text", help="the reply ('-' reads it from stdin)")
    c.add_argument("--detach", action="store_true", help="return without following")

    c = cmd("steer", "interrupt a running task and continue it with new guidance")
    c.add_argument("id")
    c.add_argument("text", help="the guidance ('-' reads it from stdin)")
    c.add_argument("--detach", action="store_true", help="return without following")

    c = cmd("retry", "run a failed, cancelled or interrupted task again")
    c.add_argument("id")
    c.add_argument("--detach", action="store_true", help="return without following")

    sub.add_parser("lsp", help="run the language server on stdio (started by the editor)")

    cmd("doctor", "check the agent CLIs on PATH and each profile's binary and account")

    c = cmd("demo", "run a delegation end to end in a throwaway repository")
    c.add_argument("--worker", help="profile to use instead of the fake agent")
    c.add_argument("--keep", action="store_true", help="keep the throwaway folder")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if args.command == "lsp":
        # pygls owns the event loop of the language server.
        from baton.surfaces.lsp import run_stdio

        return run_stdio()
    out = render.Output(json_mode=bool(getattr(args, "json", False)))
    try:
        code: int = asyncio.run(_dispatch(args, out))
        return code
    except UsageError as exc:
        out.error(str(exc))
        return EXIT_USAGE
    except (UnknownTask, AmbiguousTask, TaskError) as exc:
        out.error(str(exc).strip("'\""))
        return EXIT_USAGE
    except StoreError as exc:
        out.error(f"state folder: {exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130


async def _dispatch(args: argparse.Namespace, out: render.Output) -> int:
    home = state_home()
    if args.command == "demo":
        from baton.cli.demo import run_demo

        return await run_demo(out, worker=args.worker, keep=args.keep)
    if args.command == "doctor":
        return await _doctor(out)
    readonly = args.command in ("tasks", "inspect", "diff")
    sup = Supervisor(home, adopt=not readonly)
    await sup.start()
    try:
        handler = _COMMANDS[args.command]
        return await handler(sup, args, out)
    finally:
        await sup.close()


async def _run(sup: Supervisor, args: argparse.Namespace, out: render.Output) -> int:
    instruction = sys.stdin.read() if args.instruction == "-" else args.instruction
    if not instruction.strip():
        raise UsageError("the instruction is empty")
    root = Path(args.cwd).resolve()
    if not root.is_dir():
        raise UsageError(f"--cwd {args.cwd}: not a folder")
    targets = []
    if args.file:
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
        targets.append(Target(args.file, start, end))
    elif args.lines:
        raise UsageError("--lines needs --file")
    task = await sup.delegate(
        DelegateRequest(
            instruction=instruction,
            root=str(root),
            action=args.action,
            targets=targets,
            scope=args.scope,
            worker=args.worker,
            model=args.model,
        )
    )
    if args.detach:
        # Stay until the agent runs detached: a later broker adopts it from there.
        task = await render.wait_for(sup, task.id, render.started, timeout=60.0)
        out.result({"id": task.id, "state": str(task.state)}, task.id)
        return EXIT_OK
    final = await render.follow(sup, task.id, out)
    return EXIT_OK if final.state in _GOOD_ENDS else EXIT_FAILED


_GOOD_ENDS = (TaskState.REVIEW, TaskState.ANSWERED, TaskState.NEEDS_INPUT)


async def _tasks(sup: Supervisor, args: argparse.Namespace, out: render.Output) -> int:
    tasks = await sup.list_tasks(states=args.state, query=args.query, limit=args.limit)
    out.tasks(tasks)
    return EXIT_OK


async def _inspect(sup: Supervisor, args: argparse.Namespace, out: render.Output) -> int:
    task = await sup.get(args.id)
    attempts = await sup.attempts(task.id)
    events = await sup.events(task.id)
    files, final = await sup.diff(task.id)
    out.inspect(task, attempts, events, files, final)
    return EXIT_OK


async def _diff(sup: Supervisor, args: argparse.Namespace, out: render.Output) -> int:
    task = await sup.get(args.id)
    files, final = await sup.diff(task.id)
    out.diff(task, files, final)
    return EXIT_OK


async def _accept(sup: Supervisor, args: argparse.Namespace, out: render.Output) -> int:
    result = await sup.accept(args.id, args.hunks or None)
    task = await sup.get(args.id)
    out.accepted(task, result)
    return EXIT_OK if not result.conflicts and not result.refused else EXIT_FAILED


async def _reject(sup: Supervisor, args: argparse.Namespace, out: render.Output) -> int:
    rejected = await sup.reject(args.id, args.hunks or None)
    task = await sup.get(args.id)
    out.result(
        {"task": _brief_task(task), "rejected": rejected},
        f"rejected {len(rejected)} hunk(s); task {task.id} is {task.state}",
    )
    return EXIT_OK


async def _cancel(sup: Supervisor, args: argparse.Namespace, out: render.Output) -> int:
    task = await sup.cancel(args.id)
    task = await render.wait_for(sup, task.id, render.settled, timeout=15.0)
    out.result({"task": _brief_task(task)}, f"task {task.id} is {task.state}")
    return EXIT_OK if task.state == TaskState.CANCELLED else EXIT_FAILED


async def _turn(sup: Supervisor, args: argparse.Namespace, out: render.Output) -> int:
    """reply, steer and retry: start a new turn of the task, then follow it like run."""
    text = ""
    if args.command in ("reply", "steer"):
        text = sys.stdin.read() if args.text == "-" else args.text
        if not text.strip():
            raise UsageError(f"the {args.command} text is empty")
    if args.command == "reply":
        task = await sup.reply(args.id, text)
    elif args.command == "steer":
        task = await sup.steer(args.id, text)
    else:
        task = await sup.retry(args.id)
    if args.detach:
        out.result({"task": _brief_task(task)}, f"task {task.id} is {task.state}")
        return EXIT_OK
    final = await render.follow(sup, task.id, out)
    return EXIT_OK if final.state in _GOOD_ENDS else EXIT_FAILED


async def _doctor(out: render.Output) -> int:
    """Agent CLIs on PATH with their versions, each profile's binary and account folder."""
    from baton.agents.doctor import format_report, run_doctor
    from baton.config.profiles import default_profiles

    report = await asyncio.to_thread(run_doctor, default_profiles())
    out.result(report.to_json(), format_report(report))
    return EXIT_OK if report.ok else EXIT_FAILED


def _brief_task(task: Any) -> dict[str, Any]:
    return {
        "id": task.id,
        "state": str(task.state),
        "title": task.title,
        "next": list(NEXT_MOVES[task.state]),
    }


_COMMANDS = {
    "run": _run,
    "tasks": _tasks,
    "inspect": _inspect,
    "diff": _diff,
    "accept": _accept,
    "reject": _reject,
    "cancel": _cancel,
    "reply": _turn,
    "steer": _turn,
    "retry": _turn,
}


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")
