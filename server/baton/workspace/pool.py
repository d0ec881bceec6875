"""The warm pool: checkouts made ahead of need, which a task takes instead of a fresh one.

Making a task's checkout writes every file of the tree (:func:`make_checkout`): on a large
repository, most of the time before its agent starts. The pool keeps a few checkouts of each
repository ready, made at a recent snapshot while nothing waits (:class:`Refiller`, at the
lowest CPU and I/O priority), under ``<worktrees_dir>/.pool/<repo key>/``. A task takes one
by renaming it to its own place and moves it to its snapshot with ``git read-tree -m -u``,
which writes only the files that differ; the checkout must be the snapshot exactly — HEAD on
the task's branch at the snapshot, and ``git status`` with untracked and ignored files
saying nothing — or it is removed and a fresh one made. So a taken checkout is what a fresh
one would be, and a pool checkout something changed is never used. A task being prepared
claims its checkout (:func:`claim`) while its snapshot is taken: the rename and the ``status``
(against the checkout's own commit) need no snapshot; the move follows, and ``read-tree``
refuses to overwrite a file that is not as checked. A fill writes its index again once the
clock has left its files' second, so that git trusts their stat data (:func:`_settle_index`).

A checkout of the pool goes through three places, each reached by one rename, so a crash
anywhere leaves a state the next broker reads:

- filling: ``.fill-<pid>-<token>``, still being written by a live process (a dead one's is
  removed by the next :func:`sweep`);
- ready: ``<slot>``, whose record ``.git/baton-pool.json`` (written before the rename) says
  the repository, the commit, the identity it was made with and its size on disk;
- taken: ``<worktrees_dir>/<task id>``. The rename is the record that the task owns it (two
  tasks cannot rename one folder); the pool record still inside says the move to the
  snapshot is not finished, and a broker that prepares the task again finishes it
  (:func:`take`). It is deleted once the checkout is the snapshot.

The pool is capped: :attr:`PoolLimits.size` ready checkouts per repository and
:attr:`PoolLimits.max_bytes` on disk for all together (the oldest of other repositories
make room). Repositories with fewer than :attr:`PoolLimits.min_files` tracked files have
none: there a fresh checkout costs what moving a ready one does.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import secrets
import shutil
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from baton.errors import BatonError
from baton.faults import crash_point
from baton.workspace.checkout import (
    alternate_line,
    copy_seed,
    identity_of,
    make_checkout,
    remove_checkout,
)
from baton.workspace.git import GitError, common_dir_of, run_git
from baton.workspace.objects import tree_of_commit
from baton.workspace.skeleton import EXACT_BYTES, alive
from baton.workspace.snapshot import BRANCH_PREFIX, Snapshot, check_task_id, repo_key

log = logging.getLogger(__name__)

#: The pool's folder inside the worktrees folder (a dot: never taken for a task's checkout).
POOL_FOLDER = ".pool"
#: The record of a pool checkout, in its own git directory.
RECORD = "baton-pool.json"
FILLING = ".fill-"
#: Checkouts discarded by a task, removed later by the refill (:func:`sweep`): a task never
#: waits for thousands of files to be deleted.
TRASH = ".trash"
DEFAULT_SIZE = 2
DEFAULT_MAX_BYTES = 1 << 30
#: Below this many tracked files a fresh checkout is as quick as a pool one (measured: a
#: tiny tree is one ``reset --hard``; a taken one is a ``read-tree`` and a ``status``).
DEFAULT_MIN_FILES = 1000
_STATUS = ["status", "--porcelain=v2", "-z", "--untracked-files=all", "--ignored", "--no-renames"]


@dataclass(frozen=True)
class PoolLimits:
    """How much the pool may hold: ``size`` ready checkouts per repository (0: no pool),
    ``max_bytes`` on disk for every repository together; only repositories with at least
    ``min_files`` tracked files have one."""

    size: int = DEFAULT_SIZE
    max_bytes: int = DEFAULT_MAX_BYTES
    min_files: int = DEFAULT_MIN_FILES


@dataclass(frozen=True)
class Slot:
    """A ready checkout of the pool, as its record says."""

    path: Path
    repo: str  # the repository's common git dir, resolved
    commit: str
    made: float
    bytes: int
    identity: dict[str, str] = field(default_factory=dict)


def pool_dir(worktrees_dir: Path) -> Path:
    """The pool of every repository, inside ``worktrees_dir``."""
    return worktrees_dir / POOL_FOLDER


def _common(git_dir: Path) -> Path:
    return common_dir_of(git_dir).resolve()


def repo_pool(worktrees_dir: Path, git_dir: Path) -> Path:
    """The pool of the repository whose git dir is ``git_dir``."""
    return pool_dir(worktrees_dir) / repo_key(_common(git_dir))


def tracked_files(git_dir: Path) -> int:
    """How many entries the repository's index has (its header; 0 when there is none)."""
    try:
        with open(git_dir / "index", "rb") as fh:
            head = fh.read(12)
        signature, _, count = struct.unpack(">4sLL", head)
    except (OSError, struct.error):
        return 0
    return int(count) if signature == b"DIRC" else 0


