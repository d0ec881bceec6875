"""Worktrees: each task's isolated checkout of its snapshot, on branch ``baton/<task id>``.

Worktrees live outside the user's tree (``worktrees_dir/<task id>``). Checkout runs with
hooks disabled and reproduces the snapshot byte for byte, whatever the repository's
``.gitattributes`` say.
"""

from __future__ import annotations

import contextlib
import fcntl
import shutil
from collections.abc import Iterator
from pathlib import Path

from baton.workspace.git import GitError, read_blobs, run_git
from baton.workspace.snapshot import (
    BRANCH_PREFIX,
    RESULT_REF,
    SNAPSHOT_REF,
    Snapshot,
    check_task_id,
    common_dir_of,
    converted_paths,
    index_entries,
)


def _is_within(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


@contextlib.contextmanager
def admin_lock(git_dir: Path) -> Iterator[None]:
    """Serialize worktree add/remove on one repository, across threads and processes.

    While git creates a worktree it leaves a half-written admin folder that a concurrent
    ``git worktree add`` in the same repository trips over ("failed to read …/commondir").
    """
    lock = common_dir_of(git_dir) / "baton-worktrees.lock"
    with open(lock, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _restore_exact_bytes(worktree: Path, common_dir: Path) -> int:
    """Rewrite files that checkout converted (eol, ident, filters) back to the blob's bytes."""
    entries = index_entries(worktree)
    candidates = converted_paths(worktree, entries, common_dir=common_dir)
    if not candidates:
        return 0
    blobs = read_blobs(worktree, [entries[p][1] for p in candidates])
    fixed = 0
    for path in candidates:
        want = blobs.get(entries[path][1])
        target = worktree / path
        try:
            if want is None or target.read_bytes() == want:
                continue
        except OSError:
            continue
        target.write_bytes(want)
        fixed += 1
    return fixed


def create_worktree(snap: Snapshot, task_id: str, worktrees_dir: Path) -> Path:
    """Check the snapshot out at ``worktrees_dir/<task_id>`` on branch ``baton/<task_id>``.

    Idempotent: an existing worktree for the task is reused when it still is ``snap``
    untouched (see :func:`worktree_fits`); any other is removed and made anew, so a
    checkout left by an interrupted broker never carries another snapshot's files.
    """
    check_task_id(task_id)
    path = worktrees_dir / task_id
    if _is_within(worktrees_dir, snap.root):
        raise ValueError(f"worktrees must live outside the user's tree: {worktrees_dir}")
    if (path / ".git").exists() and worktree_fits(snap, path):
        return path
    if path.exists() or path.is_symlink():
        _remove_folder(snap.git_dir, path)
        with contextlib.suppress(GitError), admin_lock(snap.git_dir):
            run_git(["worktree", "prune"], snap.git_dir, git_dir=snap.git_dir)
    worktrees_dir.mkdir(parents=True, exist_ok=True)
    with admin_lock(snap.git_dir):
        run_git(
            [
                "worktree",
                "add",
                "--force",
                "--quiet",
                "-B",
                BRANCH_PREFIX + task_id,
                str(path),
                snap.commit,
            ],
            snap.git_dir,
            git_dir=snap.git_dir,
        )
    _restore_exact_bytes(path, common_dir_of(snap.git_dir))
    return path


def worktree_fits(snap: Snapshot, path: Path) -> bool:
    """Whether the checkout at ``path`` is ``snap.commit`` with nothing changed or added."""
    try:
        head = run_git(["rev-parse", "HEAD"], path).strip()
        if head != snap.commit:
            return False
        status = run_git(["status", "--porcelain", "-z", "--untracked-files=all"], path)
    except GitError:
        return False
    return status == ""


def _delete_refs(git_dir: Path, task_id: str) -> None:
    for ref in (
        f"refs/heads/{BRANCH_PREFIX}{task_id}",
        SNAPSHOT_REF + task_id,
        RESULT_REF + task_id,
    ):
        with contextlib.suppress(GitError):
            run_git(["update-ref", "-d", ref], git_dir, git_dir=git_dir)


def _remove_folder(git_dir: Path | None, path: Path) -> None:
    if git_dir is not None and path.exists():
        with contextlib.suppress(GitError), admin_lock(git_dir):
            run_git(
                ["worktree", "remove", "--force", "--force", str(path)], git_dir, git_dir=git_dir
            )
    if path.exists() or path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)


def remove_worktree(snap: Snapshot, task_id: str, path: Path) -> None:
    """Remove the task's worktree, its branch and its snapshot ref. Idempotent."""
    check_task_id(task_id)
    _remove_folder(snap.git_dir, path)
    with contextlib.suppress(GitError), admin_lock(snap.git_dir):
        run_git(["worktree", "prune"], snap.git_dir, git_dir=snap.git_dir)
    _delete_refs(snap.git_dir, task_id)


def _common_dir_of(worktree: Path) -> Path | None:
    """The repository's common git dir, read from a linked worktree's ``.git`` file."""
    try:
        text = (worktree / ".git").read_text(encoding="utf-8").strip()
    except OSError:
        return None
    if not text.startswith("gitdir:"):
        return None
    wt_git_dir = Path(text.removeprefix("gitdir:").strip())
    try:
        common = (wt_git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return wt_git_dir.parent.parent if wt_git_dir.parent.name == "worktrees" else None
    common_path = Path(common)
    return common_path if common_path.is_absolute() else (wt_git_dir / common_path).resolve()


def _known_repos(state_home: Path) -> set[Path]:
    repos: set[Path] = set()
    known = state_home / "known-repos"
    if known.is_dir():
        for entry in known.iterdir():
            with contextlib.suppress(OSError):
                repo = Path(entry.read_text(encoding="utf-8").strip())
                if (repo / "HEAD").exists():
                    repos.add(repo)
                else:
                    entry.unlink()
    private = state_home / "repos"
    if private.is_dir():
        repos.update(p for p in private.iterdir() if (p / "HEAD").exists())
    return repos


def sweep_orphans(state_home: Path, worktrees_dir: Path, keep: set[str]) -> list[str]:
    """Remove worktrees, branches and refs of tasks not in ``keep``; return their task ids.

    Looks at every folder in ``worktrees_dir`` and at every repository Baton made a
    snapshot in (remembered under ``state_home``), then prunes those repositories.
    """
    removed: set[str] = set()
    repos = _known_repos(state_home)
    if worktrees_dir.is_dir():
        for folder in sorted(worktrees_dir.iterdir()):
            if folder.name in keep:
                continue
            common = _common_dir_of(folder)
            if common is not None:
                repos.add(common)
            _remove_folder(common, folder)
            removed.add(folder.name)
    for repo in sorted(repos):
        with contextlib.suppress(GitError), admin_lock(repo):
            run_git(["worktree", "prune"], repo, git_dir=repo)
        try:
            refs = run_git(
                [
                    "for-each-ref",
                    "--format=%(refname)",
                    f"refs/heads/{BRANCH_PREFIX}",
                    SNAPSHOT_REF,
                    RESULT_REF,
                ],
                repo,
                git_dir=repo,
            ).splitlines()
        except GitError:
            continue
        for ref in refs:
            task_id = ref.rsplit("/", 1)[-1]
            if task_id in keep:
                continue
            with contextlib.suppress(GitError):
                run_git(["update-ref", "-d", ref], repo, git_dir=repo)
            removed.add(task_id)
    return sorted(removed)
