"""``baton bench SUITE --workers a,b``: every case of a suite on every worker, then a table.

The broker reads the suite (:mod:`baton.core.bench`, docs/reference/bench.md) and delegates
one task per case, worker and repeat (``--runs``); this command waits until every task is
judged and prints, per worker, the cases passed of those run, the success rate, the median
time, the tokens and the cost. ``--run ID`` reads (or waits for) an earlier run instead,
e.g. one whose broker was stopped while it ran. Ctrl-C cancels the run's unfinished tasks
(they are not counted) and prints what was judged so far.

Exit codes: 0 the bench finished (whatever it measured), 1 it did not (the broker went
away, ``--timeout``), 2 bad input, 130 Ctrl-C.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path
from typing import Any

from baton.cli.remote import EXIT_FAILED, EXIT_OK, UsageError, folder_of
from baton.cli.render import Output
from baton.cli.watching import broker, call
from baton.surfaces.ws.client import Client
from baton.surfaces.ws.errors import BrokerUnavailable

EXIT_INTERRUPTED = 130
#: How often the run's results are read while it runs (seconds).
POLL = 0.5


async def bench(args: argparse.Namespace, out: Output) -> int:
    if (args.suite is None) == (args.run is None):
        raise UsageError("name a suite file, or an earlier run with --run ID")
    root = str(folder_of(args))
    async with broker(args) as c:
        if args.run is not None:
            run = args.run
        else:
            workers = [w.strip() for w in (args.workers or "").split(",") if w.strip()]
            if not workers:
                raise UsageError("--workers: name one or more workers, e.g. --workers a,b")
            suite = str(Path(args.suite).expanduser().resolve())  # as the shell meant it
            started = await call(c, "bench", suite=suite, workers=workers, runs=args.runs, cwd=root)
            run = started["run"]
            out.info(
                f"bench {started['suite']} run {run}: {len(started['tasks'])} task(s) on "
                f"{', '.join(workers)}"
            )
        return await _wait(c, run, out, args.timeout)


async def _wait(c: Client, run: str, out: Output, timeout: float | None) -> int:
    deadline = None if timeout is None else time.monotonic() + timeout
    res: dict[str, Any] = {}
    try:
        while True:
            res = await call(c, "bench", run=run)
            if res["done"]:
                out.result(res, format_results(res))
                return EXIT_OK
            if deadline is not None and time.monotonic() > deadline:
                out.result({**res, "timeout": True}, format_results(res) + "\n(timed out)")
                return EXIT_FAILED
            await asyncio.sleep(POLL)
    except BrokerUnavailable as exc:
        out.error(f"{exc}; the bench's tasks go on in the next broker: see baton bench --run {run}")
        return EXIT_FAILED
    except (asyncio.CancelledError, KeyboardInterrupt):
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        stopped = await call(c, "bench", run=run, stop=True)
        out.result({**stopped, "interrupted": True},
                   format_results(stopped) + f"\ninterrupted: {len(stopped['stopped'])} "
                   "unfinished task(s) cancelled, not counted")  # fmt: skip
        return EXIT_INTERRUPTED


def _cost(value: float | None) -> str:
    return f"{value:.4f}" if value is not None else "-"


def format_results(res: dict[str, Any]) -> str:
    """The run's table, one line per worker, then each failed case with its reason."""
    lines = [f"bench {res['suite']} run {res['run']} ({res['root']})"]
    head = f"{'worker':<16} {'passed':>8} {'rate':>6} {'median s':>9} {'tokens':>9} {'cost':>9}"
    lines.append(head)
    for w in res["table"]:
        rate = f"{w['rate']:.0%}" if w["rate"] is not None else "-"
        median = f"{w['medianSeconds']:.1f}" if w["medianSeconds"] is not None else "-"
        passed = f"{w['passed']}/{w['run']}"
        extra = f"  ({w['pending']} running)" if w["pending"] else ""
        extra += f"  ({w['stopped']} stopped, not counted)" if w["stopped"] else ""
        lines.append(
            f"{w['worker']:<16} {passed:>8} {rate:>6} {median:>9} {w['tokens']:>9} "
            f"{_cost(w['cost']):>9}{extra}"
        )
    failed = [t for t in res["tasks"] if t["passed"] is False]
    if failed:
        lines.append("failed:")
        lines += [f"  {t['worker']} {t['case']} ({t['id']}): {t['reason']}" for t in failed]
    return "\n".join(lines)
