"""Baton's own commits (snapshot, result) written as loose objects in-process.

A commit object is a few lines of text (``tree``, ``parent``, ``author``, ``committer``, the
message) stored zlib-compressed under ``objects/<2 hex>/<38 hex>`` of the repository's
common git dir; writing one costs less than a ``git commit-tree`` process. The file is
written beside its place and renamed into it, so it is whole or absent, as git does. Where
git would write something else — a repository that is not SHA-1, that is shared with a
group, or whose commits carry another encoding — :func:`commit_tree` runs git as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import tempfile
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from baton.workspace.git import IDENTITY, common_dir_of, run_git
from baton.workspace.gitconfig import repo_config
from baton.workspace.indexfile import entry_count, read_index


def _in_process(common: Path) -> bool:
    """Whether a loose object written here is what git itself would write."""
    settings = repo_config(common)
    return (
        settings.get("extensions.objectformat", "sha1").lower() == "sha1"
        and settings.get("core.sharedrepository", "false").lower() in ("false", "umask", "0")
        and settings.get("i18n.commitencoding", "utf-8").lower() in ("utf-8", "utf8")
        and (common / "objects").is_dir()
    )


def loose_objects(common: Path) -> bool:
    """Whether :func:`write_loose` writes the objects git would write in ``common``."""
    return _in_process(common)


def commit_body(tree: str, parents: Sequence[str], message: str, when: float) -> bytes:
    """The text of a commit by Baton at ``when`` (local time zone), as ``commit-tree`` makes."""
    local = time.localtime(when)
    offset = local.tm_gmtoff or 0
    sign = "-" if offset < 0 else "+"
    zone = f"{sign}{abs(offset) // 3600:02d}{abs(offset) % 3600 // 60:02d}"
    person = f"{IDENTITY[0]} <{IDENTITY[1]}> {int(when)} {zone}"
    lines = [f"tree {tree}", *(f"parent {p}" for p in parents)]
    lines += [f"author {person}", f"committer {person}", "", message.rstrip("\n"), ""]
    return "\n".join(lines).encode("utf-8")


def write_loose(common: Path, kind: str, body: bytes) -> str:
    """Store ``body`` as a loose object of ``kind`` in ``common``'s object store; its sha."""
    data = f"{kind} {len(body)}\0".encode() + body
    sha = hashlib.sha1(data, usedforsecurity=False).hexdigest()
    folder = common / "objects" / sha[:2]
    target = folder / sha[2:]
    if target.exists():
        return sha
    folder.mkdir(exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix="tmp_obj_", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(zlib.compress(data))
        os.chmod(tmp, 0o444)
        os.replace(tmp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    return sha


#: Up to this many index entries a tree is built in-process; above, git's ``write-tree`` is
#: quicker: it reuses the index's record of the trees nothing changed in.
TREE_IN_PROCESS_MAX = 1000


def tree_of(entries: Mapping[str, tuple[str, str]], write: Callable[[bytes], str]) -> str:
    """The sha of the tree of ``entries`` (path → mode and sha, as in an index), each tree
    object stored by ``write`` (its body → its sha), as ``git write-tree`` builds them.
    ValueError when a path is both a file and a folder."""
    root: dict[str, Any] = {}
    for path, entry in entries.items():
        *folders, name = path.split("/")
        node = root
        for folder in folders:
            node = node.setdefault(folder, {})
            if not isinstance(node, dict):
                raise ValueError(f"{path}: a file where a folder is")
        if name in node or not name:
            raise ValueError(f"{path}: a folder where a file is")
        node[name] = entry

    def build(node: dict[str, Any]) -> str:
        items: list[tuple[bytes, bytes]] = []
        for name, value in node.items():
            raw = name.encode("utf-8", "surrogateescape")
            if isinstance(value, dict):  # git orders a folder as if its name ended in "/"
                items.append((raw + b"/", b"40000 " + raw + b"\0" + bytes.fromhex(build(value))))
            else:
                mode, sha = value
                items.append((raw, mode.encode() + b" " + raw + b"\0" + bytes.fromhex(sha)))
        items.sort(key=lambda item: item[0])
        return write(b"".join(entry for _, entry in items))

    return build(root)


def write_tree(
    cwd: Path,
    git_dir: Path,
    index_file: Path,
    entries: Mapping[str, tuple[str, str]] | None = None,
) -> str:
    """The tree of the index file ``index_file``, stored in the repository at ``git_dir``;
    its sha (``git write-tree``; in-process for a small index git would write the same).
    ``entries``: the file's entries, already read by ``read_index(..., plain=True)``."""
    common = common_dir_of(git_dir)
    count = entry_count(index_file)  # a large index is not parsed only to be found large
    if _in_process(common) and count is not None and count <= TREE_IN_PROCESS_MAX:
        if entries is None:
            entries = read_index(index_file, plain=True)
        if entries is not None and len(entries) <= TREE_IN_PROCESS_MAX:
            with contextlib.suppress(ValueError):
                return tree_of(entries, lambda body: write_loose(common, "tree", body))
    env = {"GIT_INDEX_FILE": str(index_file)}
    return run_git(["write-tree"], cwd, git_dir=git_dir, env=env).strip()


def tree_of_commit(common: Path, sha: str) -> str | None:
    """The tree of the commit ``sha`` when it is a loose object of ``common`` (as Baton's
    own commits are); None when it is not one this reads (packed, say)."""
    try:
        data = zlib.decompress((common / "objects" / sha[:2] / sha[2:]).read_bytes())
    except (OSError, zlib.error):
        return None
    header, _, body = data.partition(b"\0")
    if not header.startswith(b"commit ") or not body.startswith(b"tree "):
        return None
    tree = body[5:45].decode("ascii", "replace")
    return tree if len(tree) == 40 and body[45:46] == b"\n" else None


def commit_tree(cwd: Path, git_dir: Path, tree: str, parents: Sequence[str], message: str) -> str:
    """A commit of ``tree`` on ``parents`` by Baton in the repository at ``git_dir``; its sha."""
    common = common_dir_of(git_dir)
    if _in_process(common):
        return write_loose(common, "commit", commit_body(tree, parents, message, time.time()))
    args = ["commit-tree", tree, *(a for p in parents for a in ("-p", p)), "-m", message]
    return run_git(args, cwd, git_dir=git_dir).strip()
