"""A repository's git settings as git resolves them, read once and again only after a change.

Every task asks the user's repository the same questions (the identity its checkout commits
with, whether a ``core.attributesFile`` is configured): a git process each time, for answers
that almost never change. :func:`repo_config` runs ``git config --list --show-origin`` once
per repository and keeps the answer while nothing it came from could have changed: the
files it came from (included ones too) and the files git would read even when they do not
exist yet (the repository's ``config`` and ``config.worktree``, the user's ``~/.gitconfig``
and ``$XDG_CONFIG_HOME/git/config``, ``/etc/gitconfig``) keep their size and modification
time, and the variables that point git at other settings keep their values.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from baton.workspace.git import common_dir_of, git_process, split_z

# Variables that change which settings git reads (the location ones are dropped anyway).
_CONFIG_VARS = ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_NOSYSTEM")

_lock = threading.Lock()
# git dir → (the files looked at, their stamp and the variables, the settings)
_cache: dict[Path, tuple[list[Path], tuple[object, ...], dict[str, str]]] = {}


def _candidates(git_dir: Path) -> list[Path]:
    """The files git reads for ``git_dir`` whether or not they exist today."""
    home = Path(os.environ.get("HOME") or Path.home())
    xdg = Path(os.environ.get("XDG_CONFIG_HOME") or home / ".config")
    found = [common_dir_of(git_dir) / "config", git_dir / "config.worktree"]
    found.append(Path(os.environ.get("GIT_CONFIG_GLOBAL") or home / ".gitconfig"))
    found.append(xdg / "git" / "config")
    found.append(Path(os.environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"))
    return found


def _stamp(paths: list[Path]) -> tuple[object, ...]:
    stamp: list[object] = []
    for path in paths:
        try:
            st = os.stat(path)
        except OSError:
            stamp.append((str(path), None))
            continue
        stamp.append((str(path), st.st_mtime_ns, st.st_size, st.st_ino))
    return tuple(stamp)


def _environment() -> tuple[object, ...]:
    names = sorted(k for k in os.environ if k.startswith("GIT_CONFIG") or k in _CONFIG_VARS)
    return tuple((k, os.environ[k]) for k in names)


def _read(git_dir: Path) -> tuple[dict[str, str], list[Path]]:
    """Every setting (lower-case key → its last value) and the files they came from."""
    out = git_process(
        ["config", "--list", "--show-origin", "-z"], git_dir, git_dir=git_dir, ok_codes=(0, 1)
    ).stdout.decode("utf-8", "surrogateescape")
    fields = split_z(out)
    values: dict[str, str] = {}
    origins: dict[Path, None] = {}
    for i in range(0, len(fields) - 1, 2):
        origin, entry = fields[i], fields[i + 1]
        key, _, value = entry.partition("\n")
        values[key.lower()] = value
        if origin.startswith("file:"):
            path = Path(origin.removeprefix("file:"))
            origins[path if path.is_absolute() else git_dir / path] = None
    return values, list(origins)


def repo_config(git_dir: Path) -> dict[str, str]:
    """The settings git uses for the repository at ``git_dir`` (keys in lower case, each
    with its last value), as of the last change to a file they come from."""
    with _lock:
        known = _cache.get(git_dir)
    if known is not None:
        files, stamp, values = known
        if (_stamp(files), _environment()) == stamp:
            return dict(values)
    candidates = _candidates(git_dir)
    before = (_stamp(candidates), _environment())  # a change while git reads: read again
    values, origins = _read(git_dir)
    files = list(dict.fromkeys([*candidates, *origins]))
    stamp = (_stamp(files), _environment())
    if stamp[0][: len(candidates)] == before[0] and stamp[1] == before[1]:
        with _lock:
            _cache[git_dir] = (files, stamp, dict(values))
    return values
