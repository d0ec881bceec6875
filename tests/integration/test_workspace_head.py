"""HEAD read from a repository's files (:mod:`baton.workspace.head`) is what ``git rev-parse``
says, in every shape it reads, and it declines (git is asked) in the shapes it does not."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from baton.workspace import take_snapshot
from baton.workspace.head import Top, read_top
from tests.conftest import git


def _git_says(root: Path) -> Top:
    """What ``git rev-parse`` says of the repository at ``root`` (as the snapshot asks)."""
    out = subprocess.run(
        ["git", "rev-parse", "--path-format=absolute", "--git-dir", "HEAD^{commit}",
         "--symbolic-full-name", "HEAD", "--"],
        cwd=root, capture_output=True, text=True, check=False,
    )  # fmt: skip
    lines = out.stdout.splitlines()
    if out.returncode == 0:
        return Top(Path(lines[0]), lines[1], lines[2] == "HEAD")
    return Top(root / ".git", None, False)  # unborn


def _commit(repo: Path, name: str) -> str:
    (repo / name).write_text(name + "\n")
    git(repo, "add", name)
    git(repo, "commit", "-q", "-m", name)
    return git(repo, "rev-parse", "HEAD").strip()


def test_a_branch_a_detached_head_and_packed_refs_read_as_git_says(repo: Path) -> None:
    _commit(repo, "one.txt")
    assert read_top(repo) == _git_says(repo)
    assert read_top(repo) == Top(repo / ".git", _git_says(repo).base, False)
    git(repo, "checkout", "-q", "--detach")
    assert read_top(repo) == _git_says(repo) and _git_says(repo).detached
    git(repo, "checkout", "-q", "-")
    git(repo, "pack-refs", "--all")
    assert not list((repo / ".git" / "refs" / "heads").iterdir())  # packed only
    assert read_top(repo) == _git_says(repo)
    newer = _commit(repo, "two.txt")  # a loose ref beside a packed one: the loose wins
    top = read_top(repo)
    assert top is not None and top.base == newer == _git_says(repo).base


def test_an_unborn_branch_reads_as_no_commit(tmp_path: Path) -> None:
    root = tmp_path / "new"
    root.mkdir()
    git(root, "init", "-q", "-b", "trunk")
    assert read_top(root) == Top(root / ".git", None, False) == _git_says(root)
    snap = take_snapshot(root, "t1", state_home=tmp_path / "home")
    assert snap.base is None and any("no commit yet" in n for n in snap.notes)


def test_shapes_it_does_not_read_are_left_to_git(repo: Path, tmp_path: Path) -> None:
    _commit(repo, "one.txt")
    sub = repo / "sub"
    sub.mkdir()
    assert read_top(sub) is None  # inside a repository, not its top
    linked = tmp_path / "linked"
    git(repo, "worktree", "add", "-q", "--detach", str(linked))
    assert read_top(linked) is None  # .git is a file
    head = repo / ".git" / "HEAD"
    kept = head.read_text()
    head.write_text("ref: refs/remotes/origin/main\n")
    assert read_top(repo) is None  # HEAD on something else than a branch
    head.write_text(kept)
    git(repo, "symbolic-ref", "refs/heads/alias", "refs/heads/main")
    head.write_text("ref: refs/heads/alias\n")
    assert read_top(repo) is None  # a symbolic branch: git follows it
    head.write_text(kept)
    git(repo, "config", "core.worktree", str(tmp_path))
    assert read_top(repo) is None  # the work tree is elsewhere
    git(repo, "config", "--unset", "core.worktree")
    assert read_top(repo) is not None


@pytest.mark.parametrize("detached", [False, True])
def test_the_snapshot_of_a_top_has_the_parent_git_gives(repo: Path, detached: bool) -> None:
    base = _commit(repo, "one.txt")
    if detached:
        git(repo, "checkout", "-q", "--detach")
    (repo / "one.txt").write_text("changed\n")
    snap = take_snapshot(repo, "t1", state_home=repo.parent / "home")
    assert snap.base == base and snap.git_dir == repo / ".git" and snap.root == repo
    assert any("detached HEAD" in n for n in snap.notes) == detached
    assert git(repo, "show", f"{snap.commit}:one.txt") == "changed\n"
    assert git(repo, "rev-parse", f"{snap.commit}^").strip() == base
