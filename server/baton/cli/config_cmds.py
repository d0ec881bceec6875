"""``baton config``, ``baton secret`` and ``baton stats``: settings, secrets and the ledger.

These work without a broker: ``config`` reads the files, ``secret`` talks to the keyring,
``stats`` reads the store. Nothing here prints a secret's value unless asked with
``secret get --reveal``; env values of secret-like variables are shown masked. The settings
and the keyring are imported when a command runs (the CLI's parser is built from this module).
"""

from __future__ import annotations

import argparse
import sys
import time

from baton.cli.render import Output

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs start-up)
if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable
    from typing import Any

    from baton.config.settings import Settings

    Command = Callable[[argparse.Namespace, Output], Awaitable[int]]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def add_commands(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    """Add the subcommands, given the CLI's ``cmd(name, help)`` (which adds ``--json``)."""
    c = cmd("config", "print the effective settings of a folder and the file each came from")
    c.add_argument("dir", nargs="?", default=".", help="the project folder (default: .)")

    c = cmd("secret", "store, check or remove a secret in the OS keyring")
    c.add_argument("action", choices=["set", "get", "delete"])
    c.add_argument(
        "name",
        help="SERVICE/NAME or NAME (service baton); refer to it in a "
        "profile's env as keyring:SERVICE/NAME",
    )
    c.add_argument("--reveal", action="store_true", help="get: print the value itself")

    c = cmd(
        "stats",
        "outcomes per worker, model and kind (the evidence ledger); cool-downs; bench runs",
    )
    c.add_argument("--cwd", help="only tasks of this project folder")


# -- baton config --------------------------------------------------------------------------------


def _shown(key: str, value: Any) -> Any:
    """A setting's value as it may be printed (secret-like env values and options masked)."""
    from baton.config import secrets

    parts = key.split(".")
    if len(parts) >= 4 and parts[0] == "profiles" and parts[2] == "env":
        return secrets.mask(parts[3].strip('"'), value)
    if isinstance(value, dict):
        return {
            k: _shown(f"{key}.{k}", v) if isinstance(v, dict) else _opt(k, v)
            for k, v in value.items()
        }
    return value


def _opt(name: str, value: Any) -> Any:
    from baton.config import secrets

    return secrets.mask(name, value) if isinstance(value, str) else value


def settings_json(settings: Settings) -> dict[str, Any]:
    """The effective settings with each value's source, masked where secret-like."""
    return {
        "root": str(settings.root) if settings.root else None,
        "layers": [layer.to_json() for layer in settings.layers],
        "settings": {
            key: {"value": _shown(key, settings.values[key]), "source": src.to_json()}
            for key, src in sorted(settings.provenance.items())
        },
    }


def _toml_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + " }"
    return str(value)


def format_settings(settings: Settings) -> str:
    lines = [f"settings for {settings.root}" if settings.root else "settings"]
    for layer in reversed(settings.layers):
        if layer.name == "default":
            lines.append("  default  built in, and agent CLIs found on PATH")
        else:
            state = "" if layer.exists else "  (none)"
            lines.append(f"  {layer.name:<8} {layer.path or '-'}{state}")
    lines.append("")
    rows = [
        (f"{key} = {_toml_value(_shown(key, settings.values[key]))}", str(src))
        for key, src in sorted(settings.provenance.items())
    ]
    width = min(72, max((len(r[0]) for r in rows), default=0))
    lines += [f"{text:<{width}}  # {src}" for text, src in rows]
    return "\n".join(lines)


async def config(args: argparse.Namespace, out: Output) -> int:
    import asyncio
    from pathlib import Path

    from baton.config.layers import ConfigError
    from baton.config.settings import load_settings

    root = Path(args.dir).resolve()
    if not root.is_dir():
        out.error(f"{args.dir}: not a folder")
        return EXIT_USAGE
    try:
        settings = await asyncio.to_thread(load_settings, root)
    except ConfigError as exc:
        out.error(str(exc))
        return EXIT_FAILED
    out.result(settings_json(settings), format_settings(settings))
    return EXIT_OK


# -- baton secret --------------------------------------------------------------------------------


def _read_value(name: str) -> str:
    """The secret from a hidden prompt on a terminal, else from stdin (never from argv)."""
    from baton.config import secrets

    if sys.stdin.isatty():
        import getpass

        value = getpass.getpass(f"value for {name}: ")
    else:
        value = sys.stdin.read().rstrip("\r\n")
    if not value:
        raise secrets.SecretError("the value is empty; nothing was stored")
    return value


async def secret(args: argparse.Namespace, out: Output) -> int:
    import asyncio

    from baton.config import secrets

    try:
        ref = secrets.parse_name(args.name)
        user = await asyncio.to_thread(_user_backend_choice)
        secrets.use_backend(user)
        if args.action == "set":
            value = _read_value(ref.label)
            await asyncio.to_thread(secrets.set_secret, ref, value)
            out.result(
                {"name": ref.label, "reference": str(ref), "stored": True},
                f"stored {ref.label}; use it in a profile's env as {ref}",
            )
            return EXIT_OK
        if args.action == "get":
            found = await asyncio.to_thread(secrets.get_secret, ref)
            if found is None:
                out.error(f"no secret {ref.label} in the keyring")
                return EXIT_FAILED
            shown = found if args.reveal else secrets.MASK
            out.result(
                {"name": ref.label, "reference": str(ref), "set": True, "value": shown},
                shown if args.reveal else f"{ref.label} is set ({secrets.MASK})",
            )
            return EXIT_OK
        removed = await asyncio.to_thread(secrets.delete_secret, ref)
        out.result(
            {"name": ref.label, "deleted": removed},
            f"deleted {ref.label}" if removed else f"no secret {ref.label}; nothing deleted",
        )
        return EXIT_OK if removed else EXIT_FAILED
    except secrets.SecretError as exc:
        out.error(str(exc))
        return EXIT_FAILED


def _user_backend_choice() -> str | None:
    """The user's ``[secrets] backend`` (project files may not choose it)."""
    from baton.config.layers import ConfigError
    from baton.config.settings import load_settings

    try:
        return load_settings(None).secrets_backend
    except ConfigError:
        return None


# -- baton stats ---------------------------------------------------------------------------------


async def stats(args: argparse.Namespace, out: Output) -> int:
    import asyncio
    from pathlib import Path

    from baton.runtime import accounts, bench_stats
    from baton.store import Store
    from baton.store.paths import db_path, state_home

    root = str(Path(args.cwd).resolve()) if args.cwd else None

    def read() -> tuple[list[accounts.Stat], dict[str, accounts.Cooldown], list[Any]]:
        with Store(db_path(state_home())) as store:
            found = accounts.stats(store, root), accounts.cooldowns(store)
            return (*found, bench_stats(store, root))

    rows, cooling, benches = await asyncio.to_thread(read)
    doc = {
        "stats": [r.to_json() for r in rows],
        "cooldowns": [c.to_json() for c in cooling.values()],
        "bench": benches,
    }
    text = format_stats(rows, list(cooling.values()))
    out.result(doc, text + ("\n" + format_bench(benches) if benches else ""))
    return EXIT_OK


def format_bench(rows: list[dict[str, Any]]) -> str:
    """The bench section: per suite and worker, every run of it summed."""
    lines = ["bench (every run of each suite, per worker):"]
    head = f"{'suite':<16} {'worker':<16} {'benches':>7} {'passed':>8} {'rate':>6} "
    lines.append(head + f"{'median s':>9} {'tokens':>9} {'cost':>9}")
    for r in rows:
        rate = f"{r['rate']:.0%}" if r["rate"] is not None else "-"
        median = f"{r['medianSeconds']:.1f}" if r["medianSeconds"] is not None else "-"
        cost = f"{r['cost']:.4f}" if r["cost"] is not None else "-"
        passed = f"{r['passed']}/{r['run']}"
        lines.append(
            f"{r['suite']:<16} {r['worker']:<16} {r['benches']:>7} {passed:>8} {rate:>6} "
            f"{median:>9} {r['tokens']:>9} {cost:>9}"
        )
    return "\n".join(lines)


def format_stats(rows: list[Any], cooling: list[Any]) -> str:
    lines = []
    if not rows:
        lines.append("no settled tasks yet")
    else:
        head = f"{'worker':<16} {'model':<22} {'kind':<11} {'tasks':>5} {'ok':>5} "
        lines.append(head + f"{'accepted':>8} {'mean s':>7} {'tokens':>9} {'cost':>8}")
        for r in rows:
            acc = f"{r.accepted_share:.0%}" if r.accepted_share is not None else "-"
            cost = f"{r.cost:.4f}" if r.cost is not None else "-"
            lines.append(
                f"{r.worker:<16} {r.model or '-':<22} {r.kind:<11} {r.tasks:>5} "
                f"{r.ok_share:>5.0%} {acc:>8} {r.duration:>7.1f} "
                f"{r.input_tokens + r.output_tokens:>9} {cost:>8}"
            )
    for c in cooling:
        until = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(c.until))
        lines.append(f"cooling down: {c.worker} ({c.provider}) until {until}: {c.reason}")
    return "\n".join(lines)


COMMANDS: dict[str, Command] = {"config": config, "secret": secret, "stats": stats}
