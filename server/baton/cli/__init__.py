"""The ``baton`` command.

Most commands are clients of the broker that serves the folder (a websocket, see
:mod:`baton.surfaces.ws`); with none running, the first command starts a headless one
(``baton serve``) that exits once idle. ``baton lsp`` and ``baton serve`` are brokers;
``baton mcp`` bridges MCP on stdio to the broker; ``baton demo`` runs its own throwaway
broker. Every command but ``lsp``, ``mcp`` and ``completion`` takes ``--json`` and then prints
exactly one JSON document (bad arguments too).
Exit codes: 0 done, 1 failed (or timed out), 2 bad input.

Start-up: a command imports what it uses when it runs. ``baton --version`` imports nothing
but this module; the parser (:mod:`baton.cli.parser`) only the standard library and light
modules; the websocket client path no runtime, store, rich or keyring
(tests/unit/test_startup_imports.py keeps it so).
"""

from __future__ import annotations

import sys

from baton import __version__

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs start-up)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Awaitable, Callable, Sequence
    from typing import Any

    from baton.cli import render
    from baton.surfaces.ws.endpoint import Endpoint

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    from baton.cli.parser import build

    return build()


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv == ["--version"]:  # what argparse prints for it, without building the parser
        sys.stdout.write(f"baton {__version__}\n")
        return EXIT_OK
    from baton.cli import logs, render
    from baton.cli.parser import ArgumentError

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
        from baton.cli import ide_cmds

        return ide_cmds.run(args, out)
    if args.command in _REMOTE:  # one request, one answer: no event loop to start
        return _guarded(lambda: _remote(args.command)(args, out), out)
    import asyncio

    return _guarded(lambda: asyncio.run(_dispatch(args, out)), out)


def _guarded(run: Callable[[], int], out: render.Output) -> int:
    """Run a command; turn the errors a user can meet into a message and an exit code."""
    from baton.cli.remote import USAGE_CODES, UsageError
    from baton.surfaces.ws.errors import BrokerError, BrokerUnavailable

    try:
        return run()
    except UsageError as exc:
        out.error(str(exc))
        return EXIT_USAGE
    except BrokerError as exc:
        out.error(exc.message)
        return EXIT_USAGE if exc.code in USAGE_CODES else EXIT_FAILED
    except BrokerUnavailable as exc:
        out.error(str(exc))
        return EXIT_FAILED
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        failed = _local_failure(exc)
        if failed is None:
            raise
        code, message = failed
        out.error(message)
        return code


def _local_failure(exc: Exception) -> tuple[int, str] | None:
    """The exit code and message for an error of the commands that work without a broker
    (the store's, the supervisor's), or None for any other: the kinds of
    :mod:`baton.errors`, imported on the way out (it imports nothing)."""
    from baton.errors import NotFound, WrongState
    from baton.store.errors import StoreError

    if isinstance(exc, (NotFound, WrongState)):
        return EXIT_USAGE, str(exc)
    if isinstance(exc, StoreError):
        return EXIT_FAILED, f"state folder: {exc}"
    return None


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
    from baton.cli import render
    from baton.surfaces.mcp import print_tools, run_stdio
    from baton.surfaces.mcp.tools import UnknownTool

    out = render.Output(json_mode=bool(args.json))
    try:
        if args.print_tools:
            sys.stdout.write(print_tools(args.tools, as_json=args.json) + "\n")
            return EXIT_OK
        from pathlib import Path

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
    return await _command(args.command)(args, out)


async def _serve(args: argparse.Namespace, out: render.Output) -> int:
    import json
    import os
    from pathlib import Path

    from baton.surfaces.ws.serve import serve

    roots = [str(Path(r).resolve()) for r in (args.root or ["."])]

    def ready(endpoint: Endpoint) -> None:
        path = endpoint.discovery_path
        info = {"pid": os.getpid(), "url": endpoint.url, "discovery": str(path), "roots": roots}
        if out.json_mode:  # one line: whoever started it reads it while the broker runs
            sys.stdout.write(json.dumps(info) + "\n")
        else:  # plain text: rich would cost the broker's start what it saves
            sys.stdout.write(
                f"baton broker {os.getpid()} on {endpoint.url} serving {', '.join(roots)} "
                f"(discovery file {path})\n"
            )
        sys.stdout.flush()

    return await serve(roots, idle_exit=args.idle_exit, on_ready=ready)


async def _doctor(args: argparse.Namespace, out: render.Output) -> int:
    """Agent CLIs on PATH with their versions; each profile of the resolved settings (defaults,
    user and project config) with its binary, account and misconfigurations; the default."""
    import asyncio
    from pathlib import Path

    from baton.cli.doctor import format_report, run_doctor
    from baton.config.layers import ConfigError
    from baton.config.settings import load_settings
    from baton.process import sandbox
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
    # ``workers_ok``: a real agent CLI can run as the default; ``ok``: that, and the sandbox
    # does not refuse it.
    answer = {**report.to_json(), "workers_ok": report.ok, "sandbox": sandboxing}
    answer["ok"] = report.ok and sandboxing["ok"]
    said = sandboxing["summary"] + (f"\n  {sandboxing['advice']}." if sandboxing["advice"] else "")
    out.result(answer, format_report(report) + "\n" + said)
    return EXIT_OK if answer["ok"] else EXIT_FAILED


#: The commands of :mod:`baton.cli.remote`: one request to the broker, run without an event loop.
_REMOTE = (
    "delegate", "graph", "answer", "accept", "reject", "reopen", "complete", "archive", "memory",
    "workers", "health", "clean", "dashboard",
)  # fmt: skip
_WATCHING = ("run", "watch", "tasks", "inspect", "diff", "cancel")
#: The commands run through :func:`_dispatch`: the module (of this package) and function that
#: run each, imported when the command runs.
_COMMANDS: dict[str, tuple[str, str]] = {
    **{name: ("watching", name) for name in _WATCHING},
    **{name: ("watching", "turn") for name in ("reply", "steer", "retry", "handoff")},
    **{name: ("config_cmds", name) for name in ("config", "secret", "stats")},
    "init": ("init_cmd", "init"),
    "export": ("store_cmds", "export"),
    "import": ("store_cmds", "import_"),
    "adapter": ("adapter_check", "adapter"),
    "plan": ("plan_cmd", "plan"),
    "bench": ("bench_cmd", "bench"),
    "edit": ("task_cmds", "edit"),
    "ask": ("task_cmds", "ask"),
    "love": ("love_cmd", "love"),
}


def _command(name: str) -> Callable[[argparse.Namespace, render.Output], Awaitable[int]]:
    import importlib

    module, function = _COMMANDS[name]
    handler: Callable[[argparse.Namespace, render.Output], Awaitable[int]] = getattr(
        importlib.import_module(f"baton.cli.{module}"), function
    )
    return handler


def _remote(name: str) -> Callable[[argparse.Namespace, render.Output], int]:
    from baton.cli import remote

    handler: Callable[[argparse.Namespace, render.Output], int] = getattr(remote, name)
    return handler


def print_json(obj: Any) -> None:
    import json

    sys.stdout.write(json.dumps(obj, indent=2, default=str) + "\n")
