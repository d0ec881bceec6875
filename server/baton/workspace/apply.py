"""Accept: bring chosen hunks of a task into the user's files without losing user edits.

Each hunk is merged three-way (``git merge-file``): base = the snapshot's text, ours = the
user's current text (an open editor buffer or the file on disk), theirs = the snapshot
with that one hunk applied. A hunk that conflicts is reported and stays pending while the
others apply. Whole-file changes (added, deleted, renamed, binary) apply only when the
user's file still is what the snapshot had (or already is the result). Paths outside the
task's scope, in ``.git``, git hooks or CI workflows are refused (see :mod:`scope`).
Files are written atomically (temp file + rename) keeping their mode; with ``write=False``
nothing is written and the result says what would be.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import stat
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from baton.core.diff import FileDiff, FileStatus, Hunk, HunkState, apply_hunks
from baton.workspace.diffing import SYMLINK, decode_text, snapshot_bytes
from baton.workspace.git import git_process, read_blobs
from baton.workspace.scope import refusal
from baton.workspace.snapshot import Snapshot


@dataclass
class AcceptResult:
    """What an accept did: hunk ids applied, in conflict or refused, and the new contents.

    ``texts`` maps a path to its new full text, or None for a deleted file: what was (or,
    with ``write=False``, would be) written. Binary contents go to ``data`` and symlinks
    to ``links`` (path → target) instead.
    """

    applied: list[str] = field(default_factory=list)
    conflicts: list[tuple[str, str]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    texts: dict[str, str | None] = field(default_factory=dict)
    data: dict[str, bytes] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class _Content:
    """A file's content as Baton compares it: bytes, and whether it is a symlink."""

    data: bytes
    link: bool = False
    executable: bool = False

    def same(self, other: _Content | None) -> bool:
        return other is not None and other.data == self.data and other.link == self.link


@dataclass
class _Write:
    path: str
    content: _Content | None  # None = delete


def _inside(root: Path, path: str) -> Path | None:
    """``root / path`` when its folder resolves inside ``root`` (no symlinked escape)."""
    target = root / path
    try:
        target.parent.resolve().relative_to(root.resolve())
    except (ValueError, OSError):
        return None
    return target


def _user_content(root: Path, path: str, current: Mapping[str, str]) -> _Content | None:
    if path in current:
        return _Content(current[path].encode("utf-8", "surrogateescape"))
    target = root / path
    try:
        st = os.lstat(target)
        if stat.S_ISLNK(st.st_mode):
            return _Content(os.fsencode(os.readlink(target)), link=True)
        if not stat.S_ISREG(st.st_mode):
            return None
        return _Content(target.read_bytes(), executable=bool(st.st_mode & 0o111))
    except OSError:
        return None


def _merge(ours: str, base: str, theirs: str, tmp: Path) -> tuple[str, int]:
    """``git merge-file`` of three texts: the merged text and the number of conflicts."""
    names = []
    for name, text in (("current", ours), ("snapshot", base), ("task", theirs)):
        p = tmp / name
        p.write_bytes(text.encode("utf-8", "surrogateescape"))
        names.append(str(p))
    proc = git_process(
        ["merge-file", "-p", "--diff3", "-L", "current", "-L", "snapshot", "-L", "task", *names],
        tmp,
        ok_codes=range(128),
    )
    return proc.stdout.decode("utf-8", "surrogateescape"), proc.returncode


def _new_content(snap: Snapshot, f: FileDiff, hunk: Hunk) -> _Content | None:
    """What the worker left at ``f.path`` (text from the hunk, else the blob)."""
    mode = f.extra.get("newMode")
    blob = f.extra.get("newBlob")
    if mode is None or (blob is None and (f.binary or mode == SYMLINK)):
        # A FileDiff that went through JSON: look the file up in the result tree.
        entry = _tree_entry(snap, snap.result_ref, f.path)
        if entry is not None:
            mode, blob = entry
    link = mode == SYMLINK
    if f.binary or link:
        if not blob:
            return None
        data = read_blobs(snap.git_dir, [blob], git_dir=snap.git_dir).get(blob)
        if data is None:
            return None
        return _Content(data, link=link, executable=mode == "100755")
    return _Content(hunk.new_text.encode("utf-8", "surrogateescape"), executable=mode == "100755")


