"""The ``baton`` command.

Most commands are clients of the broker that serves the folder (a websocket, see
:mod:`baton.surfaces.ws`); with none running, the first command starts a headless one
(``baton serve``) that exits once idle. ``baton lsp`` and ``baton serve`` are brokers;
``baton mcp`` bridges MCP on stdio to the broker; ``baton demo`` runs its own throwaway
broker. Every command but ``lsp``, ``mcp`` and ``completion`` takes ``--json`` and then prints
exactly one JSON document (bad arguments too).
Exit codes: 0 done, 1 failed (or timed out), 2 bad input.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

from baton import __version__
from baton.cli import config_cmds, ide_cmds, init_cmd, logs, remote, render
from baton.cli.remote import UsageError
from baton.core.lifecycle import TaskState
from baton.process import sandbox
from baton.runtime.supervisor import TaskError
from baton.store import AmbiguousTask, StoreError, UnknownTask
from baton.store.store import MIN_PREFIX
from baton.surfaces.ws.client import BrokerError, BrokerUnavailable

if TYPE_CHECKING:
    from baton.surfaces.ws.endpoint import Endpoint

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
ID_HELP = f"a task id, or a unique prefix of it of at least {MIN_PREFIX} characters"


class ArgumentError(Exception):
    """The command line does not parse; ``usage`` is the usage line of the (sub)command."""

    def __init__(self, message: str, usage: str, prog: str) -> None:
        super().__init__(message)
        self.usage = usage
        self.prog = prog


class _Parser(argparse.ArgumentParser):
    """Raises :class:`ArgumentError` instead of printing, so ``--json`` can say it as JSON."""

    def error(self, message: str) -> NoReturn:
        raise ArgumentError(message, self.format_usage(), self.prog)


def _parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog="baton",
        description="Delegate work to coding-agent CLIs and review it hunk by hunk.",
    )
    p.add_argument("--version", action="version", version=f"baton {__version__}")
    p.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log to stderr: -v info, -vv debug (or BATON_LOG=debug|info|warning|error)",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def cmd(name: str, help: str) -> argparse.ArgumentParser:
        c = sub.add_parser(name, help=help, description=help)
        c.add_argument("--json", action="store_true", help="print one JSON document")
        return c

    def delegating(c: argparse.ArgumentParser) -> None:
        c.add_argument("instruction", help="what to do ('-' reads it from stdin)")
        c.add_argument(
            "--worker",
            help="profile to run (default: the configured default worker; see baton workers)",
        )
        c.add_argument("--model")
        c.add_argument("--kind", help="routing kind (mechanical, reasoning, question, …)")
        c.add_argument("--file", help="the file the task is about (relative to --cwd)")
        c.add_argument("--lines", help="line range A-B of --file (1-based, inclusive)")
        c.add_argument("--cwd", default=".", help="the project folder (default: .)")
        c.add_argument("--scope", action="append", default=[], help="write-scope glob (repeatable)")
        c.add_argument("--isolation", choices=["worktree"], help="how the task is isolated")

    c = cmd("delegate", "delegate a task; print its id at once")
    delegating(c)
    c.add_argument(
        "--action", default="delegate", choices=["run", "delegate", "fix", "explain", "tests"]
    )
    c.add_argument(
        "--after",
        action="append",
        default=[],
        metavar="ID",
        help="start only once this task is accepted (repeatable)",
    )
    c.add_argument(
        "--compare",
        metavar="W1,W2,…",
        help="delegate the same brief to several workers at once (a group)",
    )

    c = cmd("graph", "delegate a small graph of tasks in one call (JSON nodes)")
    c.add_argument(
        "file", help='JSON: [{"key", "instruction", "after": [keys], …}] (\'-\' = stdin)'
    )
    c.add_argument("--cwd", default=".", help="the project folder (default: .)")

    c = cmd("run", "delegate a task and follow it in the foreground")
    delegating(c)
    c.add_argument(
        "--action", default="run", choices=["run", "delegate", "fix", "explain", "tests"]
    )
    c.add_argument("--detach", action="store_true", help="print the task id and return")

    c = cmd(
        "watch",
        "print tasks' lifecycle events; exit when one settles (0), hits a rate limit (3) or "
        "times out (1)",
    )
    c.add_argument("ids", nargs="+", metavar="ID", help=ID_HELP)
    c.add_argument("--timeout", type=float, help="give up after this many seconds (exit 1)")

    c = cmd("tasks", "list tasks, newest first")
    c.add_argument("--state", action="append", choices=[str(s) for s in TaskState])
    c.add_argument("--query", "-q", help="full-text search over title, brief and summary")
    c.add_argument("--worker")
    c.add_argument("--group")
    c.add_argument("--since", help="only tasks created within this time: 30m, 2h, 3d")
    c.add_argument("--limit", type=int, default=50)

    c = cmd("inspect", "show a task: state, attempts, events")
    c.add_argument("id", help=ID_HELP)
    c.add_argument(
        "--detail",
        metavar="A,B,…",
        help="with --json, add these sections: attempts, events, evidence, brief, summary, "
        "task, or all",
    )
    c.add_argument(
        "--transcript",
        action="store_true",
        help="print the task's transcript instead (what the agent said and did, as the "
        "editors show it; with --json: {taskId, seq, lines})",
    )

    c = cmd("diff", "show a task's diff per hunk, with hunk ids")
    c.add_argument("id", help=ID_HELP)

    for name, verb in (("accept", "apply"), ("reject", "drop")):
        c = cmd(name, f"{verb} all pending hunks of a task, or the ones named")
        c.add_argument("id", help=ID_HELP)
        c.add_argument("hunks", nargs="*", metavar="HUNK")
        if name == "accept":
            c.add_argument(
                "--allow-secret",
                action="store_true",
                help="also apply hunks that write a secret value (shown masked; the real "
                "text is taken from git)",
            )

    c = cmd("cancel", "cancel a task (kills its agent process tree)")
    c.add_argument("id", help=ID_HELP)

    c = cmd("reply", "answer a task's question, or ask a task in review for changes")
    c.add_argument("id", help=ID_HELP)
    c.add_argument("text", help="the reply ('-' reads it from stdin)")
    c.add_argument("--detach", action="store_true", help="return without following")

    c = cmd("answer", "answer an agent's permission request (see baton inspect)")
    c.add_argument("id", help=ID_HELP)
    c.add_argument("option", help="allow, always, reject, or an option id")
    c.add_argument("--permission", help="which request, when several wait (e.g. p2)")

    c = cmd("steer", "interrupt a running task and continue it with new guidance")
    c.add_argument("id", help=ID_HELP)
    c.add_argument("text", help="the guidance ('-' reads it from stdin)")
    c.add_argument("--detach", action="store_true", help="return without following")

    c = cmd("retry", "run a failed, cancelled or interrupted task again")
    c.add_argument("id", help=ID_HELP)
    c.add_argument("--detach", action="store_true", help="return without following")

    c = cmd("memory", "project facts that go into every brief: list, add TEXT, remove N")
    c.add_argument("op", choices=["list", "add", "remove"], nargs="?", default="list")
    c.add_argument("value", nargs="*")
    c.add_argument("--cwd", default=".", help="the project folder (default: .)")

    c = cmd("workers", "the workers (profiles) a task in this folder may use, and the default")
    c.add_argument("--cwd", default=".", help="the project folder (default: .)")
    cmd("schema", "print the websocket's methods as a machine-readable schema (OpenRPC)")
    cmd("health", "is the broker for this folder up; what does it serve")

    c = cmd("serve", "run a headless broker (websocket) for the CLI and other agents")
    c.add_argument("--root", action="append", default=[], help="folder served (default: .)")
    c.add_argument(
        "--idle-exit", type=float, help="exit after this many seconds with no client or task"
    )

    c = sub.add_parser("mcp", help="an MCP server on stdio exposing Baton's tools to an agent")
    c.add_argument("--cwd", default=".", help="the project folder (default: .)")
    c.add_argument(
        "--tools", metavar="A,B,…", help="offer only these tools (e.g. delegate,watch,inspect)"
    )
    c.add_argument(
        "--print-tools", action="store_true", help="print the tool list and its size, and exit"
    )
    c.add_argument("--json", action="store_true", help="with --print-tools: the list as JSON")

    sub.add_parser("lsp", help="run the language server on stdio (started by the editor)")

    c = cmd("doctor", "check the agent CLIs on PATH, each configured profile and the default")
    c.add_argument("--cwd", default=".", help="the project folder (default: .)")

    c = sub.add_parser(
        "completion",
        help='print a shell completion script: eval "$(baton completion bash)"',
        description="Print a completion script for bash, zsh or tcsh (generated by shtab).",
    )
    c.add_argument("shell", choices=["bash", "zsh", "tcsh"])

    c = cmd("demo", "run a delegation end to end in a throwaway repository")
    c.add_argument("--worker", help="profile to use instead of the fake agent")
    c.add_argument("--keep", action="store_true", help="keep the throwaway folder")
    config_cmds.add_commands(cmd)
    init_cmd.add_commands(cmd)
    ide_cmds.add_commands(cmd)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        args = _parser().parse_args(argv)
    except ArgumentError as exc:
        if "--json" in argv:  # still one JSON document
            render.Output(json_mode=True).error(f"{exc} (see {exc.prog} --help)")
        else:
            sys.stderr.write(f"{exc.usage}{exc.prog}: error: {exc}\n")
        return EXIT_USAGE
    logs.configure(args.verbose)
    if args.command == "lsp":
        # pygls owns the event loop of the language server.
        from baton.surfaces.lsp import run_stdio

        return run_stdio()
    if args.command == "mcp":
        return _mcp(args)
    out = render.Output(json_mode=bool(getattr(args, "json", False)))
    if args.command == "completion":
        return _completion(args.shell)
    if args.command == "schema":
        from baton.surfaces.ws import schema

        sys.stdout.write(schema.text())
        return EXIT_OK
    if args.command == "claude":  # runs claude in its place: no event loop
        return ide_cmds.run(args, out)
    try:
        code: int = asyncio.run(_dispatch(args, out))
        return code
    except UsageError as exc:
        out.error(str(exc))
        return EXIT_USAGE
    except (UnknownTask, AmbiguousTask, TaskError) as exc:
        out.error(str(exc))
        return EXIT_USAGE
    except BrokerError as exc:
        out.error(exc.message)
        return EXIT_USAGE if exc.code in remote.USAGE_CODES else EXIT_FAILED
    except BrokerUnavailable as exc:
        out.error(str(exc))
        return EXIT_FAILED
    except StoreError as exc:
        out.error(f"state folder: {exc}")
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130


def _completion(shell: str) -> int:
    """The completion script for ``shell``, from the parser itself (so it lists every
    command and option there is)."""
    try:
        import shtab
    except ImportError:
        sys.stderr.write("baton completion needs the shtab package: pip install shtab\n")
        return EXIT_FAILED
    sys.stdout.write(shtab.complete(_parser(), shell=shell) + "\n")
    return EXIT_OK


def _mcp(args: argparse.Namespace) -> int:
    from baton.surfaces.mcp import print_tools, run_stdio
    from baton.surfaces.mcp.tools import UnknownTool

    out = render.Output(json_mode=bool(args.json))
    try:
        if args.print_tools:
            sys.stdout.write(print_tools(args.tools, as_json=args.json) + "\n")
            return EXIT_OK
        return run_stdio(Path(args.cwd).resolve(), args.tools)
    except UnknownTool as exc:
        out.error(str(exc))
        return EXIT_USAGE


async def _dispatch(args: argparse.Namespace, out: render.Output) -> int:
    if args.command == "demo":
        from baton.cli.demo import run_demo

        return await run_demo(out, worker=args.worker, keep=args.keep)
    if args.command == "doctor":
        return await _doctor(args, out)
    if args.command == "serve":
        return await _serve(args, out)
    return await _COMMANDS[args.command](args, out)


async def _serve(args: argparse.Namespace, out: render.Output) -> int:
    from baton.surfaces.ws.serve import serve

    roots = [str(Path(r).resolve()) for r in (args.root or ["."])]

    def ready(endpoint: Endpoint) -> None:
        path = endpoint.discovery_path
        info = {"pid": os.getpid(), "url": endpoint.url, "discovery": str(path), "roots": roots}
        if out.json_mode:  # one line: whoever started it reads it while the broker runs
            sys.stdout.write(json.dumps(info) + "\n")
        else:
            out.console.print(
                f"baton broker {os.getpid()} on {endpoint.url} serving {', '.join(roots)} "
                f"(discovery file {path})",
                markup=False,
            )
        sys.stdout.flush()

    return await serve(roots, idle_exit=args.idle_exit, on_ready=ready)


async def _doctor(args: argparse.Namespace, out: render.Output) -> int:
    """Agent CLIs on PATH with their versions; each profile of the resolved settings (defaults,
    user and project config) with its binary, account and misconfigurations; the default."""
    from baton.agents.doctor import format_report, run_doctor
    from baton.config.layers import ConfigError
    from baton.config.settings import load_settings
    from baton.store import state_home

    root = Path(args.cwd).resolve()
    try:
        settings = await asyncio.to_thread(load_settings, root if root.is_dir() else None)
    except ConfigError as exc:
        out.error(f"Baton's settings: {exc}")
        return EXIT_FAILED
    report = await asyncio.to_thread(
        run_doctor,
        settings.profiles,
        None,
        state_home(),
        default=settings.default_worker,
        default_reason=settings.default_reason,
    )
    sandboxing = await asyncio.to_thread(sandbox.report, settings.sandbox)
    answer = {**report.to_json(), "sandbox": sandboxing}
    answer["ok"] = report.ok and sandboxing["ok"]
    out.result(answer, format_report(report) + "\n" + sandbox.report_text(sandboxing))
    return EXIT_OK if answer["ok"] else EXIT_FAILED


_COMMANDS: dict[str, Callable[[argparse.Namespace, render.Output], Awaitable[int]]] = {
    "delegate": remote.delegate,
    "graph": remote.graph,
    "run": remote.run,
    "watch": remote.watch,
    "tasks": remote.tasks,
    "inspect": remote.inspect,
    "diff": remote.diff,
    "accept": remote.accept,
    "reject": remote.reject,
    "cancel": remote.cancel,
    "reply": remote.turn,
    "answer": remote.answer,
    "steer": remote.turn,
    "retry": remote.turn,
    "memory": remote.memory,
    "workers": remote.workers,
    "health": remote.health,
    **config_cmds.COMMANDS,
    **init_cmd.COMMANDS,
}


def print_json(obj: Any) -> None:
    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")
