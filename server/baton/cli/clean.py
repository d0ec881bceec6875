"""``baton clean``: remove what Baton keeps on disk only to go faster.

For now that is the warm pool (:mod:`baton.workspace.pool`): the checkouts made ahead of
need under the state folder. Task checkouts, snapshots and results are left alone; a broker
that refills the pool later makes it anew. Runs without a broker.
"""

from __future__ import annotations

import argparse
import asyncio

from baton.cli.render import Output

EXIT_OK = 0


async def clean(args: argparse.Namespace, out: Output) -> int:
    from baton.store.paths import state_home, worktrees_dir
    from baton.workspace.pool import clear

    count, size = await asyncio.to_thread(clear, worktrees_dir(state_home()))
    out.result(
        {"pool": {"removed": count, "bytes": size}},
        f"removed {count} ready checkout(s) of the warm pool ({size / 1e6:.1f} MB)",
    )
    return EXIT_OK