def pooled(git_dir: Path, limits: PoolLimits) -> bool:
    """Whether the repository at ``git_dir`` has a pool under ``limits``."""
    return limits.size > 0 and limits.max_bytes > 0 and tracked_files(git_dir) >= limits.min_files


def read_slot(path: Path) -> Slot | None:
    """The pool record of the checkout at ``path``; None without a readable one."""
    try:
        obj = json.loads((path / ".git" / RECORD).read_text(encoding="utf-8"))
        identity = {str(k): str(v) for k, v in dict(obj.get("identity", {})).items()}
        return Slot(path, str(obj["repo"]), str(obj["commit"]), float(obj["made"]),
                    int(obj["bytes"]), identity)  # fmt: skip
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def ready_slots(folder: Path) -> list[Slot]:
    """The ready checkouts in one repository's pool folder, newest first."""
    slots: list[Slot] = []
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if not entry.name.startswith(".") and (slot := read_slot(entry)) is not None:
                slots.append(slot)
    return sorted(slots, key=lambda s: s.made, reverse=True)


def all_slots(worktrees_dir: Path) -> list[Slot]:
    """Every ready checkout of the pool, oldest first."""
    slots: list[Slot] = []
    with contextlib.suppress(OSError):
        for folder in pool_dir(worktrees_dir).iterdir():
            if not folder.name.startswith("."):
                slots.extend(ready_slots(folder))
    return sorted(slots, key=lambda s: s.made)


def disk_bytes(path: Path) -> int:
    """The space the files under ``path`` take on disk (their blocks)."""
    total = 0
    stack = [path]
    while stack:
        with contextlib.suppress(OSError), os.scandir(stack.pop()) as entries:
            for entry in entries:
                with contextlib.suppress(OSError):
                    st = entry.stat(follow_symlinks=False)
                    total += getattr(st, "st_blocks", 0) * 512 or st.st_size
                    if entry.is_dir(follow_symlinks=False):
                        stack.append(Path(entry.path))
    return total


# -- taking ---------------------------------------------------------------------------------


