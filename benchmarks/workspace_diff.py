"""How long snapshot, worktree, diff and accept take in a 2,000-file repository.

The goal: compute_diff of a worktree where the worker changed 2 files in well under
200 ms. Prints the median of several runs of each step.
Run: .venv/bin/python benchmarks/workspace_diff.py [files]
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from baton.workspace import accept, compute_diff, create_worktree, remove_worktree, take_snapshot

RUNS = 7


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


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
    files = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        root, state, wts = base / "repo", base / "state", base / "wts"
        make_repo(root, files)
        (root / "pkg0" / "mod0.py").write_text("# uncommitted\n")
        steps: dict[str, list[float]] = {"snapshot": [], "worktree": [], "diff": [], "accept": []}
        for run in range(RUNS):
            task = f"bench{run}"
            t0 = time.perf_counter()
            snap = take_snapshot(root, task, state_home=state)
            t1 = time.perf_counter()
            wt = create_worktree(snap, task, wts)
            t2 = time.perf_counter()
            for name in ("pkg1/mod1.py", "pkg2/mod2.py"):
                text = (wt / name).read_text()
                (wt / name).write_text(text.replace("return x + 0", "return -x", 1) + "# end\n")
            t3 = time.perf_counter()
            result = compute_diff(snap, wt)
            t4 = time.perf_counter()
            accept(snap, result, write=False)
            t5 = time.perf_counter()
            assert len(result) == 2, result
            for step, ms in zip(steps, (t1 - t0, t2 - t1, t4 - t3, t5 - t4), strict=True):
                steps[step].append(ms * 1000)
            remove_worktree(snap, task, wt)
        print(f"{files} files, median of {RUNS} runs:")
        for step, values in steps.items():
            print(f"  {step:<9} {statistics.median(values):8.1f} ms")


if __name__ == "__main__":
    main()