def _tree_entry(snap: Snapshot, tree: str, path: str) -> tuple[str, str] | None:
    """(mode, sha) of ``path`` in ``tree``, or None."""
    out = git_process(
        ["ls-tree", "-z", tree, "--", path],
        snap.git_dir,
        git_dir=snap.git_dir,
        ok_codes=(0, 128),
    ).stdout.decode("utf-8", "surrogateescape")
    if not out:
        return None
    meta = out.split("\t", 1)[0].split(" ")
    return meta[0], meta[2]


def _old_content(snap: Snapshot, f: FileDiff, path: str) -> _Content | None:
    data = snapshot_bytes(snap, path)
    if data is None:
        return None
    mode = f.extra.get("oldMode")
    if mode is None:  # a FileDiff that went through JSON
        entry = _tree_entry(snap, snap.commit, path)
        mode = entry[0] if entry else None
    return _Content(data, link=mode == SYMLINK)


def _plan_text(
    snap: Snapshot,
    f: FileDiff,
    chosen: list[Hunk],
    current: Mapping[str, str],
    result: AcceptResult,
    tmp: Path,
) -> list[_Write]:
    """Hunk-by-hunk merge of a modified text file."""
    base_bytes = snapshot_bytes(snap, f.path)
    base = None if base_bytes is None else decode_text(base_bytes)
    user = _user_content(snap.root, f.path, current)
    reason = None
    if base is None:
        reason = "the snapshot has no text for this file"
    elif user is None or user.link:
        reason = "the file was deleted or replaced since the task started"
    ours = None if user is None else decode_text(user.data)
    if reason is None and ours is None:
        reason = "the file is no longer text"
    if reason is not None or base is None or ours is None:
        result.conflicts += [(h.id, reason or "") for h in chosen]
        return []
    merged, done, conflicts = merge_hunks(base, ours, chosen, tmp)
    result.conflicts += conflicts
    if not done:
        return []
    result.applied += done
    result.texts[f.path] = merged
    return [_Write(f.path, _Content(merged.encode("utf-8", "surrogateescape")))]


def merge_hunks(
    base: str, ours: str, hunks: Sequence[Hunk], tmp: Path
) -> tuple[str, list[str], list[tuple[str, str]]]:
    """Bring ``hunks`` (computed against ``base``) into ``ours``, the user's text, one by one.

    Returns the merged text, the ids merged and ``(id, reason)`` for each hunk that
    conflicts with the user's changes (left out). ``tmp`` is a scratch folder.
    """
    if ours == base:  # the user has not touched the file: a plain apply
        with contextlib.suppress(ValueError):
            return apply_hunks(base, hunks), [h.id for h in hunks], []
    merged = ours
    done: list[str] = []
    conflicts: list[tuple[str, str]] = []
    for h in sorted(hunks, key=lambda h: (h.old_start, h.old_count)):
        try:
            theirs = apply_hunks(base, [h])
        except ValueError:
            conflicts.append((h.id, "the hunk no longer matches the snapshot"))
            continue
        out, clashes = _merge(merged, base, theirs, tmp)
        if clashes:
            span = f"{h.old_start}-{h.old_start + max(h.old_count, 1) - 1}"
            conflicts.append((h.id, f"conflicts with your changes near lines {span}"))
            continue
        merged = out
        done.append(h.id)
    return merged, done, conflicts


def _plan_whole(
    snap: Snapshot,
    f: FileDiff,
    hunk: Hunk,
    current: Mapping[str, str],
    result: AcceptResult,
) -> list[_Write]:
    """An added, deleted, renamed, binary or type-changed file, taken as one piece."""
    old_path = f.old_path or f.path
    old = None if f.status is FileStatus.ADDED else _old_content(snap, f, old_path)
    new = None if f.status is FileStatus.DELETED else _new_content(snap, f, hunk)
    if f.status is not FileStatus.DELETED and new is None:
        result.conflicts.append((hunk.id, "the task's version of the file is gone"))
        return []
    user_old = _user_content(snap.root, old_path, current)
    user_new = user_old if old_path == f.path else _user_content(snap.root, f.path, current)
    writes: list[_Write] = []
    conflict = None
    if f.status is FileStatus.ADDED:
        if user_new is not None and not (new is not None and new.same(user_new)):
            conflict = f"a different {f.path} was created since the task started"
        elif user_new is None:
            writes.append(_Write(f.path, new))
    elif f.status is FileStatus.DELETED:
        if user_old is not None and not (old is not None and old.same(user_old)):
            conflict = f"{f.path} was changed since the task started"
        elif user_old is not None:
            writes.append(_Write(f.path, None))
    elif f.status is FileStatus.RENAMED:
        done = user_old is None and new is not None and new.same(user_new)
        if not done:
            if user_old is None or old is None or not old.same(user_old):
                conflict = f"{old_path} was changed or removed since the task started"
            elif user_new is not None and not (new is not None and new.same(user_new)):
                conflict = f"a different {f.path} was created since the task started"
            else:
                writes += [_Write(f.path, new), _Write(old_path, None)]
    else:  # modified binary, symlink or type change
        if new is not None and new.same(user_new):
            pass
        elif user_new is None or old is None or not old.same(user_new):
            conflict = f"{f.path} was changed since the task started"
        else:
            writes.append(_Write(f.path, new))
    if conflict is not None:
        result.conflicts.append((hunk.id, conflict))
        return []
    result.applied.append(hunk.id)
    if f.status is FileStatus.RENAMED:
        result.texts[old_path] = None
    if new is None:
        result.texts[f.path] = None
    elif new.link:
        result.links[f.path] = os.fsdecode(new.data)
    elif f.binary:
        result.data[f.path] = new.data
    else:
        result.texts[f.path] = new.data.decode("utf-8", "surrogateescape")
    return writes