def take(
    snap: Snapshot,
    task_id: str,
    worktrees_dir: Path,
    limits: PoolLimits,
    *,
    claimed: Path | None = None,
) -> Path | None:
    """The task's checkout at ``worktrees_dir/<task_id>``, moved from the pool to ``snap``;
    None when the pool has none that fits (nothing is left at that place then, unless a
    checkout not from the pool was there already).

    A checkout the task took before a crash (its pool record still inside) is finished;
    ``claimed``, one :func:`claim` took and checked for it in this process, is moved without
    its files being checked again."""
    check_task_id(task_id)
    path = worktrees_dir / task_id
    if (path / ".git" / RECORD).is_file():
        checked = claimed is not None and claimed == path
        return path if finish(snap, task_id, path, worktrees_dir, checked=checked) else None
    if path.exists() or path.is_symlink() or not pooled(snap.git_dir, limits):
        return None
    for slot in ready_slots(repo_pool(worktrees_dir, snap.git_dir)):
        try:
            os.rename(slot.path, path)  # the task owns it from here on
        except FileNotFoundError:
            continue  # another task took it first
        except OSError as exc:
            log.warning("could not take a pool checkout (%s): %s", slot.path, exc)
            return None
        crash_point("pool_taken")
        return path if finish(snap, task_id, path, worktrees_dir) else None
    return None


def claim(root: Path, task_id: str, worktrees_dir: Path, limits: PoolLimits) -> Path | None:
    """Take a ready checkout of the repository at ``root`` for ``task_id`` before its
    snapshot exists, and check it: the part of a take that needs no snapshot, so it runs
    while the snapshot is being taken. The checkout is renamed to the task's place (its
    record inside says the move is not finished, as with :func:`take`), its set-up and
    identity checked, and ``git status``, untracked and ignored files included, must say
    nothing against its own commit; else it is discarded. Its path, or None.

    Its move to the snapshot is then :func:`take` with ``claimed``: ``read-tree -m -u``
    writes the files that differ, refusing to overwrite any that is not as checked, so the
    checkout is the snapshot exactly without ``status`` reading every file a second time. A
    snapshot that fails leaves a claimed checkout to :func:`discard`; a crash leaves it to
    the next :func:`take` of the task, which checks it after the move."""
    check_task_id(task_id)
    path = worktrees_dir / task_id
    if path.exists() or path.is_symlink():
        return None
    if limits.size <= 0 or limits.max_bytes <= 0:
        return None
    git_dir = root / ".git"  # the top of a repository, most often: no git process to ask
    if not git_dir.is_dir():
        try:
            found = run_git(["rev-parse", "--path-format=absolute", "--git-dir"], root).strip()
        except (GitError, OSError):
            return None
        if not found:
            return None
        git_dir = Path(found)
    if not pooled(git_dir, limits):
        return None
    for slot in ready_slots(repo_pool(worktrees_dir, git_dir)):
        try:
            os.rename(slot.path, path)  # the task owns it from here on
        except FileNotFoundError:
            continue  # another task took it first
        except OSError as exc:
            log.warning("could not take a pool checkout (%s): %s", slot.path, exc)
            return None
        crash_point("pool_taken")
        try:
            _check(path, git_dir)
            _unchanged(path, _common(git_dir))
        except (_Unfit, GitError, OSError) as exc:
            log.info("a pool checkout was discarded (%s): %s", path, exc)
            discard(path, worktrees_dir)
            return None
        return path
    return None


def finish(
    snap: Snapshot, task_id: str, path: Path, worktrees_dir: Path, *, checked: bool = False
) -> bool:
    """Move the taken pool checkout at ``path`` to ``snap`` on the task's branch and check
    that it is ``snap`` exactly (``checked``: :func:`claim` checked it before the move);
    True then. Else it is discarded and False returned."""
    try:
        _move(snap, task_id, path, checked=checked)
    except (_Unfit, GitError, OSError) as exc:
        log.info("a pool checkout was discarded (%s): %s", path, exc)
        discard(path, worktrees_dir)
        return False
    return True


def discard(path: Path, worktrees_dir: Path) -> None:
    """Take the checkout at ``path`` out of the way at once (into the pool's trash, which
    the next refill empties); removed on the spot when it cannot be moved."""
    trash = pool_dir(worktrees_dir) / TRASH
    try:
        trash.mkdir(parents=True, exist_ok=True)
        os.rename(path, trash / secrets.token_hex(8))
    except OSError:
        remove_checkout(path)
    else:
        remove_checkout(path)  # Baton's index of it, if any


