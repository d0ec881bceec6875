"""Snapshots, worktrees, diffs and accept against real git repositories in tmp_path."""

from __future__ import annotations

import os
import subprocess
from dataclasses import replace
from pathlib import Path

import pytest

from baton.core.diff import FileDiff, FileStatus, HunkState, with_states
from baton.workspace import (
    Snapshot,
    accept,
    compute_diff,
    create_worktree,
    remove_worktree,
    snapshot_text,
    sweep_orphans,
    take_snapshot,
)
from baton.workspace.skeleton import PREFIX as SKELETON

LINES = "".join(f"line {i}\n" for i in range(1, 11))


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, check=True, capture_output=True, text=True
    ).stdout


def refs(root: Path) -> list[str]:
    return git(root, "for-each-ref", "--format=%(refname)").split()


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
    (root / ".gitignore").write_text("*.log\n")
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", "initial")
    return root


@pytest.fixture
def state(tmp_path: Path) -> Path:
    return tmp_path / "state"


@pytest.fixture
def wts(tmp_path: Path) -> Path:
    return tmp_path / "worktrees"


def start(
    repo: Path, state: Path, wts: Path, task: str = "t1", **kw: object
) -> tuple[Snapshot, Path]:
    snap = take_snapshot(repo, task, state_home=state, **kw)  # type: ignore[arg-type]
    return snap, create_worktree(snap, task, wts)


def by_path(files: list[FileDiff]) -> dict[str, FileDiff]:
    return {f.path: f for f in files}


def test_snapshot_has_untracked_and_overlays_and_leaves_the_user_alone(
    repo: Path, state: Path, wts: Path
) -> None:
    (repo / "a.txt").write_text(LINES.replace("line 2", "edited 2"))  # uncommitted
    git(repo, "add", "a.txt")  # staged, so the index differs from HEAD
    (repo / "src" / "app.py").write_text("print('changed')\n")  # unstaged
    (repo / "notes new.md").write_text("untracked\n")
    (repo / "debug.log").write_text("ignored\n")
    status_before = git(repo, "status", "--porcelain")
    index_before = (repo / ".git" / "index").read_bytes()

    snap, wt = start(repo, state, wts, overlays={"src/app.py": "print('unsaved')\n"})

    assert git(repo, "status", "--porcelain") == status_before
    assert (repo / ".git" / "index").read_bytes() == index_before
    assert (repo / "src" / "app.py").read_text() == "print('changed')\n"
    assert (wt / "a.txt").read_text() == LINES.replace("line 2", "edited 2")
    assert (wt / "src" / "app.py").read_text() == "print('unsaved')\n"
    assert (wt / "notes new.md").read_text() == "untracked\n"
    assert not (wt / "debug.log").exists()
    assert snap.base == git(repo, "rev-parse", "HEAD").strip()
    assert git(repo, "rev-parse", f"refs/baton/snapshots/{snap.task_id}").strip() == snap.commit
    assert git(wt, "branch", "--show-current").strip() == "baton/t1"
    assert not wt.is_relative_to(repo)
    assert compute_diff(snap, wt) == []
    assert Snapshot.from_json(snap.to_json()) == snap


def test_overlay_may_name_a_file_that_does_not_exist_yet(
    repo: Path, state: Path, wts: Path
) -> None:
    snap, wt = start(repo, state, wts, overlays={"docs/new.md": "draft\n"})
    assert (wt / "docs" / "new.md").read_text() == "draft\n"
    assert not (repo / "docs").exists()
    assert snapshot_text(snap, "docs/new.md") == "draft\n"
    with pytest.raises(ValueError):
        take_snapshot(repo, "t2", overlays={"../escape.txt": "x"}, state_home=state)


def test_hooks_do_not_run(repo: Path, state: Path, wts: Path, tmp_path: Path) -> None:
    marker = tmp_path / "hook-ran"
    hook = repo / ".git" / "hooks" / "post-checkout"
    hook.write_text(f"#!/bin/sh\ntouch '{marker}'\n")
    hook.chmod(0o755)
    start(repo, state, wts)
    assert not marker.exists()