def _write(root: Path, w: _Write) -> None:
    target = _inside(root, w.path)
    if target is None:
        raise OSError(f"{w.path} leads outside the workspace")
    if w.content is None:
        with contextlib.suppress(FileNotFoundError):
            target.unlink()
        parent = target.parent
        while parent != root and parent.is_dir() and not any(parent.iterdir()):
            parent.rmdir()
            parent = parent.parent
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.parent / f".{target.name}.baton-{secrets.token_hex(6)}.tmp"
    if w.content.link:
        os.symlink(os.fsdecode(w.content.data), tmp)
    else:
        try:
            st = os.lstat(target)
            mode = stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None
        except FileNotFoundError:
            mode = None
        # A new file gets the usual permissions: the kernel applies the umask to these.
        fresh = 0o777 if w.content.executable else 0o666
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, fresh if mode is None else 0o600)
        try:
            view = memoryview(w.content.data)
            while view:
                view = view[os.write(fd, view) :]
            if mode is not None:
                os.fchmod(fd, mode)
            os.fsync(fd)
        finally:
            os.close(fd)
    try:
        os.replace(tmp, target)
    except OSError:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def _chosen(f: FileDiff, hunk_ids: set[str] | None) -> list[Hunk]:
    if hunk_ids is None:
        return [h for h in f.hunks if h.state is HunkState.PENDING]
    return [h for h in f.hunks if h.id in hunk_ids]


def accept(
    snap: Snapshot,
    files: Sequence[FileDiff],
    hunk_ids: set[str] | None = None,
    *,
    scope: Sequence[str] = (),
    current: Mapping[str, str] | None = None,
    write: bool = True,
) -> AcceptResult:
    """Apply the chosen hunks (None = every pending one) of ``files`` to the user's files.

    ``current`` maps paths (relative to ``snap.root``) to the text of open editor buffers;
    those take the place of the file on disk. Nothing the user changed is overwritten:
    conflicting hunks are reported and stay pending.
    """
    result = AcceptResult()
    buffers = dict(current or {})
    with tempfile.TemporaryDirectory(prefix="baton-merge-") as tmp:
        for f in files:
            chosen = _chosen(f, hunk_ids)
            if not chosen:
                continue
            why = refusal(f.path, scope) or (f.old_path and refusal(f.old_path, scope)) or None
            if why is None and _inside(snap.root, f.path) is None:
                why = f"{f.path} leads outside the workspace through a symlink"
            if why is not None:
                result.refused += [(h.id, why) for h in chosen]
                continue
            whole = f.binary or f.status is not FileStatus.MODIFIED or chosen[0].whole_file
            if whole:
                writes = _plan_whole(snap, f, chosen[0], buffers, result)
            else:
                writes = _plan_text(snap, f, chosen, buffers, result, Path(tmp))
            if not write:
                continue
            try:
                for w in writes:
                    _write(snap.root, w)
            except OSError as exc:
                ids = {h.id for h in chosen}
                result.applied = [i for i in result.applied if i not in ids]
                result.conflicts += [(i, f"could not write: {exc}") for i in sorted(ids)]
                for w in writes:
                    result.texts.pop(w.path, None)
                    result.data.pop(w.path, None)
                    result.links.pop(w.path, None)
    return result