class _Unfit(BatonError):
    """The pool checkout is not what its record says, or not the snapshot after the move."""


def _check(path: Path, git_dir: Path) -> Slot:
    """The record of the pool checkout at ``path``, when it is one of the repository at
    ``git_dir`` set up as Baton's checkouts are, made with the repository's git identity."""
    own = path / ".git"
    slot = read_slot(path)
    common = _common(git_dir)
    if slot is None or slot.repo != str(common):
        raise _Unfit("its record is missing or names another repository")
    alternates = (own / "objects" / "info" / "alternates").read_text(encoding="utf-8")
    attributes = (own / "info" / "attributes").read_text(encoding="utf-8")
    if alternates != alternate_line(common / "objects") or attributes != EXACT_BYTES:
        raise _Unfit("its repository is not set up as Baton's checkouts are")
    if slot.identity != identity_of(git_dir):
        raise _Unfit("it was made with another git identity")
    return slot


def _unchanged(path: Path, common: Path) -> None:
    """Raise :class:`_Unfit` unless ``git status`` (untracked and ignored files included)
    says nothing of the checkout at ``path``."""
    env = {"GIT_OBJECT_DIRECTORY": str(common / "objects")}
    changed = run_git(_STATUS, path, git_dir=path / ".git", work_tree=path, env=env)
    if changed:
        raise _Unfit(f"it differs from its commit: {changed[:200]!r}")


def _move(snap: Snapshot, task_id: str, path: Path, *, checked: bool = False) -> None:
    own = path / ".git"
    slot = _check(path, snap.git_dir)
    common = _common(snap.git_dir)
    env = {"GIT_OBJECT_DIRECTORY": str(common / "objects")}
    same = tree_of_commit(common, slot.commit)
    if same is None or same != tree_of_commit(common, snap.commit):
        # A one-tree merge: entries the snapshot shares keep their stat data and files; git
        # refuses to overwrite a file that differs from the checkout's index. (The same tree:
        # nothing to move; the status, below or in the claim, still checks every file.)
        run_git(["read-tree", "-m", "-u", snap.commit], path, git_dir=own, work_tree=path, env=env)
    _point_head(own, task_id, snap.commit)
    if not checked:
        _unchanged(path, common)
    copy_seed(path)
    (own / RECORD).unlink()