def test_partial_accept_leaves_the_other_hunk_pending(repo: Path, state: Path, wts: Path) -> None:
    snap, wt = start(repo, state, wts)
    (wt / "a.txt").write_text(LINES.replace("line 2", "two").replace("line 8", "eight"))
    (f,) = compute_diff(snap, wt)
    first, second = f.hunks
    result = accept(snap, [f], {first.id})
    assert result.applied == [first.id] and not result.conflicts
    assert (repo / "a.txt").read_text() == LINES.replace("line 2", "two")
    # The next accept (all pending) takes the other one; the first is already decided.
    decided = with_states([f], {first.id: HunkState.ACCEPTED})
    result = accept(snap, decided, None)
    assert result.applied == [second.id]
    assert (repo / "a.txt").read_text() == LINES.replace("line 2", "two").replace("line 8", "eight")


def test_three_way_merge_keeps_user_edits_to_other_lines(
    repo: Path, state: Path, wts: Path
) -> None:
    snap, wt = start(repo, state, wts)
    (wt / "a.txt").write_text(LINES.replace("line 8", "worker 8"))
    (repo / "a.txt").write_text("header\n" + LINES.replace("line 2", "user 2"))
    files = compute_diff(snap, wt)
    result = accept(snap, files)
    assert result.applied == [files[0].hunks[0].id] and not result.conflicts
    expected = "header\n" + LINES.replace("line 2", "user 2").replace("line 8", "worker 8")
    assert (repo / "a.txt").read_text() == expected
    assert result.texts == {"a.txt": expected}


def test_conflicting_hunk_is_reported_and_user_text_kept(
    repo: Path, state: Path, wts: Path
) -> None:
    snap, wt = start(repo, state, wts)
    (wt / "a.txt").write_text(LINES.replace("line 2", "worker 2").replace("line 8", "worker 8"))
    user = LINES.replace("line 8", "user 8")
    (repo / "a.txt").write_text(user)
    (f,) = compute_diff(snap, wt)
    first, second = f.hunks
    result = accept(snap, [f])
    assert result.applied == [first.id]
    assert [hid for hid, _ in result.conflicts] == [second.id]
    assert "conflict" in result.conflicts[0][1]
    assert (repo / "a.txt").read_text() == user.replace("line 2", "worker 2")
    assert "<<<<<<<" not in (repo / "a.txt").read_text()


def test_open_buffer_is_merged_instead_of_the_disk(repo: Path, state: Path, wts: Path) -> None:
    snap, wt = start(repo, state, wts)
    (wt / "a.txt").write_text(LINES.replace("line 9", "worker 9"))
    buffer = LINES.replace("line 1\n", "buffer 1\n")
    result = accept(snap, compute_diff(snap, wt), current={"a.txt": buffer}, write=False)
    assert result.texts == {"a.txt": buffer.replace("line 9", "worker 9")}
    assert (repo / "a.txt").read_text() == LINES  # write=False writes nothing


def test_write_false_returns_texts_and_writes_nothing(repo: Path, state: Path, wts: Path) -> None:
    snap, wt = start(repo, state, wts)
    (wt / "a.txt").write_text(LINES + "more\n")
    (wt / "added.txt").write_text("new\n")
    (wt / "src" / "app.py").unlink()
    before = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    result = accept(snap, compute_diff(snap, wt), write=False)
    assert result.texts == {"a.txt": LINES + "more\n", "added.txt": "new\n", "src/app.py": None}
    assert len(result.applied) == 3
    after = {p: p.read_bytes() for p in repo.rglob("*") if p.is_file() and ".git" not in p.parts}
    assert after == before


def test_user_deleted_file_is_a_conflict(repo: Path, state: Path, wts: Path) -> None:
    snap, wt = start(repo, state, wts)
    (wt / "a.txt").write_text(LINES + "more\n")
    (repo / "a.txt").unlink()
    result = accept(snap, compute_diff(snap, wt))
    assert not result.applied and len(result.conflicts) == 1
    assert not (repo / "a.txt").exists()


