"""The sandbox plan resolves each path as ``os.path.realpath`` does, each folder once."""

from __future__ import annotations

import os
import random
from pathlib import Path

from baton.process.sandbox_paths import _resolved


def test_paths_resolve_as_realpath_does_whatever_the_order(tmp_path: Path) -> None:
    t = str(tmp_path)
    os.makedirs(f"{t}/a/b/c")
    os.symlink(f"{t}/a/b", f"{t}/lnk")
    os.symlink("b/c", f"{t}/a/rel")
    os.symlink("nowhere", f"{t}/dangling")
    os.symlink(f"{t}/loop2", f"{t}/loop1")
    os.symlink(f"{t}/loop1", f"{t}/loop2")
    os.symlink(f"{t}/lnk/c", f"{t}/a/b/c/back")  # a link inside a folder reached by a link
    paths = [
        "/", t, f"{t}/a", f"{t}/lnk", f"{t}/lnk/c", f"{t}/lnk/c/x/y", f"{t}/a/rel",
        f"{t}/a/rel/z", f"{t}/dangling", f"{t}/dangling/q", f"{t}/loop1", f"{t}/loop1/x",
        f"{t}/a/../lnk", f"{t}/a/./b", f"{t}//a", f"{t}/a/", f"{t}/lnk/c/back/back",
        "~", "~/.ssh", "relative/x", "", "/proc/self/cwd/x", f"{t}/missing/a/b",
    ]  # fmt: skip
    rng = random.Random(7)
    for _ in range(25):
        rng.shuffle(paths)
        memo: dict[str, str] = {}
        for path in paths:
            assert _resolved(path, memo) == os.path.realpath(os.path.expanduser(path)), path
