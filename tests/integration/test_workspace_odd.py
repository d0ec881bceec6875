"""Odd repositories: no git at all, no commit yet, detached HEAD, CRLF with attributes, symlinks."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from baton.core.diff import FileDiff, FileStatus
from baton.workspace import (
    accept,
    compute_diff,
    create_worktree,
    remove_worktree,
    snapshot_text,
    sweep_orphans,
    take_snapshot,
)


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def init(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Test User")
    git(root, "config", "user.email", "test@example.com")
    return root


def commit_all(root: Path, message: str = "commit") -> None:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message)


def test_folder_without_git_is_tracked_privately(tmp_path: Path) -> None:
    root = tmp_path / "plain"
    root.mkdir()
    (root / "notes.txt").write_text("one\ntwo\n")
    (root / "node_modules").mkdir()
    (root / "node_modules" / "dep.js").write_text("junk\n")
    state, wts = tmp_path / "state", tmp_path / "wts"
    snap = take_snapshot(root, "p1", state_home=state)
    assert snap.private and snap.base is None
    assert snap.git_dir.is_relative_to(state / "repos")
    assert any("not a git repository" in n for n in snap.notes)
    assert not (root / ".git").exists()

    wt = create_worktree(snap, "p1", wts)
    assert (wt / "notes.txt").read_text() == "one\ntwo\n"
    assert not (wt / "node_modules").exists()
    (wt / "notes.txt").write_text("one\nTWO\n")
    (wt / "new.txt").write_text("added\n")
    files = compute_diff(snap, wt)
    assert [(f.path, f.status) for f in files] == [
        ("new.txt", FileStatus.ADDED),
        ("notes.txt", FileStatus.MODIFIED),
    ]
    result = accept(snap, files)
    assert len(result.applied) == 2
    assert (root / "notes.txt").read_text() == "one\nTWO\n"
    assert not (root / ".git").exists()

    # A second task in the same folder reuses the private repository.
    snap2 = take_snapshot(root, "p2", state_home=state)
    assert snap2.git_dir == snap.git_dir
    assert snapshot_text(snap2, "new.txt") == "added\n"
    remove_worktree(snap, "p1", wt)
    assert not wt.exists()
    assert sweep_orphans(state, wts, set).tasks == ["p2"]


def test_repository_without_a_commit(tmp_path: Path) -> None:
    root = init(tmp_path / "fresh")
    (root / "first.py").write_text("x = 1\n")
    snap = take_snapshot(root, "n1", state_home=tmp_path / "state")
    assert snap.base is None and not snap.private
    assert any("no commit" in n for n in snap.notes)
    wt = create_worktree(snap, "n1", tmp_path / "wts")
    (wt / "first.py").write_text("x = 2\n")
    (f,) = compute_diff(snap, wt)
    accept(snap, [f])
    assert (root / "first.py").read_text() == "x = 2\n"
    assert git(root, "status", "--porcelain") == "?? first.py\n"


def test_detached_head(tmp_path: Path) -> None:
    root = init(tmp_path / "det")
    (root / "f.txt").write_text("a\n")
    commit_all(root)
    (root / "f.txt").write_text("b\n")
    commit_all(root)
    git(root, "checkout", "-q", "--detach", "HEAD~1")
    snap = take_snapshot(root, "d1", state_home=tmp_path / "state")
    assert snap.base == git(root, "rev-parse", "HEAD").strip()
    assert any("detached" in n for n in snap.notes)
    wt = create_worktree(snap, "d1", tmp_path / "wts")
    assert (wt / "f.txt").read_text() == "a\n"
    assert git(root, "rev-parse", "--abbrev-ref", "HEAD").strip() == "HEAD"  # still detached


def test_crlf_with_text_auto_keeps_bytes(tmp_path: Path) -> None:
    root = init(tmp_path / "crlf")
    (root / ".gitattributes").write_text("* text=auto\n*.bat text eol=crlf\n")
    (root / "win.txt").write_bytes(b"one\r\ntwo\r\nthree")
    (root / "run.bat").write_bytes(b"@echo off\r\necho hi\r\n")
    commit_all(root)  # git stores these with LF; the work tree keeps CRLF
    (root / "new.txt").write_bytes(b"untracked\r\nfile\r\n")
    (root / "lf.bat").write_bytes(b"echo written with LF\n")  # checkout would make it CRLF
    status_before = git(root, "status", "--porcelain")
    snap = take_snapshot(root, "c1", state_home=tmp_path / "state")
    assert git(root, "status", "--porcelain") == status_before
    wt = create_worktree(snap, "c1", tmp_path / "wts")
    for name in ("win.txt", "run.bat", "new.txt", "lf.bat"):
        assert (wt / name).read_bytes() == (root / name).read_bytes(), name
    assert compute_diff(snap, wt) == []

    (wt / "win.txt").write_bytes(b"one\r\nTWO\r\nthree")
    (wt / "made.txt").write_bytes(b"worker\r\nfile\r\n")
    files = {f.path: f for f in compute_diff(snap, wt)}
    assert set(files) == {"win.txt", "made.txt"}
    (h,) = files["win.txt"].hunks
    assert (h.old_text, h.new_text) == ("two\r\n", "TWO\r\n")
    assert files["made.txt"].hunks[0].new_text == "worker\r\nfile\r\n"
    accept(snap, list(files.values()))
    assert (root / "win.txt").read_bytes() == b"one\r\nTWO\r\nthree"
    assert (root / "made.txt").read_bytes() == b"worker\r\nfile\r\n"


def test_crlf_merge_with_user_edits(tmp_path: Path) -> None:
    root = init(tmp_path / "crlf2")
    text = b"".join(b"line %d\r\n" % i for i in range(1, 9))
    (root / "w.txt").write_bytes(text)
    commit_all(root)
    snap = take_snapshot(root, "c2", state_home=tmp_path / "state")
    wt = create_worktree(snap, "c2", tmp_path / "wts")
    (wt / "w.txt").write_bytes(text.replace(b"line 7", b"worker 7"))
    (root / "w.txt").write_bytes(text.replace(b"line 1", b"user 1"))
    result = accept(snap, compute_diff(snap, wt))
    assert result.applied and not result.conflicts
    assert (root / "w.txt").read_bytes() == text.replace(b"line 1", b"user 1").replace(
        b"line 7", b"worker 7"
    )


def test_symlinks(tmp_path: Path) -> None:
    root = init(tmp_path / "links")
    (root / "target.txt").write_text("pointed at\n")
    os.symlink("target.txt", root / "link.txt")
    commit_all(root)
    os.symlink("target.txt", root / "untracked-link")
    snap = take_snapshot(root, "s1", state_home=tmp_path / "state")
    wt = create_worktree(snap, "s1", tmp_path / "wts")
    assert os.readlink(wt / "link.txt") == "target.txt"
    assert os.readlink(wt / "untracked-link") == "target.txt"
    assert compute_diff(snap, wt) == []

    os.symlink("link.txt", wt / "new-link")
    (wt / "target.txt").write_text("changed\n")
    files = {f.path: f for f in compute_diff(snap, wt)}
    assert set(files) == {"new-link", "target.txt"}
    result = accept(snap, list(files.values()))
    assert result.links == {"new-link": "link.txt"}
    assert os.readlink(root / "new-link") == "link.txt"
    assert (root / "link.txt").read_text() == "changed\n"

    # Retargeting a link, accepted from FileDiffs that went through JSON.
    (wt / "link.txt").unlink()
    os.symlink("new-link", wt / "link.txt")
    (f,) = [f for f in compute_diff(snap, wt) if f.path == "link.txt"]
    result = accept(snap, [FileDiff.from_json(f.to_json())])
    assert result.applied == [f.hunks[0].id]
    assert os.readlink(root / "link.txt") == "new-link"


def test_root_inside_a_repository_uses_the_top(tmp_path: Path) -> None:
    root = init(tmp_path / "mono")
    (root / "pkg").mkdir()
    (root / "pkg" / "m.py").write_text("a = 1\n")
    commit_all(root)
    snap = take_snapshot(
        root / "pkg", "m1", overlays={"m.py": "a = 2\n"}, state_home=tmp_path / "s"
    )
    assert snap.root == root.resolve() and snap.prefix == "pkg"
    assert snapshot_text(snap, "pkg/m.py") == "a = 2\n"


@pytest.mark.parametrize("name", ["with space.txt", "ünïcødé ✓.md", "tab\tname.txt"])
def test_odd_file_names(tmp_path: Path, name: str) -> None:
    root = init(tmp_path / "names")
    (root / name).write_text("a\nb\n")
    commit_all(root)
    snap = take_snapshot(root, "o1", state_home=tmp_path / "state")
    wt = create_worktree(snap, "o1", tmp_path / "wts")
    (wt / name).write_text("a\nB\n")
    (f,) = compute_diff(snap, wt)
    assert f.path == name
    accept(snap, [f])
    assert (root / name).read_text() == "a\nB\n"
