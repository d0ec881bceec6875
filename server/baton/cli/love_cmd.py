"""``baton love [worker[:model]] [--clear] [--global]``: the default worker (and model) for
work that names none, per project or for the user, written to the right config file.

The project's file is the one Baton reads for the folder (``.baton.toml``, else a
``pyproject.toml`` with a ``[tool.baton]`` table; a new ``.baton.toml`` in the folder when
there is none); ``--global`` writes the user's config. Only ``default_worker`` and
``default_model`` change (:mod:`baton.config.writing`); a running broker sees the change
through its watcher. Runs without a broker.
"""

from __future__ import annotations

import argparse

from baton.cli.render import Output

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs start-up)
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_commands(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    c = cmd(
        "love",
        "the default worker (and model) for work that names none: show it, set it for this "
        "project (or, --global, for you), or clear it",
    )
    c.add_argument(
        "choice", nargs="?", metavar="WORKER[:MODEL]", help="a profile (see baton workers)"
    )
    c.add_argument("--clear", action="store_true", help="remove the default set in that file")
    c.add_argument("--global", dest="user", action="store_true", help="your user config")
    c.add_argument("--cwd", default=".", help="the project folder (default: .)")


async def love(args: argparse.Namespace, out: Output) -> int:
    import asyncio
    from pathlib import Path

    from baton.cli.remote import UsageError
    from baton.config import defaults_file
    from baton.config.layers import ConfigError

    root = Path(args.cwd).resolve()
    if not root.is_dir():
        raise UsageError(f"--cwd {args.cwd}: not a folder")
    if args.choice and args.clear:
        raise UsageError("give a worker or --clear, not both")
    try:
        if not args.choice and not args.clear:
            now = await asyncio.to_thread(defaults_file.in_effect, root)
            out.result(now, _line(now))
            return EXIT_OK
        worker = model = None
        if args.choice:
            worker, _, model = (s.strip() for s in args.choice.partition(":"))
            if not worker:
                raise UsageError("name a worker: baton love WORKER[:MODEL]")
        answer = await asyncio.to_thread(defaults_file.choose, root, worker, model, user=args.user)
    except defaults_file.UnknownWorker as exc:
        raise UsageError(str(exc)) from None
    except ConfigError as exc:
        out.error(f"Baton's settings: {exc}")
        return EXIT_FAILED
    path, now, values = answer["file"], answer, answer["set"]
    said = "cleared the default in" if args.clear else "set the default in"
    text = f"{said} {path}\n{_line(now)}"
    if args.user and args.choice and now["default"] != values["default_worker"]:
        text += "\n(this project's own setting wins here)"
    out.result(answer, text)
    return EXIT_OK


def _line(now: dict[str, Any]) -> str:
    if not now["default"]:
        return f"no default worker: {now['reason']}"
    model = f" (model {now['model']})" if now["model"] else ""
    return f"default: {now['default']}{model} — {now['reason']}"
