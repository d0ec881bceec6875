"""Worktrees: each task's isolated checkout of its snapshot, on branch ``baton/<task id>``.

Worktrees live outside the user's tree (``worktrees_dir/<task id>``), each a git repository
of its own that borrows the user's objects (:mod:`baton.workspace.checkout`): the agent
commits there, and the user's hooks, config, refs and index never change. Checkout runs
with hooks disabled and reproduces the snapshot byte for byte, whatever the repository's
``.gitattributes`` say. Baton's refs in the user's repository (``refs/baton/*``) are
written by Baton alone.
"""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from baton.workspace.checkout import (
    is_own_repository,
    make_checkout,
    remove_checkout,
    sweep_seeds,
)
from baton.workspace.checkpoints import TURN_REF, delete_turns
from baton.workspace.diffing import stage_checkout
from baton.workspace.git import GitError, common_dir_of, run_git
from baton.workspace.snapshot import (
    BRANCH_PREFIX,
    RESULT_REF,
    SNAPSHOT_REF,
    Snapshot,
    check_task_id,
)


def _is_within(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


@contextlib.contextmanager
def admin_lock(git_dir: Path) -> Iterator[None]:
    """Serialize ``git worktree`` admin work on one repository, across threads and processes.

    Only linked worktrees made by older Batons still go through the user's repository: their
    removal and the prune after it. Git's half-written admin folders trip a concurrent
    ``git worktree`` command in the same repository ("failed to read …/commondir").
    """
    lock = common_dir_of(git_dir) / "baton-worktrees.lock"
    with open(lock, "a+b") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def create_worktree(snap: Snapshot, task_id: str, worktrees_dir: Path) -> Path:
    """Check the snapshot out at ``worktrees_dir/<task_id>`` on branch ``baton/<task_id>``.

    The checkout is a repository of its own that borrows the user's objects (see
    :mod:`baton.workspace.checkout`): nothing git does in it reaches the user's ``.git``.
    Idempotent: an existing checkout for the task is reused when it still is ``snap``
    untouched (see :func:`worktree_fits`); any other is removed and made anew, so a
    checkout left by an interrupted broker never carries another snapshot's files.
    """
    check_task_id(task_id)
    path = worktrees_dir / task_id
    if _is_within(worktrees_dir, snap.root):
        raise ValueError(f"worktrees must live outside the user's tree: {worktrees_dir}")
    if is_own_repository(path) and worktree_fits(snap, path):
        return path
    if path.exists() or path.is_symlink():
        _remove_folder(snap.git_dir, path)
    worktrees_dir.mkdir(parents=True, exist_ok=True)
    staged = (snap.staged, snap.root) if snap.staged is not None else None
    make_checkout(snap.git_dir, snap.commit, task_id, path, staged=staged)
    return path


def worktree_fits(snap: Snapshot, path: Path) -> bool:
    """Whether the checkout at ``path`` is ``snap.commit`` with nothing changed or added.

    HEAD is read from the checkout's repository; the files are staged the way a diff stages
    them (Baton's git, the user's repository) and must make the snapshot's tree.
    """
    if not is_own_repository(path):
        return False
    try:
        own = path / ".git"
        head = run_git(["rev-parse", "-q", "--verify", "HEAD^{commit}"], path, git_dir=own)
        if head.strip() != snap.commit:
            return False
        want = run_git(["rev-parse", f"{snap.commit}^{{tree}}"], path, git_dir=snap.git_dir)
        return stage_checkout(snap, path) == want.strip()
    except GitError:
        return False


def _delete_refs(git_dir: Path, task_id: str) -> None:
    """Delete the task's refs in the user's repository (the branch: left by older Batons)."""
    refs = (f"refs/heads/{BRANCH_PREFIX}{task_id}", SNAPSHOT_REF + task_id, RESULT_REF + task_id)
    delete_turns(git_dir, task_id)  # the results of earlier turns, kept for stepping back
    with contextlib.suppress(GitError):
        run_git(
            ["update-ref", "--stdin"],
            git_dir,
            git_dir=git_dir,
            input="".join(f"delete {ref}\n" for ref in refs),
        )


def _prune(common: Path) -> None:
    """Forget linked worktrees that are gone; only where older Batons made some."""
    if (common / "worktrees").is_dir():
        with contextlib.suppress(GitError), admin_lock(common):
            run_git(["worktree", "prune"], common, git_dir=common)


def _remove_folder(git_dir: Path | None, path: Path) -> None:
    """Remove a checkout: its own repository goes with it; a linked worktree made by an
    older Baton is unregistered from ``git_dir`` first."""
    linked = (path / ".git").is_file()
    if linked and git_dir is not None:
        with contextlib.suppress(GitError), admin_lock(git_dir):
            run_git(
                ["worktree", "remove", "--force", "--force", str(path)], git_dir, git_dir=git_dir
            )
    remove_checkout(path)
    if linked and git_dir is not None:
        _prune(common_dir_of(git_dir))


def remove_worktree(snap: Snapshot, task_id: str, path: Path) -> None:
    """Remove the task's checkout, Baton's index of it and its refs. Idempotent."""
    check_task_id(task_id)
    _remove_folder(snap.git_dir, path)
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


@dataclass
class Swept:
    """What a sweep removed: checkouts (by task id) and refs (full names) in the repositories."""

    worktrees: list[str] = field(default_factory=list)
    refs: list[str] = field(default_factory=list)

    @property
    def tasks(self) -> list[str]:
        """The ids of the tasks something was removed of."""
        return sorted({*self.worktrees, *(ref.rsplit("/", 1)[-1] for ref in self.refs)})


def _baton_refs(repo: Path) -> list[str]:
    try:
        return run_git(
            [
                "for-each-ref",
                "--format=%(refname)",
                f"refs/heads/{BRANCH_PREFIX}",
                SNAPSHOT_REF,
                RESULT_REF,
                TURN_REF,
            ],
            repo,
            git_dir=repo,
        ).splitlines()
    except GitError:
        return []


def sweep_orphans(state_home: Path, worktrees_dir: Path, keep: Callable[[], set[str]]) -> Swept:
    """Remove worktrees, branches and refs of tasks not in ``keep()``.

    Looks at every folder in ``worktrees_dir`` and at every repository Baton made a
    snapshot in (remembered under ``state_home``); linked worktrees an older Baton made are
    pruned from those repositories. ``keep`` is asked only after the folders and refs are
    listed: a task's row is recorded before its checkout and refs are made, so a task that
    starts during the sweep is in ``keep()`` whenever something of it was listed.
    """
    swept = Swept()
    repos = _known_repos(state_home)
    folders = []
    if worktrees_dir.is_dir():
        folders = [f for f in sorted(worktrees_dir.iterdir()) if not f.name.startswith(".")]
    commons = {f: _common_dir_of(f) for f in folders}  # linked worktrees of an older Baton
    repos.update(c for c in commons.values() if c is not None)
    refs = {repo: _baton_refs(repo) for repo in sorted(repos)}
    kept = keep()
    for folder in folders:
        if folder.name not in kept:
            _remove_folder(commons[folder], folder)
            swept.worktrees.append(folder.name)
    if worktrees_dir.is_dir():
        sweep_seeds(worktrees_dir, kept)
    for repo, names in refs.items():
        _prune(repo)
        gone = [ref for ref in names if ref.rsplit("/", 1)[-1] not in kept]
        if gone:
            with contextlib.suppress(GitError):
                run_git(
                    ["update-ref", "--stdin"],
                    repo,
                    git_dir=repo,
                    input="".join(f"delete {ref}\n" for ref in gone),
                )
                swept.refs += gone
    return swept
