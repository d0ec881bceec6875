"""``baton edit`` (change a task that has not started, or requeue one cancelled before it
started) and ``baton ask`` (a read-only question about the project, answered here).

Both are one request to the broker serving the folder, on the blocking client of
:mod:`baton.cli.remote`; the parser's part is :func:`add_commands`.
"""

from __future__ import annotations

import argparse

from baton.cli.render import Output

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

EXIT_OK, EXIT_FAILED = 0, 1
#: Seconds ``baton ask`` waits for the answer by default.
ASK_TIMEOUT = 600.0


def add_commands(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    from baton.core.ids import MIN_PREFIX

    c = cmd(
        "edit",
        "change a task that has not started (queued): its instruction, title, worker, "
        "prerequisites or scope; or requeue one cancelled before it started",
    )
    c.add_argument("id", help=f"a task id, or a unique prefix of it of {MIN_PREFIX}+ characters")
    c.add_argument("--instruction", help="the new instruction ('-' reads it from stdin)")
    c.add_argument("--title")
    c.add_argument("--worker", help="the profile to run it (see baton workers)")
    c.add_argument("--model")
    c.add_argument(
        "--after",
        action="append",
        metavar="ID",
        help="start only once this task is accepted (repeatable; replaces the list)",
    )
    c.add_argument("--no-after", action="store_true", help="wait for no other task")
    c.add_argument(
        "--scope", action="append", help="write-scope glob (repeatable; replaces the list)"
    )
    c.add_argument("--no-scope", action="store_true", help="no write scope")

    c = cmd(
        "ask",
        "ask a question about the project: a cheap worker (routing kind ask) answers it "
        "read-only, with no diff",
    )
    c.add_argument("question", help="the question ('-' reads it from stdin)")
    c.add_argument("--worker", help="the profile to ask (default: routing for kind ask)")
    c.add_argument("--model")
    c.add_argument("--file", help="the file the question is about (relative to --cwd)")
    c.add_argument("--lines", help="line range A-B of --file (1-based, inclusive)")
    c.add_argument("--cwd", default=".", help="the project folder (default: .)")
    c.add_argument(
        "--timeout", type=float, default=ASK_TIMEOUT, help="seconds to wait for the answer"
    )


def edit_params(args: argparse.Namespace) -> dict[str, Any]:
    from baton.cli.remote import UsageError, read_text

    params: dict[str, Any] = {"id": args.id}
    if args.instruction is not None:
        params["instruction"] = read_text(args.instruction)
        if not params["instruction"].strip():
            raise UsageError("the instruction is empty")
    for name in ("title", "worker", "model"):
        if getattr(args, name):
            params[name] = getattr(args, name)
    for flag, key, clear in (("after", "dependsOn", "no_after"), ("scope", "scope", "no_scope")):
        if getattr(args, flag) and getattr(args, clear):
            raise UsageError(f"--{flag} and --{clear.replace('_', '-')} exclude each other")
        if getattr(args, clear):
            params[key] = []
        elif getattr(args, flag):
            params[key] = getattr(args, flag)
    return params


async def edit(args: argparse.Namespace, out: Output) -> int:
    """Print the task as it is after the edit (queued again, or still queued)."""
    from baton.cli.remote import broker, call

    with broker(args) as c:
        res = call(c, "edit", **edit_params(args))
    task = res["task"]
    out.result(res, f"task {task['id']} is {task['state']} on {task.get('worker', '?')}")
    return EXIT_OK


async def ask(args: argparse.Namespace, out: Output) -> int:
    """Print the answer once the worker gives it (exit 1 when it failed or timed out)."""
    from pathlib import Path

    from baton.cli.remote import UsageError, _targets, broker, call, read_text

    question = read_text(args.question)
    if not question.strip():
        raise UsageError("the question is empty")
    root = Path(args.cwd).resolve()
    if not root.is_dir():
        raise UsageError(f"--cwd {args.cwd}: not a folder")
    params: dict[str, Any] = {
        "question": question,
        "cwd": str(root),
        "worker": args.worker,
        "model": args.model,
        "targets": _targets(args, root) or None,
        "timeout": max(0.0, args.timeout),
    }
    with broker(args) as c:
        res = call(c, "ask", **params)
    task = res["task"]
    if "answer" in res:
        out.result(res, str(res["answer"]))
        return EXIT_OK
    why = "no answer yet" if "timeout" in res else task.get("message") or task["state"]
    out.result(res, f"task {task['id']} is {task['state']}: {why}")
    return EXIT_FAILED