def test_added_deleted_renamed_and_binary_files(repo: Path, state: Path, wts: Path) -> None:
    (repo / "logo.bin").write_bytes(b"\x89PNG\0\1\2")
    (repo / "old name.txt").write_text("moving\ncontent\n")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "more")
    snap, wt = start(repo, state, wts)
    (wt / "added ü.txt").write_text("brand new\n")
    (wt / "src" / "app.py").unlink()
    (wt / "old name.txt").rename(wt / "new name.txt")
    (wt / "logo.bin").write_bytes(b"\x89PNG\0\3\4\5")
    (wt / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1"))
    files = by_path(compute_diff(snap, wt))
    assert {p: f.status for p, f in files.items()} == {
        "added ü.txt": FileStatus.ADDED,
        "src/app.py": FileStatus.DELETED,
        "new name.txt": FileStatus.RENAMED,
        "logo.bin": FileStatus.MODIFIED,
        "latin1.txt": FileStatus.ADDED,
    }
    assert files["new name.txt"].old_path == "old name.txt"
    assert files["logo.bin"].binary and files["latin1.txt"].binary
    assert not files["added ü.txt"].binary
    assert all(len(f.hunks) == 1 and f.hunks[0].whole_file for f in files.values())
    assert files["added ü.txt"].hunks[0].new_text == "brand new\n"
    assert files["added ü.txt"].added == 1

    result = accept(snap, list(files.values()))
    assert len(result.applied) == 5 and not result.conflicts
    assert (repo / "added ü.txt").read_text() == "brand new\n"
    assert not (repo / "src" / "app.py").exists()
    assert not (repo / "old name.txt").exists()
    assert (repo / "new name.txt").read_text() == "moving\ncontent\n"
    assert (repo / "logo.bin").read_bytes() == b"\x89PNG\0\3\4\5"
    assert (repo / "latin1.txt").read_bytes() == "caf\xe9\n".encode("latin-1")
    assert result.data["logo.bin"] == b"\x89PNG\0\3\4\5"
    assert result.texts["old name.txt"] is None


def test_rename_with_changes_is_one_whole_file_hunk(repo: Path, state: Path, wts: Path) -> None:
    snap, wt = start(repo, state, wts)
    (wt / "a.txt").rename(wt / "b.txt")
    (wt / "b.txt").write_text(LINES.replace("line 5", "five"))
    (f,) = compute_diff(snap, wt)
    assert f.status is FileStatus.RENAMED and f.old_path == "a.txt" and len(f.hunks) == 1
    assert f.hunks[0].old_text == LINES and f.hunks[0].new_text == LINES.replace("line 5", "five")
    accept(snap, [f])
    assert not (repo / "a.txt").exists()
    assert (repo / "b.txt").read_text() == LINES.replace("line 5", "five")


def test_whole_file_changes_never_overwrite_user_changes(
    repo: Path, state: Path, wts: Path
) -> None:
    (repo / "data.bin").write_bytes(b"\0old")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "bin")
    snap, wt = start(repo, state, wts)
    (wt / "fresh.txt").write_text("from the worker\n")
    (wt / "src" / "app.py").unlink()
    (wt / "data.bin").write_bytes(b"\0worker")
    (repo / "fresh.txt").write_text("from the user\n")
    (repo / "src" / "app.py").write_text("print('user')\n")
    (repo / "data.bin").write_bytes(b"\0user")
    files = compute_diff(snap, wt)
    result = accept(snap, files)
    assert not result.applied and len(result.conflicts) == 3
    assert (repo / "fresh.txt").read_text() == "from the user\n"
    assert (repo / "src" / "app.py").read_text() == "print('user')\n"
    assert (repo / "data.bin").read_bytes() == b"\0user"


def test_scope_refusal_keeps_hunks_pending(repo: Path, state: Path, wts: Path) -> None:
    snap, wt = start(repo, state, wts)
    (wt / "a.txt").write_text(LINES + "x\n")
    (wt / "src" / "app.py").write_text("print('worker')\n")
    (wt / ".github" / "workflows").mkdir(parents=True)
    (wt / ".github" / "workflows" / "ci.yml").write_text("on: push\n")
    files = by_path(compute_diff(snap, wt))
    result = accept(snap, list(files.values()), scope=["src/"])
    assert result.applied == [files["src/app.py"].hunks[0].id]
    refused = dict(result.refused)
    assert set(refused) == {
        files["a.txt"].hunks[0].id,
        files[".github/workflows/ci.yml"].hunks[0].id,
    }
    assert "GitHub Actions workflow" in refused[files[".github/workflows/ci.yml"].hunks[0].id]
    assert (repo / "a.txt").read_text() == LINES
    assert not (repo / ".github").exists()
    # Naming the workflow folder in the scope allows it.
    result = accept(snap, [files[".github/workflows/ci.yml"]], scope=[".github/workflows/**"])
    assert result.applied and (repo / ".github" / "workflows" / "ci.yml").exists()


