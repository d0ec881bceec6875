"""A merge leaves nothing on disk for a kill -9 to strand: ``git merge-file`` reads the three
texts from memory-backed files, never from a folder in the system's temporary folder (a
broker killed in the middle of an accept used to leave a ``baton-merge-*`` folder there)."""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from baton.workspace.contents import merge_texts

pytestmark = pytest.mark.skipif(not hasattr(os, "memfd_create"), reason="Linux memfds")


def _spy_git(tmp_path: Path, tmpdir: Path) -> Path:
    """A ``git`` first on PATH that records what the temporary folder holds while it runs."""
    real = shutil.which("git")
    assert real
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    spy = bin_dir / "git"
    spy.write_text(
        f"#!/bin/sh\nls -A {tmpdir} >> {tmp_path / 'seen'}\necho --- >> {tmp_path / 'seen'}\n"
        f'exec {real} "$@"\n'
    )
    spy.chmod(spy.stat().st_mode | stat.S_IXUSR)
    return bin_dir


def test_a_merge_writes_nothing_in_the_temporary_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))
    monkeypatch.setenv("PATH", f"{_spy_git(tmp_path, tmpdir)}{os.pathsep}{os.environ['PATH']}")
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", None)  # read TMPDIR again
    merged, clashes = merge_texts("a\nb\nc\n", "a\nb\n", "x\na\nb\n")
    assert (merged, clashes) == ("x\na\nb\nc\n", 0)
    seen = (tmp_path / "seen").read_text()
    assert seen.strip() == "---", f"git ran while the temporary folder held: {seen!r}"
    assert not any(tmpdir.iterdir())


def test_conflicts_are_counted_and_odd_bytes_survive() -> None:
    odd = "caf\udce9\n"  # a byte that is not UTF-8, carried as a surrogate
    merged, clashes = merge_texts(f"{odd}mine\n", f"{odd}base\n", f"{odd}theirs\n")
    assert clashes == 1
    assert merged.startswith(odd) and "<<<<<<< current" in merged and ">>>>>>> task" in merged
    big = "".join(f"line {i}\n" for i in range(50_000))
    merged, clashes = merge_texts(big + "end\n", big, "start\n" + big)
    assert (merged, clashes) == ("start\n" + big + "end\n", 0)
