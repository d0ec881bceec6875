"""``baton claude``: start Claude Code connected to the editor's Baton as its IDE.

The editor's language server writes a lock file for its IDE server (``claudeIde``); inside
Claude Code ``/ide`` lists it too. This command picks the live Baton lock whose workspace
folders hold ``--cwd`` (the innermost) and runs ``claude`` with ``CLAUDE_CODE_SSE_PORT`` set,
so the session connects at once and its edits arrive in the editor as Baton diffs.
"""

from __future__ import annotations

import argparse
import os

from baton.cli.render import Output
from baton.errors import Unavailable

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs start-up)
if TYPE_CHECKING:  # imported when used: `baton --help` stays quick
    from collections.abc import Callable
    from pathlib import Path

    from baton.surfaces.ide.lockfile import LockFile

IDE_PREFIX = "Baton"


class NoEditor(Unavailable):
    """No editor with Baton's IDE server serves the folder."""


def add_commands(cmd: Callable[[str, str], argparse.ArgumentParser]) -> None:
    c = cmd("claude", "run Claude Code connected to the editor's Baton (its edits become diffs)")
    c.add_argument("--cwd", default=".", help="the project folder (default: .)")
    c.add_argument("--print-env", action="store_true", help="print the port; do not start claude")
    c.add_argument("args", nargs=argparse.REMAINDER, help="arguments for claude (after --)")


def find_ide(folder: Path) -> tuple[int, LockFile]:
    """The port and lock of the live Baton IDE server whose workspace holds ``folder``."""
    from pathlib import Path

    from baton.surfaces.ide.lockfile import SUFFIX, alive, lock_dir, read

    folder = folder.resolve()
    best: tuple[int, int, LockFile] | None = None
    for path in sorted(lock_dir().glob(f"*{SUFFIX}")):
        lock = read(path)
        if lock is None or not lock.ide_name.startswith(IDE_PREFIX) or not alive(lock.pid):
            continue
        for root in map(Path, lock.workspace_folders):
            if (folder == root or root in folder.parents) and path.stem.isdigit():
                depth = len(root.parts)
                if best is None or depth > best[0]:
                    best = (depth, int(path.stem), lock)
    if best is None:
        raise NoEditor(
            f"no editor with Baton serves {folder}: open the folder in VS Code or Neovim with "
            "Baton (setting claudeIde on), or use /ide inside Claude Code"
        )
    return best[1], best[2]


def run(args: argparse.Namespace, out: Output) -> int:
    import shutil
    from pathlib import Path

    folder = Path(args.cwd)
    try:
        port, lock = find_ide(folder)
    except NoEditor as exc:
        out.error(str(exc))
        return 1
    if args.print_env or out.json_mode:
        found = {"port": port, "ideName": lock.ide_name, "pid": lock.pid}
        out.result(found, f"CLAUDE_CODE_SSE_PORT={port}  # {lock.ide_name}, pid {lock.pid}")
        return 0
    claude = shutil.which("claude")
    if claude is None:
        out.error("claude (Claude Code) is not on PATH")
        return 1
    from baton.surfaces.ide import claude_env

    extra = [a for a in args.args if a != "--"] if args.args[:1] == ["--"] else list(args.args)
    os.chdir(folder)
    os.execve(claude, [claude, *extra], claude_env(port, os.environ))
    return 0  # not reached
