"""A small task's checkout copied in-process from the files its snapshot was taken of.

The copy must be what ``git reset --hard`` of the snapshot makes (the files, their modes,
the index, HEAD), and never carry a byte the snapshot does not hold: a file changed after
the snapshot, an entry it cannot write as git does, or a tree too big leave the checkout to
git, which then makes the snapshot exactly.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from baton.workspace import checkout, copied, create_worktree, take_snapshot
from baton.workspace.checkout import make_checkout
from baton.workspace.snapshot import Snapshot
from baton.workspace.worktree import worktree_fits
from tests.conftest import git

_ALL = ["status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignored"]


def _files(root: Path) -> dict[str, tuple[str, bytes]]:
    """Every file of a work tree (not its .git): kind and mode, and bytes or link target."""
    found: dict[str, tuple[str, bytes]] = {}
    for folder, dirs, names in os.walk(root):
        dirs[:] = [d for d in dirs if d != ".git" or Path(folder) != root]
        for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = os.path.join(folder, name)
            rel = os.path.relpath(path, root)
            if os.path.islink(path):
                found[rel] = ("link", os.fsencode(os.readlink(path)))
            else:
                exe = "x" if os.stat(path).st_mode & 0o100 else "-"
                found[rel] = (exe, Path(path).read_bytes())
    return found


def _dirty(repo: Path) -> None:
    """Every kind of change a snapshot must capture."""
    (repo / "notes.txt").unlink()  # deleted
    git(repo, "mv", "app.py", "main.py")  # renamed (staged)
    (repo / "run.sh").write_text("#!/bin/sh\necho hi\n")  # untracked, executable
    (repo / "run.sh").chmod(0o755)
    (repo / "blob.bin").write_bytes(bytes(range(256)) * 3)  # binary
    (repo / "deep" / "er").mkdir(parents=True)
    (repo / "deep" / "er" / "x.txt").write_text("x\r\ny\r\n")  # CRLF kept
    os.symlink("main.py", repo / "link")
    (repo / ".gitignore").write_text("*.log\n")
    (repo / "skip.log").write_text("ignored\n")


def _by_git(snap: Snapshot, where: Path) -> Path:
    """The checkout git makes of ``snap`` (``reset --hard``), for comparison."""
    make_checkout(snap.git_dir, snap.commit, "by-git", where)
    return where


def _git_in(checkout: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=checkout, check=True, capture_output=True, text=True
    ).stdout


def test_a_copied_checkout_is_what_git_makes(repo: Path, tmp_path: Path) -> None:
    _dirty(repo)
    buffers = {"main.py": "unsaved = True\n", "deep/er/x.txt": "edited\n"}
    snap = take_snapshot(repo, "t1", overlays=buffers, state_home=tmp_path / "home")
    assert snap.staged is not None
    ours = create_worktree(snap, "t1", tmp_path / "wts")
    theirs = _by_git(snap, tmp_path / "git" / "by-git")
    assert (ours / ".git" / "packed-refs").is_file()  # copied (git's has a loose ref)

    assert _files(ours) == _files(theirs)
    assert (ours / "main.py").read_text() == "unsaved = True\n"
    assert (ours / "deep" / "er" / "x.txt").read_text() == "edited\n"
    assert not (ours / "notes.txt").exists() and not (ours / "skip.log").exists()
    assert os.readlink(ours / "link") == "main.py"
    assert _git_in(ours, *_ALL) == ""  # nothing changed, added or ignored in it
    assert _git_in(ours, "ls-files", "-s") == _git_in(theirs, "ls-files", "-s")
    assert _git_in(ours, "rev-parse", "HEAD").strip() == snap.commit
    assert _git_in(ours, "symbolic-ref", "HEAD").strip() == f"refs/heads/{snap.branch}"
    _git_in(ours, "fsck", "--no-dangling")
    assert worktree_fits(snap, ours)


def test_the_agent_can_commit_in_a_copied_checkout(repo: Path, tmp_path: Path) -> None:
    snap = take_snapshot(repo, "t1", state_home=tmp_path / "home")
    wt = create_worktree(snap, "t1", tmp_path / "wts")
    (wt / "app.py").write_text("changed\n")
    _git_in(wt, "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-qam", "work")
    assert _git_in(wt, "rev-parse", "HEAD~1").strip() == snap.commit
    assert _git_in(wt, "status", "--porcelain") == ""


def test_a_file_changed_after_the_snapshot_is_never_copied(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = take_snapshot(repo, "t1", state_home=tmp_path / "home")
    (repo / "notes.txt").write_text("typed after the snapshot\n")  # same path, new bytes
    used: list[bool] = []

    def spy(*args: object, **kw: object) -> bool:
        used.append(copied.copy_checkout(*args, **kw))  # type: ignore[arg-type]
        return used[-1]

    monkeypatch.setattr(checkout, "copy_checkout", spy)
    wt = create_worktree(snap, "t1", tmp_path / "wts")
    assert used == [False]  # declined: git made it
    assert (wt / "notes.txt").read_text() == "one\ntwo\nthree\nfour\nfive\n"
    assert _git_in(wt, *_ALL) == ""
    assert worktree_fits(snap, wt)


@pytest.mark.parametrize("change", ["deleted", "symlink", "fifo", "mode_only_is_kept"])
def test_a_source_that_moved_on_gives_the_snapshot_still(
    repo: Path, tmp_path: Path, change: str
) -> None:
    (repo / "tool.sh").write_text("#!/bin/sh\n")
    snap = take_snapshot(repo, "t1", state_home=tmp_path / "home")
    if change == "deleted":
        (repo / "notes.txt").unlink()
    elif change == "symlink":
        (repo / "notes.txt").unlink()
        os.symlink("app.py", repo / "notes.txt")
    elif change == "fifo":  # opened, it would wait for a writer forever
        (repo / "notes.txt").unlink()
        os.mkfifo(repo / "notes.txt")
    else:  # the bytes are the snapshot's; the mode comes from the snapshot, not the disk
        (repo / "tool.sh").chmod(0o755)
    wt = create_worktree(snap, "t1", tmp_path / "wts")
    copied_it = (wt / ".git" / "packed-refs").is_file()
    assert copied_it == (change == "mode_only_is_kept")
    assert (wt / "notes.txt").read_text() == "one\ntwo\nthree\nfour\nfive\n"
    assert not os.path.islink(wt / "notes.txt")
    assert not os.stat(wt / "tool.sh").st_mode & 0o100
    assert _git_in(wt, *_ALL) == ""


def test_a_submodule_entry_or_a_large_tree_is_left_to_git(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    sub = repo / "sub"  # a nested repository: a gitlink entry
    sub.mkdir()
    git(sub, "init", "-q")
    (sub / "s.txt").write_text("s\n")
    git(sub, "add", ".")
    git(sub, "commit", "-q", "-m", "s")
    snap = take_snapshot(repo, "t1", state_home=tmp_path / "home")
    assert snap.staged is not None
    assert not copied.copy_checkout(snap.staged, repo, tmp_path / "x", snap.commit, "b")
    wt = create_worktree(snap, "t1", tmp_path / "wts")
    assert (wt / "sub").is_dir() and (wt / "app.py").is_file()
    assert _git_in(wt, "ls-files", "-s", "sub").startswith("160000")

    monkeypatch.setattr(copied, "COPY_MAX_FILES", 1)
    os.rename(sub, tmp_path / "sub-away")
    snap2 = take_snapshot(repo, "t2", state_home=tmp_path / "home")
    assert snap2.staged is not None  # kept: the limit applies to the copy itself
    target = tmp_path / "y"
    assert not copied.copy_checkout(snap2.staged, repo, target, snap2.commit, "b")
    assert not target.exists()  # declined before anything was written


def test_a_checkout_cut_short_before_its_branch_is_made_again(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap = take_snapshot(repo, "t1", state_home=tmp_path / "home")
    wt = create_worktree(snap, "t1", tmp_path / "wts")
    (wt / ".git" / "packed-refs").unlink()  # as if the broker died before the last write
    assert not worktree_fits(snap, wt)
    again = create_worktree(snap, "t1", tmp_path / "wts")
    assert again == wt and worktree_fits(snap, wt)


def test_a_snapshot_read_back_from_its_record_has_nothing_to_copy(
    repo: Path, tmp_path: Path
) -> None:
    snap = take_snapshot(repo, "t1", state_home=tmp_path / "home")
    back = Snapshot.from_json(snap.to_json())
    assert back == snap and back.staged is None and "staged" not in snap.to_json()
    wt = create_worktree(back, "t1", tmp_path / "wts")
    assert _git_in(wt, *_ALL) == "" and worktree_fits(back, wt)
