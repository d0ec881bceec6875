"""The agent's checkout has a git directory of its own: whatever git does in it, as the agent
would run it, the user's repository (config, hooks, refs, index, HEAD) stays as it was, and
Baton's diff and accept still see exactly the files the agent left."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

import pytest

from baton.workspace import accept, compute_diff, create_worktree, remove_worktree, take_snapshot
from baton.workspace.worktree import worktree_fits

LINES = "".join(f"line {i}\n" for i in range(1, 11))


def agent_env() -> dict[str, str]:
    """The environment of an agent's shell: no git location overrides, no Baton settings."""
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or "CONFIG" in k}


def git(cwd: Path, *args: str, check: bool = True) -> str:
    """Plain git, as an agent CLI runs it (no Baton safety flags)."""
    proc = subprocess.run(
        ["git", *args], cwd=cwd, check=check, capture_output=True, text=True, env=agent_env()
    )
    return proc.stdout


def tree_state(folder: Path) -> dict[str, str]:
    """Every file under ``folder`` (path → sha256 of its bytes, or its link target)."""
    found: dict[str, str] = {}
    for path in sorted(folder.rglob("*")):
        rel = path.relative_to(folder).as_posix()
        if path.is_symlink():
            found[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            found[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
        elif path.is_dir():
            found[rel] = "dir"
    return found


def user_git_state(repo: Path) -> dict[str, object]:
    """What the agent must never change in the user's repository (Baton's refs aside)."""
    dot_git = repo / ".git"
    refs = [
        line
        for line in git(repo, "for-each-ref", "--format=%(refname) %(objectname)").splitlines()
        if not line.startswith("refs/baton/")
    ]
    return {
        "config": (dot_git / "config").read_bytes(),
        "hooks": tree_state(dot_git / "hooks"),
        "info": tree_state(dot_git / "info"),
        "refs": refs,
        "HEAD": (dot_git / "HEAD").read_bytes(),
        "index": (dot_git / "index").read_bytes(),
        "worktrees": (dot_git / "worktrees").exists(),
        "status": git(repo, "status", "--porcelain", "--untracked-files=all"),
        "user.name": git(repo, "config", "user.name"),
        "hooksPath": git(repo, "config", "core.hooksPath", check=False),
    }


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "user.name", "Test User")
    git(root, "config", "user.email", "test@example.com")
    (root / "a.txt").write_text(LINES)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("print('hi')\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


def test_git_in_the_checkout_never_reaches_the_users_repository(repo: Path, tmp_path: Path) -> None:
    state, wts = tmp_path / "state", tmp_path / "worktrees"
    snap = take_snapshot(repo, "t1", state_home=state)
    wt = create_worktree(snap, "t1", wts)
    before = user_git_state(repo)

    # The agent's git works in its checkout: status, log, diff, commit.
    assert git(wt, "status", "--porcelain") == ""
    assert git(wt, "rev-parse", "HEAD").strip() == snap.commit
    assert git(wt, "branch", "--show-current").strip() == "baton/t1"
    assert git(wt, "log", "--format=%s", "-2").splitlines() == [
        "Baton snapshot for task t1",
        "initial",
    ]
    # Everything issue 15 tried, and a little more.
    git(wt, "config", "core.hooksPath", "x")
    hooks = Path(wt, git(wt, "rev-parse", "--git-common-dir").strip(), "hooks")
    hooks.mkdir(parents=True, exist_ok=True)
    marker = tmp_path / "agent-hook-ran"
    for name in ("pre-commit", "post-checkout", "reference-transaction"):
        (hooks / name).write_text(f"#!/bin/sh\necho {name} >> '{marker}'\n")
        (hooks / name).chmod(0o755)
    git(wt, "config", "user.name", "Evil Agent")
    git(wt, "config", "include.path", str(tmp_path / "agent.gitconfig"))
    git(wt, "update-ref", "refs/heads/evil", "HEAD")
    git(wt, "update-ref", "refs/baton/results/t1", "HEAD")
    git(wt, "tag", "agent-tag")
    (wt / "a.txt").write_text(LINES + "committed by the agent\n")
    assert "a.txt" in git(wt, "diff", "--name-only")
    git(wt, "commit", "-q", "-am", "agent commit")
    git(wt, "config", "--unset", "core.hooksPath")
    (wt / "src" / "app.py").write_text("print('agent')\n")
    git(wt, "commit", "-q", "-am", "second agent commit")  # runs the agent's own hook
    git(wt, "checkout", "-q", "-b", "agent-branch")
    git(wt, "gc", "-q")
    (wt / "later.txt").write_text("uncommitted\n")

    assert marker.exists()  # the hook ran for the agent, in its own repository
    assert user_git_state(repo) == before
    assert not (repo / ".git" / "refs" / "heads" / "evil").exists()

    # The user's next commit runs none of the agent's hooks.
    marker.unlink()
    (repo / "user.txt").write_text("mine\n")
    subprocess.run(["git", "add", "user.txt"], cwd=repo, check=True, env=agent_env())
    subprocess.run(["git", "commit", "-q", "-m", "user"], cwd=repo, check=True, env=agent_env())
    assert not marker.exists()
    assert git(repo, "log", "-1", "--format=%an").strip() == "Test User"

    # Baton still sees what the agent left, and accepts it into the user's files.
    files = {f.path: f for f in compute_diff(snap, wt)}
    assert set(files) == {"a.txt", "src/app.py", "later.txt"}
    result = accept(snap, list(files.values()))
    assert len(result.applied) == 3 and not result.conflicts
    assert (repo / "a.txt").read_text() == LINES + "committed by the agent\n"
    assert (repo / "later.txt").read_text() == "uncommitted\n"
    # Baton's refs in the user's repository are Baton's: the result is its own commit.
    result_ref = git(repo, "rev-parse", "refs/baton/results/t1").strip()
    assert git(repo, "log", "-1", "--format=%s", result_ref).strip() == "Baton result of task t1"
    remove_worktree(snap, "t1", wt)
    assert not wt.exists()
    assert not [r for r in git(repo, "for-each-ref", "--format=%(refname)").split() if "baton" in r]


def test_the_agents_config_and_index_do_not_steer_batons_git(repo: Path, tmp_path: Path) -> None:
    """Baton stages the checkout with the user's repository and its own index: a filter the
    agent configures never runs in the broker, and an index entry it marks unchanged does
    not hide the file from the diff."""
    snap = take_snapshot(repo, "t2", state_home=tmp_path / "state")
    wt = create_worktree(snap, "t2", tmp_path / "worktrees")
    ran = tmp_path / "agent-filter-ran"
    git(wt, "config", "filter.evil.clean", f"touch '{ran}'; cat")
    git(wt, "config", "core.fsmonitor", f"touch '{ran}'; true")
    (wt / ".gitattributes").write_text("* filter=evil\n")
    (wt / "a.txt").write_text(LINES.replace("line 4", "four"))
    git(wt, "update-index", "--assume-unchanged", "a.txt")
    assert git(wt, "status", "--porcelain", "--", "a.txt") == ""  # hidden from git itself
    ran.unlink(missing_ok=True)

    files = {f.path: f for f in compute_diff(snap, wt)}
    assert not ran.exists()
    assert set(files) == {".gitattributes", "a.txt"}
    (hunk,) = files["a.txt"].hunks
    assert (hunk.old_text, hunk.new_text) == ("line 4\n", "four\n")


def test_a_checkout_is_reused_only_while_it_is_its_snapshot(repo: Path, tmp_path: Path) -> None:
    state, wts = tmp_path / "state", tmp_path / "worktrees"
    snap = take_snapshot(repo, "t3", state_home=state)
    wt = create_worktree(snap, "t3", wts)
    ino = (wt / ".git").stat().st_ino
    assert worktree_fits(snap, wt)
    assert create_worktree(snap, "t3", wts) == wt and (wt / ".git").stat().st_ino == ino

    (wt / "new.txt").write_text("left by an interrupted attempt\n")
    assert not worktree_fits(snap, wt)
    assert create_worktree(snap, "t3", wts) == wt
    assert not (wt / "new.txt").exists() and worktree_fits(snap, wt)

    git(wt, "commit", "-q", "--allow-empty", "-m", "moves HEAD, changes no file")
    # The checkout's commits carry the identity of the user's repository (not only global).
    assert git(wt, "log", "-1", "--format=%an <%ae>").strip() == "Test User <test@example.com>"
    assert not worktree_fits(snap, wt)
    create_worktree(snap, "t3", wts)
    assert git(wt, "rev-parse", "HEAD").strip() == snap.commit

    (wt / ".git").rename(wt / "moved")  # not a checkout with a repository any more
    assert not worktree_fits(snap, wt)
    create_worktree(snap, "t3", wts)
    assert not (wt / "moved").exists() and worktree_fits(snap, wt)


def test_checkout_of_a_users_linked_worktree(repo: Path, tmp_path: Path) -> None:
    """The user works in a linked worktree of their own: the checkout borrows the objects of
    the repository's common git dir, and neither of the user's git dirs changes."""
    mine = tmp_path / "feature"
    git(repo, "worktree", "add", "-q", "-b", "feature", str(mine))
    (mine / "a.txt").write_text(LINES + "feature\n")
    snap = take_snapshot(mine, "t4", state_home=tmp_path / "state")
    wt = create_worktree(snap, "t4", tmp_path / "worktrees")
    own = repo / ".git" / "worktrees" / "feature"
    before = (tree_state(own), user_git_state(repo))
    assert (wt / "a.txt").read_text() == LINES + "feature\n"
    git(wt, "config", "core.hooksPath", "x")
    (wt / "a.txt").write_text(LINES + "feature\nagent\n")
    git(wt, "commit", "-q", "-am", "agent")
    assert (tree_state(own), user_git_state(repo)) == before
    (f,) = compute_diff(snap, wt)
    accept(snap, [f])
    assert (mine / "a.txt").read_text() == LINES + "feature\nagent\n"


def test_sha256_repository(tmp_path: Path) -> None:
    root = tmp_path / "sha256"
    root.mkdir()
    git(root, "init", "-q", "--object-format=sha256")
    (root / "a.txt").write_text(LINES)
    git(root, "add", "a.txt")
    git(root, "commit", "-q", "-m", "initial")
    snap = take_snapshot(root, "t5", state_home=tmp_path / "state")
    assert len(snap.commit) == 64
    wt = create_worktree(snap, "t5", tmp_path / "worktrees")
    assert git(wt, "rev-parse", "--show-object-format").strip() == "sha256"
    (wt / "a.txt").write_text(LINES.replace("line 1\n", "one\n"))
    git(wt, "commit", "-q", "-am", "agent")
    (f,) = compute_diff(snap, wt)
    accept(snap, [f])
    assert (root / "a.txt").read_text().startswith("one\n")
