"""The cost of the agent's isolated checkout against a plain ``git worktree add``.

A task's checkout is a git repository of its own that borrows the user's objects
(``baton.workspace.checkout``), so nothing the agent does with git reaches the user's
``.git``. This measures, interleaved (the order alternates every round, so a busy machine
weighs on both alike), ``create_worktree`` of a snapshot against ``git worktree add`` of the
same commit in a generated repository, and prints the medians and their ratio.
Goal: the isolated checkout within 1.2x of ``git worktree add``.

Run: .venv/bin/python benchmarks/checkout_isolated.py [--files 5000] [--rounds 15] [--dir D]
[--quick] [--server-path DIR]
(``--dir`` picks the file system: both figures are mostly file creation, so a slow disk
brings the ratio towards 1.)
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from baton.workspace import create_worktree, remove_worktree, take_snapshot
from figures import add_server_path, figure, use_server

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
        ours: list[float] = []
        plain: list[float] = []
        for n in range(args.rounds):
            if n % 2 == 0:
                ours.append(isolated(root, state, wts, f"i{n}"))
                plain.append(linked(root, commit, wts, f"w{n}"))
            else:
                plain.append(linked(root, commit, wts, f"w{n}"))
                ours.append(isolated(root, state, wts, f"i{n}"))
    mine, theirs = statistics.median(ours), statistics.median(plain)
    ratio = mine / theirs
    paired = statistics.median(a / b for a, b in zip(ours, plain, strict=True))
    print(f"{args.files} files, median of {args.rounds} interleaved rounds:")
    print(f"  isolated checkout (create_worktree) {mine * 1000:8.1f} ms")
    print(f"  git worktree add                    {theirs * 1000:8.1f} ms")
    verdict = "within" if ratio <= GOAL else "over"
    print(f"  ratio {ratio:.2f}x ({verdict} the {GOAL}x goal)")
    print(f"  median of the per-round ratios {paired:.2f}x")
    figure(
        f"checkout per task, {args.files} files",
        mine * 1000,
        theirs * 1000,
        "raw git worktree add of the same commit",
        runs=args.rounds,
        goal=GOAL,
    )


if __name__ == "__main__":
    main()
