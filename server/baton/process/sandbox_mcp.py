"""Which files of the agent's MCP servers its sandbox shows (for :mod:`.sandbox_paths`).

:mod:`baton.agents.mcp_files` says what each stdio MCP server the agent's CLI starts needs
(its program, the files and folders it names). :func:`show` decides, for one launch:

- a path the sandbox already shows (the checkout, a writable folder, the read-only rest of the
  file system) needs nothing;
- a path under the private ``/tmp`` or ``/var/tmp`` is shown read-only at the same path, as
  named and as resolved — only that file or folder, never its siblings — with the ``.git``
  folder of a shown folder hidden;
- never shown, whoever names it: anything the sandbox hides on purpose (Baton's state and
  runtime folders, the credential stores, other accounts' folders, Baton's config), a path
  inside a ``.git`` folder, the user's home or a folder holding it, ``/tmp`` or ``/var/tmp``
  as a whole — the server is then warned about by name;
- a server from the project's own files (:attr:`~baton.agents.mcp_files.ServerFiles.own`
  False) is shown nothing: a warning says what it will miss;
- a path a server names that does not exist and that the agent could not create (outside its
  writable folders) is warned about: a log it writes there fails. The profile's
  ``options.sandbox.write`` (user config only) makes a folder writable.

Every warning starts ``warning: MCP server NAME`` and goes to the task's log at warning level.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, field

from baton.agents.mcp_files import ServerFiles


@dataclass(slots=True)
class Shown:
    """What :func:`show` adds to a launch's sandbox."""

    readable: list[str] = field(default_factory=list)
    hidden: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)


def _inside(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _refusal(path: str, real: str, *, secret: Sequence[str], private: Sequence[str],
             homes: Sequence[str]) -> str:  # fmt: skip
    """Why ``path`` (resolved: ``real``) is never shown, or ""."""
    if any(_inside(p, h) for h in secret for p in (path, real)):
        return "which the sandbox hides on purpose (Baton's state, a credential store, …)"
    if ".git" in real.split(os.sep) or ".git" in path.split(os.sep):
        return "inside a .git folder, which is never shown"
    if real in private or path in private:
        return "the whole temporary folder, which is never shown"
    if any(_inside(home, real) for home in homes):
        return "your home folder or one holding it, which is never shown whole"
    return ""


def show(
    servers: Sequence[ServerFiles],
    *,
    secret: Sequence[str],
    private: Sequence[str],
    writable: Sequence[str],
    homes: Sequence[str],
) -> Shown:
    """What the sandbox shows of ``servers``' files, and what it says it will not (see the
    module's docstring). ``secret``: the real paths the sandbox hides on purpose; ``private``:
    the private temporary folders; ``writable``: the folders the agent writes; ``homes``: the
    user's home folders (the agent's ``$HOME`` and the broker's)."""
    out = Shown()
    closed = [*private, *secret]
    for server in servers:
        lost: list[str] = []
        for path in server.read:
            path = os.path.normpath(path)
            if not any(_inside(path, c) for c in closed):
                continue  # the read-only rest of the file system shows it already
            if any(_inside(path, w) for w in writable):
                continue
            real = os.path.realpath(path)
            why = _refusal(path, real, secret=secret, private=private, homes=homes)
            if not why and not server.own:
                lost.append(path)
                continue
            if why:
                stops = " (it will not start)" if path in server.program else ""
                out.warnings.append(
                    f"warning: MCP server {server.server} names {path}, {why}{stops}"
                )
                continue
            out.readable += [path, real] if real != path else [path]
            if os.path.isdir(os.path.join(real, ".git")):
                out.hidden.append(os.path.join(path, ".git"))
        if lost:
            out.warnings.append(
                f"warning: MCP server {server.server} comes from the project's own config, so"
                f" the sandbox does not show it {', '.join(lost)} (only the servers of your"
                " own config and your worker_mcp.add are shown their files)"
            )
        for path in server.missing:
            if not any(_inside(path, w) for w in writable):
                out.warnings.append(
                    f"warning: MCP server {server.server} names {path}, which does not exist"
                    " and which the agent's sandbox cannot create (it writes only its checkout,"
                    " its CLI's state folders and the profile's options.sandbox.write)"
                )
    return out