def test_forged_paths_are_refused(repo: Path, state: Path, wts: Path, tmp_path: Path) -> None:
    snap, wt = start(repo, state, wts)
    (wt / "a.txt").write_text("new\n")
    (f,) = compute_diff(snap, wt)
    for bad in ("../outside.txt", "/etc/passwd", ".git/hooks/pre-commit"):
        forged = replace(f, path=bad, status=FileStatus.ADDED)
        result = accept(snap, [forged])
        assert result.refused and not result.applied, bad
    assert not (tmp_path / "outside.txt").exists()
    assert not (repo / ".git" / "hooks" / "pre-commit").exists()
    # A folder of the user's that is a symlink out of the tree is not written through.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.symlink(elsewhere, repo / "out")
    result = accept(snap, [replace(f, path="out/x.txt", status=FileStatus.ADDED)])
    assert result.refused and not result.applied
    assert not (elsewhere / "x.txt").exists()


def test_hunk_ids_are_stable_and_survive_json(repo: Path, state: Path, wts: Path) -> None:
    (repo / "pic.bin").write_bytes(b"\0a")
    snap, wt = start(repo, state, wts)
    (wt / "a.txt").write_text(LINES.replace("line 3", "3"))
    (wt / "pic.bin").write_bytes(b"\0b")
    once, twice = compute_diff(snap, wt), compute_diff(snap, wt)
    assert [h.id for f in once for h in f.hunks] == [h.id for f in twice for h in f.hunks]
    # A FileDiff that travelled as JSON (no extra) still accepts a binary file.
    from_json = [FileDiff.from_json(f.to_json()) for f in once]
    result = accept(snap, from_json)
    assert len(result.applied) == 2
    assert (repo / "pic.bin").read_bytes() == b"\0b"


def test_worker_commits_count_as_changes(repo: Path, state: Path, wts: Path) -> None:
    snap, wt = start(repo, state, wts)
    (wt / "a.txt").write_text(LINES + "committed\n")
    git(wt, "-c", "user.name=w", "-c", "user.email=w@x", "commit", "-q", "-am", "worker")
    (wt / "later.txt").write_text("uncommitted\n")
    files = by_path(compute_diff(snap, wt))
    assert set(files) == {"a.txt", "later.txt"}
    assert git(repo, "rev-parse", f"{snap.result_ref}:later.txt").strip()


def test_executable_bit_and_missing_final_newline_survive(
    repo: Path, state: Path, wts: Path
) -> None:
    script = repo / "run.sh"
    script.write_text("#!/bin/sh\necho one")
    script.chmod(0o755)
    snap, wt = start(repo, state, wts)
    (wt / "run.sh").write_text("#!/bin/sh\necho two")
    tool = wt / "tool.sh"
    tool.write_text("#!/bin/sh\n")
    tool.chmod(0o755)
    accept(snap, compute_diff(snap, wt))
    assert script.read_text() == "#!/bin/sh\necho two"
    assert os.stat(script).st_mode & 0o777 == 0o755
    assert os.stat(repo / "tool.sh").st_mode & 0o100


def test_remove_worktree_cleans_up_and_is_idempotent(repo: Path, state: Path, wts: Path) -> None:
    snap, wt = start(repo, state, wts)
    (wt / "scratch.txt").write_text("untracked in the worktree\n")
    compute_diff(snap, wt)
    assert "refs/baton/results/t1" in refs(repo)
    assert "refs/heads/baton/t1" in refs(wt) and "refs/heads/baton/t1" not in refs(repo)
    seed = wts / ".index" / "t1"
    assert seed.is_file()
    remove_worktree(snap, "t1", wt)
    assert not wt.exists() and not seed.exists()
    assert not [r for r in refs(repo) if "baton" in r]
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    remove_worktree(snap, "t1", wt)  # again: nothing to do, no error


def test_create_worktree_is_idempotent_and_refuses_a_folder_inside_the_repo(
    repo: Path, state: Path, wts: Path
) -> None:
    snap, wt = start(repo, state, wts)
    assert create_worktree(snap, "t1", wts) == wt
    with pytest.raises(ValueError):
        create_worktree(snap, "t1", repo / "inside")


