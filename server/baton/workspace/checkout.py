"""The agent's checkout: a git repository of its own per task, borrowing the user's objects.

A task's checkout at ``worktrees_dir/<task id>`` has a ``.git`` folder of its own (its own
config, refs, index and no hooks) whose ``objects/info/alternates`` names the object store
of the user's repository, which it only reads. The agent can commit, branch, configure and
install hooks there as it likes: no git command run in the checkout writes to the user's
``.git``. Objects the agent creates land in the checkout's own store.

Baton never trusts that folder: it reads the checkout by staging its files against the
user's repository (``--git-dir`` the user's, ``--work-tree`` the checkout) in an index of its
own kept beside the checkouts (:func:`seed_index_of`), so the agent's config (filters,
fsmonitor, hooks) and index never steer Baton's git, and every object Baton records is in the
user's store, where the snapshot and result refs keep it.

Checkout reproduces the snapshot byte for byte: the checkout's ``info/attributes`` turns off
every attribute that converts bytes (the snapshot holds the bytes as they were on disk).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import sys
import time
from pathlib import Path

from baton.workspace.copied import Staged, copy_checkout
from baton.workspace.git import common_dir_of, run_git
from baton.workspace.gitconfig import repo_config
from baton.workspace.skeleton import EXACT_BYTES, sweep_skeletons, take_skeleton
from baton.workspace.skeleton import PREFIX as SKELETON_PREFIX
from baton.workspace.skeleton import init_repository as _init
from baton.workspace.snapshot import BRANCH_PREFIX

#: Beside the checkouts: Baton's index of each checkout (``<worktrees_dir>/.index/<id>``).
#: No task id starts with a dot, so the folder is never taken for a task's checkout.
SEED_FOLDER = ".index"
#: Scratch folders of a diff in progress inside :data:`SEED_FOLDER`.
SCRATCH_PREFIX = ".diff-"
_SHA256_HEX = 64


def seed_index_of(worktree: Path) -> Path:
    """Baton's own index of the checkout at ``worktree`` (stat cache for staging it)."""
    return worktree.parent / SEED_FOLDER / worktree.name


def is_own_repository(worktree: Path) -> bool:
    """Whether the checkout has a git directory of its own (not a linked ``git worktree``)."""
    return (worktree / ".git").is_dir() and not (worktree / ".git").is_symlink()


def alternate_line(objects: Path) -> str:
    """One line of ``objects/info/alternates`` naming ``objects`` (C-quoted when it must be)."""
    text = str(objects)
    if not any(c in text for c in '\n"\\') and not text.startswith("#"):
        return text + "\n"
    quoted = text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    return f'"{quoted}"\n'


def _config_value(value: str) -> str:
    """``value`` quoted for a git config file."""
    for raw, escaped in (("\\", "\\\\"), ('"', '\\"'), ("\n", "\\n"), ("\t", "\\t")):
        value = value.replace(raw, escaped)
    return f'"{value}"'


def identity_of(git_dir: Path) -> dict[str, str]:
    """``user.name`` and ``user.email`` as git resolves them for the user's repository."""
    settings = repo_config(git_dir)
    return {k: settings[f"user.{k}"] for k in ("email", "name") if f"user.{k}" in settings}


def make_checkout(
    git_dir: Path,
    commit: str,
    task_id: str,
    path: Path,
    *,
    seed: bool = True,
    staged: tuple[Staged, Path] | None = None,
) -> None:
    """Create the checkout of ``commit`` at ``path`` (which must not exist) on the task's
    branch, in a repository of its own that borrows the objects of ``git_dir``; with
    ``seed``, Baton's index of it too (:func:`seed_index_of`). ``staged``: what the snapshot
    ``commit`` was just made of and the work tree it was taken from, to copy the files from
    (:func:`~baton.workspace.copied.copy_checkout`) instead of having git write them."""
    branch = BRANCH_PREFIX + task_id
    if len(commit) == _SHA256_HEX or sys.platform == "darwin":
        made = False
    else:  # a repository made ahead (a task's checkout only), else one made now
        ahead = seed_index_of(path).parent  # where skeletons wait (the same file system)
        made = (seed and take_skeleton(ahead, path, branch)) or _init(path, branch)
    if not made:
        fmt = ["--object-format=sha256"] if len(commit) == _SHA256_HEX else []
        run_git(["init", "-q", "--template=", "-b", branch, *fmt, str(path)], path.parent)
    own = path / ".git"
    try:
        (own / "objects" / "info").mkdir(parents=True, exist_ok=True)
        objects = common_dir_of(git_dir).resolve() / "objects"
        (own / "objects" / "info" / "alternates").write_text(
            alternate_line(objects), encoding="utf-8"
        )
        (own / "info").mkdir(exist_ok=True)
        (own / "info" / "attributes").write_text(EXACT_BYTES, encoding="utf-8")
        identity = identity_of(git_dir)
        if identity:
            lines = "".join(f"\t{k} = {_config_value(v)}\n" for k, v in sorted(identity.items()))
            with open(own / "config", "a", encoding="utf-8", errors="surrogateescape") as fh:
                fh.write("[user]\n" + lines)
        if staged is not None and copy_checkout(*staged, path, commit, branch):
            if seed:
                copy_seed(path)
            return
        if staged is not None:  # what the copy wrote is in the way of git's checkout
            _empty_work_tree(path)
        # Checkout reads every object straight from the user's store (no lookup in the empty
        # store of the checkout first); it writes only the index and the files.
        run_git(
            ["reset", "-q", "--hard", commit],
            path,
            git_dir=own,
            work_tree=path,
            env={"GIT_OBJECT_DIRECTORY": str(objects)},
        )
        if seed:
            copy_seed(path)
    except BaseException:
        remove_checkout(path)
        raise


def _empty_work_tree(path: Path) -> None:
    """Remove everything of the checkout at ``path`` but its repository."""
    for entry in os.scandir(path):
        if entry.name == ".git":
            continue
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path)
        else:
            os.unlink(entry.path)


def copy_seed(path: Path) -> None:
    """Make Baton's index of the checkout at ``path`` a copy of the checkout's own index,
    which git has just written (its stat data is the files' as they are)."""
    seed = seed_index_of(path)
    seed.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(path / ".git" / "index", seed)


def remove_checkout(path: Path) -> None:
    """Delete the checkout folder (with its repository) and Baton's index of it."""
    if path.exists() or path.is_symlink():
        if path.is_symlink() or not path.is_dir():
            path.unlink(missing_ok=True)
        else:
            shutil.rmtree(path, ignore_errors=True)
    seed_index_of(path).unlink(missing_ok=True)


def sweep_seeds(worktrees_dir: Path, keep: set[str], *, scratch_age: float = 3600.0) -> None:
    """Remove Baton's indexes of checkouts not in ``keep``, scratch folders left by a diff
    that was killed (older than ``scratch_age`` seconds) and checkout repositories made
    ahead by processes now gone (:mod:`baton.workspace.skeleton`)."""
    folder = worktrees_dir / SEED_FOLDER
    if not folder.is_dir():
        return
    now = time.time()
    sweep_skeletons(folder)
    for entry in folder.iterdir():
        with contextlib.suppress(OSError):
            if entry.name.startswith(SKELETON_PREFIX):
                continue  # a live process's, made ahead of need
            if entry.name.startswith(SCRATCH_PREFIX):
                if now - entry.stat().st_mtime > scratch_age:
                    shutil.rmtree(entry, ignore_errors=True)
            elif entry.name not in keep:
                entry.unlink()
