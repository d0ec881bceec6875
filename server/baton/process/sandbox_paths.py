"""Which paths an agent's sandbox opens, shows and hides, and why (for :mod:`.sandbox`).

:func:`plan` gathers them for one launch, as real paths (symlinks resolved, so a hidden
folder reached through a link is hidden too):

- **writable**: the working folder (the task's checkout); the CLI's own state folders
  (:func:`baton.agents.state.state_paths`: sessions, settings, credentials); what the launch
  says it writes (``Launch.writable``); the checkout's git metadata that git must update
  (:func:`git_paths`).
- **readable** (shown even where a parent is hidden): what the launch reads
  (``Launch.readable``: a prompt file in the task's folder); the agent's program and the
  folder it lives in (an npm CLI's whole ``node_modules``), and so for a script its command
  line names (``python3 /path/agent.py``) — as resolved and, reached through a symlink, as
  named — under the private ``/tmp`` too, never inside anything else hidden (a command line
  may name the discovery file); ``$HOME`` and ``$GIT_CONFIG_GLOBAL`` (read-only, even when
  they lie in the private ``/tmp``); the checkout's common git folder and the object stores
  it borrows from.
- **hidden**: ``/tmp`` and ``/var/tmp`` (private, empty); the task's folder; Baton's state
  folder (``$BATON_HOME``: the database, every task's folder and checkout) and runtime folder
  (``$XDG_RUNTIME_DIR`` as a whole: discovery files with tokens, sockets, the ssh and gpg
  agents); Baton's user config (its folder, or the file ``$BATON_CONFIG`` names) and
  secrets file; Claude Code's IDE lock folders; the state
  folders of every other provider and account; container-engine sockets; the credential
  stores in :data:`HOME_SECRETS`.
- **shown for MCP servers**: the files of the MCP servers the agent's CLI starts, as
  :mod:`baton.process.sandbox_mcp` decides (what it will not show is in
  :attr:`Plan.warnings`).
- **protected** (read-only inside writable folders), for a checkout that is a linked
  worktree: git metadata that git commands run later outside the sandbox would obey — the
  checkout's ``.git`` file, the git dir's ``config``, ``config.worktree``, ``hooks``,
  ``commondir`` and ``gitdir``.

Paths that do not exist are left out (there is nothing to show or hide), except writable
folders, which are created.
"""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from baton.agents.mcp_files import ServerFiles
from baton.agents.state import all_state_paths, state_paths
from baton.config.layers import user_config_path
from baton.config.secretsfile import secrets_file
from baton.process.sandbox_mcp import show

#: Credential stores under ``$HOME`` that no agent sees (its own CLI's state aside).
HOME_SECRETS = (
    ".ssh", ".gnupg", ".aws", ".azure", ".config/gcloud", ".kube", ".docker", ".netrc",
    ".git-credentials", ".config/git/credentials", ".config/gh", ".password-store",
    ".local/share/keyrings", ".pypirc", ".npmrc", ".yarnrc", ".cargo/credentials",
    ".cargo/credentials.toml", ".vault-token", ".terraform.d", ".config/hub",
)  # fmt: skip
#: Sockets that give whoever reaches them the machine (container engines).
HOST_SOCKETS = (
    "/run/docker.sock", "/var/run/docker.sock", "/run/containerd", "/run/podman",
    "/var/run/podman", "/run/user",
)  # fmt: skip
#: The private temporary folders (an empty tmpfs on Linux).
PRIVATE_TMP = ("/tmp", "/var/tmp")
#: Git metadata the agent must not change: Baton's git commands outside the sandbox obey it.
GIT_PROTECTED = ("config", "config.worktree", "hooks", "commondir", "gitdir")
#: What git writes in a common folder Baton owns (a private repository): objects, refs, logs.
GIT_SHARED_WRITES = ("objects", "refs", "logs")


@dataclass(slots=True)
class Plan:
    cwd: str
    writable: list[str] = field(default_factory=list)
    readable: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    protected: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # MCP server files it does not show


def real(path: str) -> str:
    return os.path.realpath(os.path.expanduser(path))


def _resolved(path: str, memo: dict[str, str]) -> str:
    """``real(path)``, each folder on the way resolved once per ``memo``: most paths of a
    plan share their folders (``$HOME``), and most do not exist (one ``lstat`` says so: a
    name that is not there is no symbolic link, and is kept as it is, as ``realpath`` does)."""
    found = memo.get(path)
    if found is not None:
        return found
    full = os.path.expanduser(path)
    parts = full.split("/")
    if not full or parts[0] or full == "/" or "." in parts or ".." in parts or "" in parts[1:]:
        found = os.path.realpath(full)  # relative, or "." and ".." resolved after the links
    else:
        folder, _, name = full.rpartition("/")
        above = _resolved(folder or "/", memo)
        try:
            link = stat.S_ISLNK(os.lstat(full).st_mode)
        except OSError:
            link = False
        found = os.path.realpath(full) if link else os.path.join(above, name)
    memo[path] = found
    return found


