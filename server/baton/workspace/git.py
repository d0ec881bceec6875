"""The one place Baton runs git: argv lists, safe settings, a fixed identity, clear errors.

Every call disables hooks (``core.hooksPath=/dev/null``) and line-ending conversion
(``core.autocrlf=false``, ``core.eol=lf``), never prompts for credentials, ignores the
caller's ``GIT_DIR``-style variables, and commits as ``Baton <baton@localhost>`` so a
machine with no git identity configured works.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextvars import ContextVar
from functools import cache
from pathlib import Path
from typing import Any, Literal, ParamSpec, TypeVar, overload

from baton.errors import BatonError

IDENTITY = ("Baton", "baton@localhost")

# Settings for Baton's own git calls: no hooks, no line-ending or split-index games, no
# background maintenance in the user's repository.
SAFE_CONFIG: tuple[str, ...] = (
    "core.hooksPath=/dev/null",
    "core.autocrlf=false",
    "core.eol=lf",
    "core.safecrlf=false",
    "core.splitIndex=false",
    "core.fsmonitor=false",
    "core.quotePath=false",
    "gc.auto=0",
    "maintenance.auto=false",
    "advice.detachedHead=false",
    "init.defaultBranch=main",
)

# Variables that would point git at another repository, index or work tree than ours.
_LOCATION_VARS = (
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_OBJECT_DIRECTORY",
    "GIT_ALTERNATE_OBJECT_DIRECTORIES",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_PREFIX",
    "GIT_QUARANTINE_PATH",
)


class GitError(BatonError, RuntimeError):
    """A git command failed; carries the argv, exit code and stderr."""

    def __init__(self, args: Sequence[str], returncode: int, stderr: str) -> None:
        self.args_list = list(args)
        self.returncode = returncode
        self.stderr = stderr.strip()
        super().__init__(f"git {' '.join(args)} failed ({returncode}): {self.stderr}")


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for a Baton git call: the caller's, minus location overrides."""
    env = {k: v for k, v in os.environ.items() if k not in _LOCATION_VARS}
    env.update(
        {
            "GIT_TERMINAL_PROMPT": "0",
            "GIT_ASKPASS": "",
            "SSH_ASKPASS": "",
            "GIT_AUTHOR_NAME": IDENTITY[0],
            "GIT_AUTHOR_EMAIL": IDENTITY[1],
            "GIT_COMMITTER_NAME": IDENTITY[0],
            "GIT_COMMITTER_EMAIL": IDENTITY[1],
            "GIT_OPTIONAL_LOCKS": "0",
            "LC_ALL": "C",
        }
    )
    if extra:
        env.update(extra)
    return env


def git_argv(
    args: Sequence[str], *, git_dir: Path | None = None, work_tree: Path | None = None
) -> list[str]:
    """The full argv for ``git <args>`` with Baton's safety settings."""
    argv = ["git"]
    for setting in SAFE_CONFIG:
        argv += ["-c", setting]
    if git_dir is not None:
        argv.append(f"--git-dir={git_dir}")
    if work_tree is not None:
        argv.append(f"--work-tree={work_tree}")
    argv += list(args)
    return argv


#: CPU priority of git work nobody waits for (see :func:`background`).
BACKGROUND_NICE = 10
#: CPU priority of git work for later (see :func:`idle`): the lowest there is.
IDLE_NICE = 19
_background: ContextVar[bool] = ContextVar("baton_git_background", default=False)
_idle: ContextVar[bool] = ContextVar("baton_git_idle", default=False)
P = ParamSpec("P")
R = TypeVar("R")


@contextlib.contextmanager
def background() -> Iterator[None]:
    """Git started inside runs at a lower CPU priority (``nice``): snapshots, worktrees and
    diffs of tasks running in the background must not take the CPU from event delivery and
    the editor's requests when the machine is busy. They run as fast as before otherwise."""
    token = _background.set(True)
    try:
        yield
    finally:
        _background.reset(token)


def in_background(fn: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    """``fn(*args, **kwargs)`` with its git calls in the background (for ``to_thread``)."""
    with background():
        return fn(*args, **kwargs)


@contextlib.contextmanager
def idle() -> Iterator[None]:
    """Git started inside runs only on what the machine leaves unused: the lowest CPU
    priority (``nice -n 19``) and, where ``ionice`` exists, the idle I/O class. For work
    done ahead of need (the warm pool's checkouts), which must never slow a task down."""
    token = _idle.set(True)
    try:
        yield
    finally:
        _idle.reset(token)


@cache
def _nice() -> str | None:
    return shutil.which("nice")


@cache
def _ionice() -> str | None:
    return shutil.which("ionice")


class _Starter:
    """A thread at a lower CPU priority that starts processes, so they begin at that
    priority without a ``nice`` process of their own: on Linux the niceness is a thread's,
    and a child takes that of the thread that forked it. Only the fork happens here; the
    caller waits for the process and reads its output. ``ready`` is False where a thread's
    niceness cannot be set to ``niceness`` (another system): ``nice`` is run then."""

    def __init__(self, niceness: int) -> None:
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"baton-git-nice{niceness}")
        self.ready = self._pool.submit(self._lower, niceness).result()

    @staticmethod
    def _lower(niceness: int) -> bool:
        if not sys.platform.startswith("linux"):
            return False
        try:
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, niceness)
            return os.getpriority(os.PRIO_PROCESS, tid) == niceness
        except (OSError, AttributeError):
            return False

    def popen(self, argv: list[str], **kw: Any) -> subprocess.Popen[bytes]:
        def start() -> subprocess.Popen[bytes]:
            return subprocess.Popen(argv, **kw)

        return self._pool.submit(start).result()


