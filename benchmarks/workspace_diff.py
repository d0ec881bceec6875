"""How long snapshot, worktree, diff and accept take in a 2,000-file repository.

The goal: compute_diff of a worktree where the worker changed 2 files in well under
200 ms. Prints the median of several runs of each step, and beside three of them their floor
measured in the same rounds (the raw git commands a script would run, order alternating):
the snapshot beside ``git add -A`` + ``write-tree`` + ``commit-tree`` with a temporary index,
the worktree beside ``git worktree add``, the diff beside ``git diff`` in the checkout.
Run: .venv/bin/python benchmarks/workspace_diff.py [files] [--quick]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from baton.workspace import accept, compute_diff, create_worktree, remove_worktree, take_snapshot
from figures import figure

RUNS = 7


def git(root: Path, *args: str, env: dict[str, str] | None = None) -> str:
    out = subprocess.run(["git", *args], cwd=root, check=True, capture_output=True, env=env)
    return out.stdout.decode()


def raw_snapshot(root: Path, index: Path) -> float:
    """Seconds for the raw commands that commit what the user sees, the user's index untouched."""
    env = {**os.environ, "GIT_INDEX_FILE": str(index)}
    t0 = time.perf_counter()
    git(root, "read-tree", "HEAD", env=env)
    git(root, "add", "-A", env=env)
    tree = git(root, "write-tree", env=env).strip()
    git(root, "commit-tree", tree, "-p", "HEAD", "-m", "snapshot", env=env)
    took = time.perf_counter() - t0
    index.unlink()
    return took


def raw_worktree(root: Path, path: Path) -> float:
    t0 = time.perf_counter()
    git(root, "-c", "core.hooksPath=/dev/null", "worktree", "add", "-q", "--detach", str(path))
    took = time.perf_counter() - t0
    shutil.rmtree(path)
    git(root, "worktree", "prune")
    return took


def make_repo(root: Path, files: int) -> None:
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Bench")
    git(root, "config", "user.email", "bench@example.com")
    for i in range(files):
        folder = root / f"pkg{i % 40}"
        folder.mkdir(exist_ok=True)
        body = "".join(f"def f{j}(x):\n    return x + {i * j}\n\n" for j in range(30))
        (folder / f"mod{i}.py").write_text(body)
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "bench")


def main() -> None:
    quick = "--quick" in sys.argv
    args = [a for a in sys.argv[1:] if a != "--quick"]
    files = int(args[0]) if args else (300 if quick else 2000)
    runs = 3 if quick else RUNS
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root, state, wts = base / "repo", base / "state", base / "wts"
        make_repo(root, files)
        (root / "pkg0" / "mod0.py").write_text("# uncommitted\n")
        steps: dict[str, list[float]] = {"snapshot": [], "worktree": [], "diff": [], "accept": []}
        floors: dict[str, list[float]] = {"snapshot": [], "worktree": [], "diff": []}
        wts.mkdir()
        for run in range(runs):
            task = f"bench{run}"
            if run % 2:  # the floors first every other round
                floors["snapshot"].append(raw_snapshot(root, base / "index") * 1000)
                floors["worktree"].append(raw_worktree(root, wts / f"raw{run}") * 1000)
            t0 = time.perf_counter()
            snap = take_snapshot(root, task, state_home=state)
            t1 = time.perf_counter()
            wt = create_worktree(snap, task, wts)
            t2 = time.perf_counter()
            if not run % 2:
                floors["snapshot"].append(raw_snapshot(root, base / "index") * 1000)
                floors["worktree"].append(raw_worktree(root, wts / f"raw{run}") * 1000)
            for name in ("pkg1/mod1.py", "pkg2/mod2.py"):
                text = (wt / name).read_text()
                (wt / name).write_text(text.replace("return x + 0", "return -x", 1) + "# end\n")
            if run % 2:
                floors["diff"].append(raw_diff(wt))
            t3 = time.perf_counter()
            result = compute_diff(snap, wt)
            t4 = time.perf_counter()
            if not run % 2:
                floors["diff"].append(raw_diff(wt))
            accept(snap, result, write=False)
            t5 = time.perf_counter()
            assert len(result) == 2, result
            for step, ms in zip(steps, (t1 - t0, t2 - t1, t4 - t3, t5 - t4), strict=True):
                steps[step].append(ms * 1000)
            remove_worktree(snap, task, wt)
        print(f"{files} files, median of {runs} runs:")
        for step, values in steps.items():
            print(f"  {step:<9} {statistics.median(values):8.1f} ms")
        floor_is = {
            "snapshot": "raw read-tree + add -A + write-tree + commit-tree, temporary index",
            "worktree": "raw git worktree add",
            "diff": "raw git diff in the checkout",
        }
        for step, values in floors.items():
            figure(
                f"{step}, {files} files",
                statistics.median(steps[step]),
                statistics.median(values),
                floor_is[step],
                runs=runs,
            )


def raw_diff(wt: Path) -> float:
    """Milliseconds for ``git diff`` of the checkout's changes (what a script would show)."""
    t0 = time.perf_counter()
    git(wt, "diff", "--no-color")
    return (time.perf_counter() - t0) * 1000


if __name__ == "__main__":
    main()