def inside(path: str, folder: str) -> bool:
    """Whether ``path`` is ``folder`` or lies in it (both real, absolute paths)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def state_homes(task_dir: str, env: Mapping[str, str]) -> list[str]:
    """Baton's state folders: ``$BATON_HOME`` (else the XDG default, as
    :func:`baton.store.paths.state_home` finds it, without creating it) and the one the task's
    folder lies in (``<home>/tasks/<id>``)."""
    homes = []
    explicit = env.get("BATON_HOME", "")
    if os.path.isabs(explicit):
        homes.append(explicit)
    else:
        xdg = env.get("XDG_STATE_HOME", "")
        base = xdg if os.path.isabs(xdg) else os.path.join(os.path.expanduser("~"), ".local/state")
        homes.append(os.path.join(base, "baton"))
    folder = Path(task_dir)
    if folder.parent.name == "tasks":
        homes.append(str(folder.parent.parent))
    return [real(h) for h in homes]


def git_paths(checkout: str, private: Sequence[str]) -> Plan:
    """The git metadata of ``checkout`` for its sandbox.

    A checkout that is a repository of its own (a ``.git`` folder in it, as Baton makes
    them) is the agent's: writable with the checkout, Baton never obeys it; the object
    stores it borrows through ``objects/info/alternates`` (the user's) are readable.

    For a linked worktree, the git dir the checkout's ``.git`` names is writable (its index,
    HEAD, its own refs), with :data:`GIT_PROTECTED` read-only in it, and the ``.git`` file
    itself read-only. The common folder of a linked worktree is read-only — the user's
    repository never changes — unless it lies in one of the ``private`` folders (a
    repository Baton owns), where :data:`GIT_SHARED_WRITES` are writable so the agent can
    commit. Object stores borrowed through ``objects/info/alternates`` are readable.
    """
    found = Plan(cwd=checkout)
    dotgit = os.path.join(checkout, ".git")
    if os.path.isfile(dotgit):
        try:
            with open(dotgit, encoding="utf-8") as f:
                line = f.read().strip()
        except OSError:
            return found
        if not line.startswith("gitdir:"):
            return found
        gitdir = real(os.path.join(checkout, line[len("gitdir:") :].strip()))
        found.protected.append(dotgit)
    elif os.path.isdir(dotgit):
        gitdir = real(dotgit)
    else:
        return found
    common = gitdir
    try:
        with open(os.path.join(gitdir, "commondir"), encoding="utf-8") as f:
            common = real(os.path.join(gitdir, f.read().strip()))
    except OSError:
        pass
    if inside(gitdir, checkout) and common == gitdir:
        # The checkout's own repository (baton.workspace.checkout): the agent's to change as
        # it likes — Baton's git never obeys it — borrowing the user's objects read-only.
        found.readable += _alternates(gitdir)
        return found
    if not inside(gitdir, checkout):
        found.writable.append(gitdir)
    if common != gitdir:
        # A linked worktree: a config.worktree it lacks could be created by the agent and be
        # obeyed (extensions.worktreeConfig); an empty one changes nothing.
        worktree_config = os.path.join(gitdir, "config.worktree")
        if not os.path.exists(worktree_config):
            with open(worktree_config, "a", encoding="utf-8"):
                pass
        found.readable.append(common)
        if any(inside(common, p) for p in private):
            found.writable += [os.path.join(common, name) for name in GIT_SHARED_WRITES]
    for folder in {gitdir, common}:
        found.protected += [os.path.join(folder, name) for name in GIT_PROTECTED]
        found.readable += _alternates(folder)
    return found


def _alternates(git_dir: str) -> list[str]:
    """The object stores ``git_dir`` borrows (``objects/info/alternates``), as real paths."""
    objects = os.path.join(git_dir, "objects")
    try:
        with open(os.path.join(objects, "info", "alternates"), encoding="utf-8") as f:
            lines = [line.strip() for line in f]
    except OSError:
        return []
    found = []
    for line in lines:
        if not line or line.startswith("#"):
            continue
        if line.startswith('"') and line.endswith('"'):  # C-quoted
            line = line[1:-1].encode().decode("unicode_escape")
        found.append(real(os.path.join(objects, line)))
    return found


def plan(
    *,
    cwd: str,
    task_dir: str,
    env: Mapping[str, str],
    provider: str,
    argv0: str,
    named: Sequence[str] = (),
    readable: Sequence[str],
    writable: Sequence[str],
    hide: Sequence[str],
    mcp: Sequence[ServerFiles] = (),
) -> Plan:
    """Every path of one launch's policy (see the module's docstring)."""
    memo: dict[str, str] = {}

    def real(path: str) -> str:  # each path resolved once per plan (most come twice or more)
        return _resolved(path, memo)

    cwd = real(cwd)
    homes = state_homes(task_dir, env)
    own = [real(p) for p in state_paths(provider, env)]
    found = Plan(cwd=cwd, writable=[cwd, *own, *(real(p) for p in writable)])
    for folder in found.writable:  # a CLI creates its state folder on first use
        if not os.path.exists(folder) and not os.path.splitext(folder)[1]:
            os.makedirs(folder, mode=0o700, exist_ok=True)
    git = git_paths(cwd, homes)
    found.writable += git.writable
    found.protected += git.protected
    found.readable += [real(p) for p in readable] + git.readable
    for name in ("HOME", "GIT_CONFIG_GLOBAL"):
        if env.get(name):
            found.readable.append(real(env[name]))
    programs: list[str] = []
    binary = argv0 if os.sep in argv0 else shutil.which(argv0, path=env.get("PATH")) or ""
    if binary:
        programs += _program(os.path.abspath(os.path.join(cwd, binary)))
    for arg in named:  # a script the interpreter runs: `python3 /path/agent.py`
        if os.path.isabs(arg) and os.path.isfile(arg):
            programs += _program(arg)

    hidden = [*PRIVATE_TMP, *HOST_SOCKETS, real(task_dir), *homes]
    for environ in (env, os.environ):  # the agent's, and the broker's
        runtime = environ.get("XDG_RUNTIME_DIR", "")
        if os.path.isabs(runtime):
            hidden.append(real(runtime))
        home = real(environ.get("HOME") or "~")
        claude = environ.get("CLAUDE_CONFIG_DIR") or os.path.join(home, ".claude")
        hidden.append(os.path.join(real(claude), "ide"))
        hidden += [os.path.join(home, name) for name in HOME_SECRETS]
    hidden += [_user_config(), real(str(secrets_file()))]
    others = [*hide]
    for environ in (env, os.environ):
        for paths in all_state_paths(environ).values():
            others += paths
    for other in others:
        path = real(other)
        if not any(inside(path, mine) or inside(mine, path) for mine in own):
            hidden.append(path)
    # A program is shown under the private /tmp, never inside what else is hidden (a
    # command line may name the discovery file it must not read).
    secret = list(dict.fromkeys(real(h) for h in hidden if h not in PRIVATE_TMP))
    # As resolved, and as named where a symlink leads there (a linked folder under /tmp).
    named_too = {os.path.normpath(p) for p in programs} | {real(p) for p in programs}
    found.readable += [
        p for p in sorted(named_too) if not any(inside(q, h) for h in secret for q in (p, real(p)))
    ]
    homes_of_user = [real(e.get("HOME") or "~") for e in (env, os.environ)]
    private = [real(p) for p in PRIVATE_TMP]
    shown = show(mcp, secret=secret, private=private, writable=found.writable, homes=homes_of_user)
    found.readable += shown.readable
    hidden += shown.hidden
    found.warnings = shown.warnings
    there: dict[str, bool] = {}  # each path looked at once (many come twice or more)

    def kept(paths: Iterable[str]) -> list[str]:
        out = []
        for p in dict.fromkeys(paths):
            if (found_there := there.get(p)) is None:
                found_there = there[p] = os.path.exists(p)
            if found_there:
                out.append(p)
        return out

    found.writable = kept(found.writable)
    found.hidden = kept(real(h) for h in hidden)
    found.readable = kept(found.readable)
    found.protected = kept(found.protected)
    return found


def _user_config() -> str:
    """What of the user's config the agent must not read: the file ``BATON_CONFIG`` names
    (not the folder it sits in, which may hold anything), else Baton's whole config folder."""
    path = user_config_path()
    return real(str(path if os.environ.get("BATON_CONFIG") else path.parent))


def private_tmp(task_dir: Path) -> str:
    """A fresh temporary folder for one attempt where no private ``/tmp`` can be mounted."""
    return tempfile.mkdtemp(prefix="agent-tmp-", dir=task_dir)


def _program(binary: str) -> list[str]:
    """What running ``binary`` reads: the program (as named and as resolved) and the folder
    it lives in — for an npm CLI, its whole ``node_modules`` (a ``.bin`` link leads there)."""
    out: list[str] = []
    for path in (binary, os.path.realpath(binary)):
        parts = path.split(os.sep)
        if "node_modules" in parts:
            at = len(parts) - 1 - parts[::-1].index("node_modules")
            out.append(os.sep.join(parts[: at + 1]))
        else:
            out.append(os.path.dirname(path))
    return list(dict.fromkeys(out))
