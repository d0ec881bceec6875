"""The repository of a task's checkout, made ahead of need: its git directory, without files.

A checkout's repository is a dozen new files and folders (``.git`` and its object, ref and
info folders, ``HEAD``, ``config``, the attributes that keep bytes exact, the alternates
file), the same for every task; on some disks each new one costs a tenth of a millisecond
and more, most on a busy machine. So once a task took one, a thread at the lowest priority
makes the next: ``<worktrees_dir>/.index/.skeleton-<pid>-<token>`` (beside Baton's indexes
of the checkouts, on their file system), ready once renamed from its ``…-making`` name.
:func:`take_skeleton` renames it to the task's place and writes what is the task's into
files that are there already (``HEAD`` names the task's branch; the caller
writes the alternates and the identity). A broker that dies leaves its skeletons to
:func:`sweep_skeletons` (their pid is gone); a checkout cut short after the take has no
branch and is made again, as any.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import shutil
import stat
import threading
from pathlib import Path

# Highest-precedence attributes of the checkout: git writes and reads the bytes unchanged.
EXACT_BYTES = "* -text -eol -filter -ident -working-tree-encoding\n"
PREFIX = ".skeleton-"
_MAKING = "-making"
_lock = threading.Lock()
_ready: dict[Path, list[Path]] = {}  # their folder → skeletons of this process
_making: set[Path] = set()


#: What git finds of each file system a checkout was made on (by device): executable bits,
#: symbolic links, case-insensitive names. Probed once: they are the file system's.
_file_systems: dict[int, tuple[bool, bool, bool]] = {}


def _probe(own: Path, config: Path) -> tuple[bool, bool, bool]:
    """What ``git init`` finds of the file system ``own`` is on, by its tests on ``config``."""
    mode = config.stat().st_mode
    config.chmod(mode ^ stat.S_IXUSR)
    filemode = config.stat().st_mode == mode ^ stat.S_IXUSR
    config.chmod(mode)
    try:
        os.symlink("config", own / "tXXXXXX")
        symlinks = True
        (own / "tXXXXXX").unlink()
    except OSError:
        symlinks = False
    return filemode, symlinks, (own / "CoNfIg").exists()


def init_repository(path: Path, branch: str) -> bool:
    """A repository git takes for what ``git init -q --template= -b <branch> <path>`` makes
    (SHA-1), made in-process: ``HEAD`` on the branch, the object and ref folders, and the
    ``config`` with what git finds of the file system (executable bits, symbolic links,
    case). Only the folders git needs are made (git makes the others when it writes there):
    on some disks each new file or folder costs a tenth of a millisecond and more. False,
    and nothing left at ``path``, when it could not be made; git is asked then."""
    own = path / ".git"
    if path.exists() or path.is_symlink():
        return False
    try:
        (own / "objects" / "info").mkdir(parents=True)
        (own / "refs").mkdir()
        (own / "HEAD").write_text(f"ref: refs/heads/{branch}\n", encoding="utf-8")
        config = own / "config"
        device = path.parent.stat().st_dev
        found = _file_systems.get(device)
        if found is None:
            config.write_text("", encoding="utf-8")
            found = _file_systems[device] = _probe(own, config)
        filemode, symlinks, ignorecase = found
        lines = ["[core]", "\trepositoryformatversion = 0", f"\tfilemode = {str(filemode).lower()}"]
        lines += ["\tbare = false", "\tlogallrefupdates = true"]
        lines += [] if symlinks else ["\tsymlinks = false"]
        lines += ["\tignorecase = true"] if ignorecase else []
        config.write_text("\n".join(lines) + "\n", encoding="utf-8")
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
        return False
    return True


def _make(folder: Path) -> Path | None:
    """One skeleton in ``folder``, whole once it has its ready name; None if it could not
    be made."""
    folder.mkdir(parents=True, exist_ok=True)
    tmp = folder / f"{PREFIX}{os.getpid()}-{secrets.token_hex(6)}{_MAKING}"
    if not init_repository(tmp, "baton/skeleton"):
        return None
    own = tmp / ".git"
    try:
        (own / "objects" / "info" / "alternates").write_text("", encoding="utf-8")
        (own / "info").mkdir()
        (own / "info" / "attributes").write_text(EXACT_BYTES, encoding="utf-8")
        ready = tmp.with_name(tmp.name.removesuffix(_MAKING))
        os.rename(tmp, ready)
    except OSError:
        shutil.rmtree(tmp, ignore_errors=True)
        return None
    return ready


def _fill(folder: Path) -> None:
    with contextlib.suppress(OSError, AttributeError):  # Linux: this thread alone
        os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 19)
    try:
        made = _make(folder)
    finally:
        with _lock:
            _making.discard(folder)
            if made is not None:
                _ready.setdefault(folder, []).append(made)


def _ask(folder: Path) -> None:
    """Have a skeleton made in ``folder`` unless one is ready or being made."""
    with _lock:
        if _ready.get(folder) or folder in _making:
            return
        _making.add(folder)
    threading.Thread(target=_fill, args=(folder,), name="baton-skeleton", daemon=True).start()


def take_skeleton(folder: Path, path: Path, branch: str) -> bool:
    """Put a skeleton made ahead in ``folder`` at ``path`` (which must not exist, on the
    same file system), its HEAD on ``branch``;
    False when none was ready (or it could not be moved), nothing left at ``path`` then. The
    next one is asked for either way."""
    with _lock:
        ready = _ready.get(folder)
        skeleton = ready.pop() if ready else None
    _ask(folder)
    if skeleton is None:
        return False
    try:
        if path.exists() or path.is_symlink():
            raise FileExistsError(path)
        os.rename(skeleton, path)
    except OSError:
        shutil.rmtree(skeleton, ignore_errors=True)
        return False
    try:
        (path / ".git" / "HEAD").write_text(f"ref: refs/heads/{branch}\n", encoding="utf-8")
    except OSError:
        shutil.rmtree(path, ignore_errors=True)
        return False
    return True


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (one of another user's counts too)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def sweep_skeletons(folder: Path) -> int:
    """Remove the skeletons that processes now gone left in ``folder``; how many."""
    removed = 0
    with contextlib.suppress(OSError):
        for entry in folder.iterdir():
            if not entry.name.startswith(PREFIX):
                continue
            pid = entry.name.removeprefix(PREFIX).split("-", 1)[0]
            if pid.isdigit() and not alive(int(pid)):
                shutil.rmtree(entry, ignore_errors=True)
                removed += 1
    return removed