def _write(path: Path, text: str) -> None:
    """``path`` holds ``text`` whole, or keeps what it held."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _point_head(own: Path, task_id: str, commit: str) -> None:
    """HEAD of the checkout's repository on ``baton/<task_id>`` at ``commit``; the pool's
    branch it was on is deleted."""
    head = own / "HEAD"
    was = head.read_text(encoding="utf-8").strip().removeprefix("ref: ").strip()
    branch = f"refs/heads/{BRANCH_PREFIX}{task_id}"
    _write(own / branch, commit + "\n")
    _write(head, f"ref: {branch}\n")
    if was != branch and was.startswith("refs/heads/"):
        (own / was).unlink(missing_ok=True)
        (own / "logs" / was).unlink(missing_ok=True)


# -- filling --------------------------------------------------------------------------------


def fill(
    git_dir: Path,
    commit: str,
    worktrees_dir: Path,
    limits: PoolLimits,
    *,
    stop: Callable[[], bool] = lambda: False,
) -> int:
    """Make ready checkouts of ``commit`` in the pool of the repository at ``git_dir`` until
    it has ``limits.size`` (fills under way by live processes count), keeping the whole pool
    within ``limits.max_bytes``; how many were made. ``stop`` is asked between checkouts."""
    if not pooled(git_dir, limits):
        return 0
    common = _common(git_dir)
    folder = repo_pool(worktrees_dir, git_dir)
    sweep(worktrees_dir)
    made = 0
    while not stop():
        ready = ready_slots(folder)
        if len(ready) + len(_live_fills(folder)) >= limits.size:
            break
        estimate = ready[0].bytes if ready else 0
        if not _make_room(worktrees_dir, estimate, limits.max_bytes, keep=str(common)):
            break
        slot = _fill_one(git_dir, common, commit, folder)
        made += 1
        if not _make_room(worktrees_dir, 0, limits.max_bytes, keep=str(common)):
            remove_checkout(slot)  # this repository alone is more than the cap allows
            made -= 1
            break
    return made


def _fill_one(git_dir: Path, common: Path, commit: str, folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(6)
    tmp = folder / f"{FILLING}{os.getpid()}-{token}"
    make_checkout(git_dir, commit, f"pool-{token}", tmp, seed=False)
    try:
        _settle_index(tmp, common / "objects")
        record = {
            "repo": str(common),
            "commit": commit,
            "identity": identity_of(git_dir),
            "made": time.time(),
            "bytes": disk_bytes(tmp),
        }
        _write(tmp / ".git" / RECORD, json.dumps(record))
        slot = folder / f"{time.time_ns()}-{token}"
        os.rename(tmp, slot)
    except BaseException:
        remove_checkout(tmp)
        raise
    return slot


def _settle_index(path: Path, objects: Path) -> None:
    """Write the index of the new checkout at ``path`` again once the clock has left the
    second its files were written in. Git trusts an entry's stat data only when the file is
    older than the index ("racy git": a file changed within the index's second could look
    unchanged); an index written with its files makes the take's ``read-tree`` and
    ``status`` read every file again (a third of their time on 5,000 files). At the pool's
    priority, off any task's way: it waits up to a second."""
    own = path / ".git"
    wait = int((own / "index").stat().st_mtime) + 1 - time.time()
    if wait > 0:
        time.sleep(wait)
    env = {"GIT_OBJECT_DIRECTORY": str(objects)}
    run_git(["update-index", "-q", "--refresh"], path, git_dir=own, work_tree=path, env=env)


def _make_room(worktrees_dir: Path, need: int, max_bytes: int, *, keep: str) -> bool:
    """Remove the oldest ready checkouts of other repositories than ``keep`` until ``need``
    more bytes fit within ``max_bytes``; whether they do."""
    slots = all_slots(worktrees_dir)
    total = sum(s.bytes for s in slots)
    for slot in slots:
        if total + need <= max_bytes:
            break
        if slot.repo != keep:
            remove_checkout(slot.path)
            total -= slot.bytes
    return total + need <= max_bytes


def _fill_pid(name: str) -> int | None:
    pid = name.removeprefix(FILLING).split("-", 1)[0]
    return int(pid) if pid.isdigit() else None


def _live_fills(folder: Path) -> list[Path]:
    live: list[Path] = []
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            pid = _fill_pid(entry.name) if entry.name.startswith(FILLING) else None
            if pid is not None and alive(pid):
                live.append(entry)
    return live


def sweep(worktrees_dir: Path) -> int:
    """Remove what the pool must not keep: fills of processes that are gone, checkouts
    without a readable record, and those of repositories that are gone; how many."""
    removed = 0
    with contextlib.suppress(OSError):
        for folder in pool_dir(worktrees_dir).iterdir():
            with contextlib.suppress(OSError):
                for entry in folder.iterdir():
                    if folder.name == TRASH:
                        gone = True
                    elif entry.name.startswith(FILLING):
                        pid = _fill_pid(entry.name)
                        gone = pid is None or not alive(pid)
                    else:
                        slot = read_slot(entry)
                        gone = slot is None or not (Path(slot.repo) / "objects").is_dir()
                    if gone:
                        remove_checkout(entry)
                        removed += 1
    return removed


def clear(worktrees_dir: Path) -> tuple[int, int]:
    """Remove the whole pool; how many ready checkouts it held and their bytes on disk."""
    slots = all_slots(worktrees_dir)
    shutil.rmtree(pool_dir(worktrees_dir), ignore_errors=True)
    return len(slots), sum(s.bytes for s in slots)
