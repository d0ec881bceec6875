"""``baton init``: write a commented user config for the agent CLIs found on this machine.

The settings are imported when the command runs (the CLI's parser is built from this module).
"""

from __future__ import annotations

import argparse

from baton.cli.render import Output

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs start-up)
if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    Command = Callable[[argparse.Namespace, Output], Awaitable[int]]

EXIT_OK, EXIT_FAILED = 0, 1


def add_commands(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    c = cmd("init", "write your user config for the agent CLIs found, with the default worker")
    c.add_argument("--force", action="store_true", help="replace an existing user config")
    c.add_argument("--print", action="store_true", help="print it instead of writing it")


async def init(args: argparse.Namespace, out: Output) -> int:
    import asyncio

    from baton.config.layers import ConfigError, user_config_path
    from baton.config.profiles import discover
    from baton.config.settings import load_settings
    from baton.config.starter import starter_config

    path = user_config_path()
    profiles = await asyncio.to_thread(discover)
    text = await asyncio.to_thread(starter_config, profiles)
    if args.print:
        out.result({"path": str(path), "text": text}, text.rstrip("\n"))
        return EXIT_OK
    if path.exists() and not args.force:
        out.error(f"{path} exists; keep it, or replace it with `baton init --force`")
        return EXIT_FAILED
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    try:
        settings = await asyncio.to_thread(load_settings, None)
    except ConfigError as exc:  # a bug here: say it rather than leave a broken file unsaid
        out.error(f"wrote {path}, but it does not load: {exc}")
        return EXIT_FAILED
    default = settings.default_worker
    human = f"wrote {path}\n" + (
        f"default worker: {default} ({settings.default_reason})"
        if default
        else f"no default worker yet: {settings.default_reason}"
    )
    doc = {"path": str(path), "default": default or None, "reason": settings.default_reason}
    out.result(doc, human)
    return EXIT_OK


COMMANDS: dict[str, Command] = {"init": init}