def test_sweep_orphans_removes_tasks_not_kept(repo: Path, state: Path, wts: Path) -> None:
    start(repo, state, wts, "keepme")
    start(repo, state, wts, "orphan")
    snap3 = take_snapshot(repo, "noworktree", state_home=state)  # refs only
    assert snap3.commit
    (wts / "stray").mkdir()  # a folder that is not even a worktree
    swept = sweep_orphans(state, wts, lambda: {"keepme"})
    assert swept.tasks == ["noworktree", "orphan", "stray"]
    assert swept.worktrees == ["orphan", "stray"]
    assert sorted(p.name for p in wts.iterdir()) == [".index", "keepme"]
    assert sorted(r for r in refs(repo) if "baton" in r) == ["refs/baton/snapshots/keepme"]
    seeds = (wts / ".index").iterdir()  # Baton's indexes; checkout repositories made ahead aside
    assert sorted(p.name for p in seeds if not p.name.startswith(SKELETON)) == ["keepme"]
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    assert sweep_orphans(state, wts, lambda: {"keepme"}).tasks == []


def test_a_task_that_starts_during_a_sweep_keeps_its_checkout(
    repo: Path, state: Path, wts: Path
) -> None:
    """The store is read after the folders and refs are listed: a task recorded (and then
    given its checkout) while the sweep runs is never taken for an orphan."""
    start(repo, state, wts, "orphan")

    def keep() -> set[str]:
        start(repo, state, wts, "newcomer")  # its row, then its snapshot and checkout
        return {"newcomer"}

    assert sweep_orphans(state, wts, keep).tasks == ["orphan"]
    assert sorted(p.name for p in wts.iterdir()) == [".index", "newcomer"]
    assert "refs/baton/snapshots/newcomer" in refs(repo)


def test_linked_worktrees_of_older_batons_are_removed(repo: Path, state: Path, wts: Path) -> None:
    """Before checkouts had repositories of their own, a task's worktree was a linked
    ``git worktree`` on branch ``baton/<id>`` of the user's repository: remove and sweep
    still clean those up, and create makes a checkout of its own in their place."""
    snap = take_snapshot(repo, "old", state_home=state)
    take_snapshot(repo, "older", state_home=state)
    for task in ("old", "older"):
        git(repo, "worktree", "add", "-q", "-B", f"baton/{task}", str(wts / task), snap.commit)
    remove_worktree(snap, "old", wts / "old")
    assert not (wts / "old").exists()
    assert "refs/heads/baton/old" not in refs(repo)
    assert sweep_orphans(state, wts, set).tasks == ["older"]
    assert not [r for r in refs(repo) if "baton" in r]
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
    git(repo, "worktree", "add", "-q", "-B", "baton/old", str(wts / "old"), snap.commit)
    wt = create_worktree(snap, "old", wts)
    assert (wt / ".git").is_dir() and (wt / "a.txt").read_text() == LINES
    assert git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1


def test_concurrent_worktrees_in_one_repository(tmp_path: Path) -> None:
    """Many tasks start at once: git's worktree admin folders must not trip each other."""
    from concurrent.futures import ThreadPoolExecutor

    from baton.workspace import create_worktree, remove_worktree, take_snapshot

    root = tmp_path / "many"
    root.mkdir()
    (root / "a.txt").write_text("a\n")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "."], cwd=root, check=True)
    subprocess.run(["git", "commit", "-q", "-m", "i"], cwd=root, check=True)
    home = tmp_path / "home"
    ids = [f"t{i:02d}" for i in range(32)]
    snaps = {i: take_snapshot(root, i, state_home=home) for i in ids}

    def make(i: str) -> Path:
        return create_worktree(snaps[i], i, home / "worktrees")

    with ThreadPoolExecutor(16) as pool:
        paths = list(pool.map(make, ids))
    assert all((p / "a.txt").read_text() == "a\n" for p in paths)
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda i: remove_worktree(snaps[i], i, home / "worktrees" / i), ids))
    assert not any(p.exists() for p in paths)


def test_background_git_yields_the_cpu(repo: Path) -> None:
    """Git for work nobody waits on runs at a lower priority; the rest at the caller's."""
    from baton.workspace.git import BACKGROUND_NICE, background, run_git

    def niceness() -> int:
        return int(run_git(["-c", "alias.niceness=!nice", "niceness"], repo).strip())

    mine = os.nice(0)
    assert niceness() == mine
    with background():
        assert niceness() == min(19, mine + BACKGROUND_NICE)
    assert niceness() == mine
