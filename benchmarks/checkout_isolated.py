"""The agent's checkout per task: from the warm pool, made fresh, and a raw ``git worktree add``.

A task's checkout is a git repository of its own that borrows the user's objects
(``baton.workspace.checkout``), so nothing the agent does with git reaches the user's
``.git``. Made fresh (``create_worktree``), it writes every file of the tree; taken from the
warm pool (``baton.workspace.pool.take``), a checkout made ahead of need is moved to the
task's snapshot with ``git read-tree -m -u`` (the files that differ: here the one file the
user changed since the pool was filled) and checked with ``git status``. The three are
measured in the same rounds, interleaved (the order alternates every round, so a busy
machine weighs on each alike), in a generated repository; the pool is refilled before each
of its rounds, untimed, as the broker does after a task started. Printed: the medians and
their ratios to the floor, a raw ``git worktree add`` of the same commit.
Goals: the fresh checkout within 1.2x of ``git worktree add``; the pool's far under it and
never above the fresh one (issue 18: created → agent started ≤ 100 ms on 5,000 files).

Run: .venv/bin/python benchmarks/checkout_isolated.py [--files 5000] [--rounds 15] [--dir D]
[--quick] [--server-path DIR]
(``--dir`` picks the file system: the fresh checkout and the floor are mostly file creation,
so a slow disk brings their ratio towards 1.)
"""

from __future__ import annotations

import argparse
import importlib.util
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from baton.workspace import create_worktree, remove_worktree, take_snapshot
from figures import add_server_path, figure, interleaved, load, use_server

GOAL = 1.2


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def make_repo(root: Path, files: int) -> None:
    """A repository of ``files`` Python files of about 1 KiB in 50 folders, one commit."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Bench")
    git(root, "config", "user.email", "bench@example.com")
    for i in range(files):
        folder = root / f"pkg{i % 50}" / f"sub{i % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        body = "".join(f"def f{j}(x):\n    return x + {i * j}\n\n" for j in range(30))
        (folder / f"mod{i}.py").write_text(body)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "bench")


def isolated(root: Path, state: Path, wts: Path, task: str) -> float:
    """Seconds to create the agent's checkout of a snapshot taken beforehand (not timed)."""
    snap = take_snapshot(root, task, state_home=state)
    t0 = time.perf_counter()
    path = create_worktree(snap, task, wts)
    took = time.perf_counter() - t0
    remove_worktree(snap, task, path)
    return took


def pooled(root: Path, state: Path, wts: Path, task: str) -> float:
    """Seconds to take the checkout from the pool, filled beforehand (not timed) at a
    snapshot one changed file behind the task's."""
    from baton.workspace.pool import PoolLimits, fill, take

    pool = PoolLimits(size=1, min_files=1)
    before = take_snapshot(root, f"{task}-pool", state_home=state)
    if fill(before.git_dir, before.commit, wts, pool) != 1:
        raise RuntimeError("the pool was not filled")
    remove_worktree(before, f"{task}-pool", wts / f"{task}-pool")  # its refs only
    (root / "pkg0" / "sub0" / "mod0.py").write_text(f"# changed for {task}\n")
    snap = take_snapshot(root, task, state_home=state)
    t0 = time.perf_counter()
    path = take(snap, task, wts, pool)
    took = time.perf_counter() - t0
    if path is None:
        raise RuntimeError("the pool had no checkout to take")
    remove_worktree(snap, task, path)
    return took


def linked(root: Path, commit: str, wts: Path, task: str) -> float:
    """Seconds for ``git worktree add`` of ``commit`` (hooks off, as Baton's git runs)."""
    path = wts / task
    t0 = time.perf_counter()
    git(
        root,
        "-c",
        "core.hooksPath=/dev/null",
        "worktree",
        "add",
        "-q",
        "--detach",
        str(path),
        commit,
    )
    took = time.perf_counter() - t0
    shutil.rmtree(path)
    git(root, "worktree", "prune")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--files", type=int, default=5000)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--dir", type=Path, default=None, help="where to work (default: temp)")
    parser.add_argument("--quick", action="store_true", help="100 files, 3 rounds: a smoke run")
    add_server_path(parser)
    args = parser.parse_args()
    use_server(args.server_path)
    if args.quick:
        args.files, args.rounds = 100, 3
    with tempfile.TemporaryDirectory(prefix="baton-bench-", dir=args.dir) as tmp:
        base = Path(tmp)
        root, state, wts = base / "repo", base / "state", base / "wts"
        make_repo(root, args.files)
        wts.mkdir()
        commit = take_snapshot(root, "warm", state_home=state).commit
        isolated(root, state, wts, "warm")  # warm the page cache and git's own start-up
        linked(root, commit, wts, "warm")
        # An older checkout (--server-path) may have no warm pool: its figure is left out.
        has_pool = importlib.util.find_spec("baton.workspace.pool") is not None
        if has_pool:
            pooled(root, state, wts, "warm")
        n = iter(range(10**6))
        runs = {
            "fresh": lambda: isolated(root, state, wts, f"i{next(n)}"),
            "raw": lambda: linked(root, commit, wts, f"w{next(n)}"),
        }
        if has_pool:
            runs["pool"] = lambda: pooled(root, state, wts, f"p{next(n)}")
        got = interleaved(runs, args.rounds)
    fresh, raw = (statistics.median(got[k]) for k in ("fresh", "raw"))
    print(f"{args.files} files, median of {args.rounds} interleaved rounds, load {load()}:")
    if not has_pool:
        print("  (this checkout has no warm pool)")
        got["pool"] = got["fresh"]
    pool = statistics.median(got["pool"])
    if has_pool:
        print(f"  from the warm pool (take)           {pool * 1000:8.1f} ms  {pool / raw:.2f}x raw")
    print(f"  fresh checkout (create_worktree)    {fresh * 1000:8.1f} ms  {fresh / raw:.2f}x raw")
    print(f"  git worktree add                    {raw * 1000:8.1f} ms")
    verdict = "within" if fresh / raw <= GOAL else "over"
    against = f"; pool / fresh {pool / fresh:.2f}x" if has_pool else ""
    print(f"  fresh: {verdict} the {GOAL}x goal{against}")
    for name, ours in (("pool", got["pool"]), ("fresh", got["fresh"]))[0 if has_pool else 1 :]:
        paired = statistics.median(a / b for a, b in zip(ours, got["raw"], strict=True))
        print(f"  {name}: median of the per-round ratios {paired:.2f}x")
    if has_pool:
        figure(
            f"checkout per task from the warm pool, {args.files} files",
            pool * 1000,
            raw * 1000,
            "raw git worktree add of the same commit",
            runs=args.rounds,
        )
    figure(
        f"checkout per task, {args.files} files",
        fresh * 1000,
        raw * 1000,
        "raw git worktree add of the same commit",
        runs=args.rounds,
        goal=GOAL,
    )


if __name__ == "__main__":
    main()
