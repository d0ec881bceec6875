"""The in-process index reader gives what ``git ls-files -s`` gives, or declines."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from baton.workspace.indexfile import read_index
from baton.workspace.snapshot import index_entries
from tests.conftest import git


def _fill(root: Path) -> None:
    (root / "a.txt").write_text("a\n")
    deep = root / "dir" / ("long-" * 30)  # a path longer than most, and a shared prefix
    deep.mkdir(parents=True)
    (deep / "b.txt").write_text("b\n")
    (deep / "c.txt").write_text("c\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "ünïcode name.txt").write_text("u\n")
    os.symlink("a.txt", root / "link")
    git(root, "add", "-A")
    (root / "later.txt").write_text("intent to add\n")
    git(root, "add", "-N", "later.txt")  # an extended entry (index version 3)


@pytest.mark.parametrize("version", [2, 3, 4])
def test_read_index_matches_ls_files(repo: Path, version: int) -> None:
    _fill(repo)
    git(repo, "update-index", "--index-version", str(version))
    got = read_index(repo / ".git" / "index")
    assert got is not None
    assert got == index_entries(repo)
    assert got["run.sh"][0] == "100755" and got["link"][0] == "120000"


def test_read_index_declines_what_it_cannot_read(repo: Path, tmp_path: Path) -> None:
    index = repo / ".git" / "index"
    data = index.read_bytes()
    cut = tmp_path / "cut"
    cut.write_bytes(data[: len(data) // 2])
    assert read_index(cut) is None
    other = tmp_path / "other"
    other.write_bytes(b"DIRC" + (9).to_bytes(4, "big") + data[8:])
    assert read_index(other) is None
    assert read_index(tmp_path / "missing") is None
    git(repo, "update-index", "--split-index")
    assert read_index(index) is None  # a split index: git must say
