"""Snapshots started from Baton's warm copy of the user's index stage exactly what they would
from the index itself: the copy is used only while the index is the version it was made
from (its checksum), and only its stat data differs."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from baton.workspace import take_snapshot
from baton.workspace.refill import Refiller
from baton.workspace.snapshot import stage_work_tree
from baton.workspace.warmseed import SEEDS, clear, needs_warming, seed_of, warm
from tests.conftest import git


def _tree(repo: Path, commit: str) -> str:
    return git(repo, "rev-parse", f"{commit}^{{tree}}").strip()


def _files(repo: Path, commit: str) -> str:
    return git(repo, "ls-tree", "-r", commit)


def _changed(repo: Path) -> None:
    """Every kind of change, and a tracked file the ignore rules would leave out."""
    (repo / ".gitignore").write_text("*.log\nbuild/\n")
    (repo / "kept.log").write_text("tracked though ignored\n")
    git(repo, "add", "-f", "kept.log")
    git(repo, "commit", "-q", "-m", "more")
    (repo / "notes.txt").unlink()
    (repo / "app.py").write_text("changed = 1\n")
    (repo / "new.txt").write_text("untracked\n")
    (repo / "other.log").write_text("ignored\n")
    os.chmod(repo / ".gitignore", 0o755)


def test_a_snapshot_from_the_warm_copy_is_the_one_from_the_index(
    repo: Path, tmp_path: Path
) -> None:
    home = tmp_path / "home"
    seeds = home / SEEDS
    _changed(repo)
    cold = take_snapshot(repo, "t1", state_home=home)
    assert seed_of(repo / ".git", seeds) == repo / ".git" / "index"
    assert needs_warming(repo / ".git", seeds)
    index_before = (repo / ".git" / "index").read_bytes()
    assert warm(repo / ".git", repo, seeds)
    assert (repo / ".git" / "index").read_bytes() == index_before  # only read
    assert not needs_warming(repo / ".git", seeds) and not warm(repo / ".git", repo, seeds)
    copy = seed_of(repo / ".git", seeds)
    assert copy.parent == seeds
    listing = subprocess.run(
        ["git", "ls-files", "-s"],
        cwd=repo,
        env={**os.environ, "GIT_INDEX_FILE": str(copy)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert listing == git(repo, "ls-files", "-s")  # the same entries: stat data aside
    hot = take_snapshot(repo, "t2", state_home=home)
    assert _tree(repo, hot.commit) == _tree(repo, cold.commit)
    listed = _files(repo, hot.commit)
    assert "kept.log" in listed and "new.txt" in listed and "other.log" not in listed
    assert "notes.txt" not in listed and "100755" in listed


def test_changes_after_warming_are_staged(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    take_snapshot(repo, "t1", state_home=home)
    assert warm(repo / ".git", repo, home / SEEDS)
    time.sleep(0.01)
    (repo / "app.py").write_text(
        "def a():\n    return 9\n\n\ndef b():\n    return 2\n"
    )  # same size
    (repo / "added.txt").write_text("new\n")
    snap = take_snapshot(repo, "t2", state_home=home)
    assert git(repo, "show", f"{snap.commit}:app.py").endswith(
        "return 9\n\n\ndef b():\n    return 2\n"
    )
    assert "added.txt" in _files(repo, snap.commit)


def test_a_changed_index_is_never_taken_for_its_warm_copy(repo: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    seeds = home / SEEDS
    assert warm(repo / ".git", repo, seeds)
    (repo / "force.log").write_text("x\n")
    (repo / ".gitignore").write_text("*.log\n")
    git(repo, "add", "-f", "force.log")  # the index changes: a new entry the ignore rules hide
    assert seed_of(repo / ".git", seeds) == repo / ".git" / "index"
    snap = take_snapshot(repo, "t1", state_home=home)
    assert "force.log" in _files(repo, snap.commit)
    assert warm(repo / ".git", repo, seeds)  # a copy of the new version; the old one goes
    assert len(list(seeds.iterdir())) == 1
    git(repo, "rm", "-q", "--cached", "force.log")  # and back: untracked and ignored again
    assert seed_of(repo / ".git", seeds) == repo / ".git" / "index"
    assert "force.log" not in _files(repo, take_snapshot(repo, "t2", state_home=home).commit)


def test_an_index_without_a_checksum_has_no_warm_copy(repo: Path, tmp_path: Path) -> None:
    git(repo, "-c", "index.skipHash=true", "update-index", "--force-write-index")
    index = repo / ".git" / "index"
    if index.read_bytes()[-20:] != b"\0" * 20:  # an older git writes the checksum anyway
        shutil.copy(index, tmp_path / "keep")
        index.write_bytes(index.read_bytes()[:-20] + b"\0" * 20)
    seeds = tmp_path / "home" / SEEDS
    assert not needs_warming(repo / ".git", seeds)
    assert not warm(repo / ".git", repo, seeds)
    assert seed_of(repo / ".git", seeds) == index


def test_the_refiller_makes_the_warm_copy_when_nothing_waits(repo: Path, tmp_path: Path) -> None:
    seeds = tmp_path / "home" / SEEDS
    refills = Refiller(tmp_path / "worktrees", delay=0.0)
    try:
        refills.warm(repo / ".git", repo, seeds)
        assert refills.wait_idle(60)
    finally:
        refills.close()
    assert seed_of(repo / ".git", seeds).parent == seeds


def test_clean_removes_the_warm_copies_and_a_snapshot_whose_copy_went_still_stages_all(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home"
    seeds = home / SEEDS
    _changed(repo)
    cold = take_snapshot(repo, "t1", state_home=home)
    assert warm(repo / ".git", repo, seeds)
    copy = seed_of(repo / ".git", seeds)
    size = copy.stat().st_size
    assert clear(seeds) == (1, size) and not copy.exists()
    assert clear(seeds) == (0, 0) and clear(tmp_path / "none") == (0, 0)
    # A snapshot that chose the copy just before it went (it was there when looked at, gone
    # when copied): staged from its tree instead.
    assert warm(repo / ".git", repo, seeds)
    copy = seed_of(repo / ".git", seeds)

    def vanished(src: object, dst: object) -> None:
        Path(str(src)).unlink()
        raise FileNotFoundError(src)

    monkeypatch.setattr("baton.workspace.snapshot.shutil.copy2", vanished)
    index = tmp_path / "index"
    stage_work_tree(repo, index, seed_index=copy, seed_tree=cold.base)
    tree = subprocess.run(
        ["git", "write-tree"],
        cwd=repo,
        env={**os.environ, "GIT_INDEX_FILE": str(index)},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert tree == _tree(repo, cold.commit)