_starters: dict[int, _Starter] = {}
_starters_lock = threading.Lock()


def _starter(niceness: int) -> _Starter | None:
    """The thread starting processes at ``niceness``; None where there is none."""
    with _starters_lock:
        found = _starters.get(niceness)
        if found is None:
            found = _starters[niceness] = _Starter(niceness)
    return found if found.ready else None


def _priority_prefix() -> tuple[list[str], _Starter | None]:
    """How git is started at the priority asked for in this context: the argv before git's
    (``ionice``; ``nice`` where no thread can fork it at that priority) and the thread that
    forks it (None: the caller's, at its own priority)."""
    mine = os.getpriority(os.PRIO_PROCESS, 0)  # the calling thread's, on Linux
    if _idle.get():
        ionice = _ionice()
        # -t: run git even where the I/O class cannot be set.
        prefix = [ionice, "-c", "3", "-t"] if ionice is not None else []
        niceness, step = IDLE_NICE, IDLE_NICE
    elif _background.get():
        prefix, step = [], BACKGROUND_NICE
        niceness = min(IDLE_NICE, os.getpriority(os.PRIO_PROCESS, os.getpid()) + step)
    else:
        return [], None
    if niceness <= mine:
        return prefix, None  # this thread is as nice already (the pool's refill thread)
    starter = _starter(niceness)
    nice = _nice()
    if starter is None and nice is not None:
        prefix += [nice, "-n", str(step)]
    return prefix, starter


def git_process(
    args: Sequence[str],
    cwd: Path,
    *,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    env: Mapping[str, str] | None = None,
    input: bytes | str | None = None,
    ok_codes: Collection[int] = (0,),
    pass_fds: Sequence[int] = (),
) -> subprocess.CompletedProcess[bytes]:
    """Run git and return the completed process; raise GitError unless the code is in ok_codes.
    ``pass_fds`` stay open in git (it reads them as ``/dev/fd/N``)."""
    data = input.encode("utf-8", "surrogateescape") if isinstance(input, str) else input
    prefix, starter = _priority_prefix()
    argv = [*prefix, *git_argv(args, git_dir=git_dir, work_tree=work_tree)]
    popen = starter.popen if starter is not None else subprocess.Popen
    try:
        child = popen(
            argv,
            cwd=cwd,
            env=git_env(env),
            stdin=subprocess.DEVNULL if data is None else subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            pass_fds=pass_fds,
        )
    except OSError as exc:  # git missing, or cwd gone
        raise GitError(list(args), -1, str(exc)) from exc
    with child:
        try:
            out, err = child.communicate(data)
        except BaseException:
            child.kill()
            raise
    proc = subprocess.CompletedProcess(argv, child.returncode, out, err)
    if proc.returncode not in ok_codes:
        raise GitError(list(args), proc.returncode, proc.stderr.decode("utf-8", "replace"))
    return proc


@overload
def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    git_dir: Path | None = ...,
    work_tree: Path | None = ...,
    env: Mapping[str, str] | None = ...,
    input: bytes | str | None = ...,
    raw: Literal[False] = ...,
) -> str: ...


@overload
def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    git_dir: Path | None = ...,
    work_tree: Path | None = ...,
    env: Mapping[str, str] | None = ...,
    input: bytes | str | None = ...,
    raw: Literal[True],
) -> bytes: ...


def run_git(
    args: Sequence[str],
    cwd: Path,
    *,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    env: Mapping[str, str] | None = None,
    input: bytes | str | None = None,
    raw: bool = False,
) -> str | bytes:
    """Run git and return its stdout: text (UTF-8, surrogate-escaped) or, with raw, bytes."""
    out = git_process(args, cwd, git_dir=git_dir, work_tree=work_tree, env=env, input=input).stdout
    return out if raw else out.decode("utf-8", "surrogateescape")


def split_z(out: str) -> list[str]:
    """Fields of NUL-separated output (``-z``), without the empty tail."""
    parts = out.split("\0")
    if parts and parts[-1] == "":
        parts.pop()
    return parts


def read_blobs(
    cwd: Path, objects: Sequence[str], *, git_dir: Path | None = None
) -> dict[str, bytes]:
    """Contents of many blobs at once (``cat-file --batch``), keyed by the names asked for.

    Names are shas or ``<tree-ish>:<path>``; missing ones are left out.
    """
    wanted = [o for o in dict.fromkeys(objects) if "\n" not in o]
    if not wanted:
        return {}
    out = run_git(
        ["cat-file", "--batch"], cwd, git_dir=git_dir, input="\n".join(wanted) + "\n", raw=True
    )
    blobs: dict[str, bytes] = {}
    pos = 0
    for name in wanted:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        pos = end + 1
        if len(header) != 3 or header[-1] in (b"missing", b"ambiguous"):
            continue
        size = int(header[2])
        blobs[name] = out[pos : pos + size]
        pos += size + 1
    return blobs


def common_dir_of(git_dir: Path) -> Path:
    """The common git dir of a (possibly per-worktree) git dir."""
    try:
        common = (git_dir / "commondir").read_text(encoding="utf-8").strip()
    except OSError:
        return git_dir
    path = Path(common)
    return path if path.is_absolute() else (git_dir / path).resolve()
