"""``baton export`` and ``baton import``: the record of this state home to a file and back
(:mod:`baton.store.transfer`; the format is in docs/reference/export.md).

Both work on the database directly, broker running or not: an export reads one snapshot, an
import is one transaction that adds only what the home does not have.
"""

from __future__ import annotations

import argparse
import re
import sys
import time

from baton.cli.render import Output

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs start-up)
if TYPE_CHECKING:
    from collections.abc import Callable

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
_AGO = re.compile(r"^(\d+(?:\.\d+)?)\s*([smhdw])$")
_UNIT = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def add_commands(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    c = cmd("export", "write tasks, events, decisions, the ledger and memory to a file")
    c.add_argument("file", help="the file to write (replaced atomically), or - for stdout")
    c.add_argument(
        "--since",
        help="only tasks updated since then: a date (2026-11-01), a time (2026-11-01T09:30) "
        "or an age (7d, 12h, 30m)",
    )
    c = cmd("import", "add the tasks and records of an export that this state home lacks")
    c.add_argument("file", help="an export written by baton export, or - for stdin")


def since_of(text: str, now: float | None = None) -> float:
    """Seconds since the epoch for ``--since``: an age before ``now``, or an ISO date/time
    (local time unless it names its zone)."""
    from datetime import datetime

    now = time.time() if now is None else now
    m = _AGO.match(text.strip())
    if m:
        return now - float(m.group(1)) * _UNIT[m.group(2)]
    try:
        return datetime.fromisoformat(text.strip()).timestamp()
    except ValueError:
        raise ValueError(
            f"--since {text}: expected a date (2026-11-01), a time (2026-11-01T09:30) or an "
            "age (7d, 12h, 30m)"
        ) from None


def _summary(rows: dict[str, int]) -> str:
    return ", ".join(f"{n} {table}" for table, n in rows.items() if n) or "no rows"


async def export(args: argparse.Namespace, out: Output) -> int:
    import asyncio
    from pathlib import Path

    from baton.store import Store
    from baton.store.paths import db_path, state_home
    from baton.store.transfer import export as write

    try:
        since = since_of(args.since) if args.since else None
    except ValueError as exc:
        out.error(str(exc))
        return EXIT_USAGE
    target = sys.stdout if args.file == "-" else Path(args.file).resolve()

    def run() -> dict[str, int]:
        with Store(db_path(state_home())) as store:
            return write(store, target, since=since).rows

    try:
        rows = await asyncio.to_thread(run)
    except OSError as exc:
        out.error(f"cannot write {args.file}: {exc}")
        return EXIT_FAILED
    if args.file == "-":  # the export is the output: the summary goes to stderr
        sys.stderr.write(f"exported {_summary(rows)}\n")
        return EXIT_OK
    out.result({"file": str(target), "rows": rows}, f"exported {_summary(rows)} to {target}")
    return EXIT_OK


async def import_(args: argparse.Namespace, out: Output) -> int:
    import asyncio
    from pathlib import Path

    from baton.store import Store
    from baton.store.paths import db_path, state_home
    from baton.store.transfer import TransferError
    from baton.store.transfer import import_ as read

    source = sys.stdin if args.file == "-" else Path(args.file).resolve()

    def run() -> dict[str, object]:
        with Store(db_path(state_home())) as store:
            return read(store, source).to_json()

    try:
        report = await asyncio.to_thread(run)
    except TransferError as exc:
        out.error(str(exc))
        return EXIT_FAILED
    rows = report["rows"]
    skipped = report["skipped_tasks"]
    assert isinstance(rows, dict) and isinstance(skipped, list)
    text = f"imported {_summary(rows)}"
    if skipped:
        shown = ", ".join(skipped[:5]) + (", …" if len(skipped) > 5 else "")
        text += f"; skipped {len(skipped)} task(s) this home already has: {shown}"
    out.result(report, text)
    return EXIT_OK
