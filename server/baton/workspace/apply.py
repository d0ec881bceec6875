"""Accept: bring chosen hunks of a task into the user's files without losing user edits.

Each hunk is merged three-way (``git merge-file``): base = the snapshot's text, ours = the
user's current text (an open editor buffer or the file on disk), theirs = the snapshot
with that one hunk applied. A hunk that conflicts is reported and stays pending while the
others apply. Whole-file changes (added, deleted, renamed, binary) apply only when the
user's file still is what the snapshot had (or already is the result). Paths outside the
task's scope, in ``.git``, or protected (CI, hooks, editor tasks; see :mod:`scope`) are
refused, and so is a symlink whose target leaves the tree or enters ``.git``.

Every file's new content is planned before any file is written. Then, with a ``journal``,
the plan is recorded (:mod:`journal`), and each file is replaced by :func:`userfile.land`:
a temporary file beside it, renamed over it, with what another writer saves meanwhile
merged in. With ``write=False`` nothing is written and the result says what would be.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from baton.core.diff import FileDiff, FileStatus, Hunk, HunkState, apply_hunks, split_lines
from baton.core.relocate import at_place, overwrite, place, relocate
from baton.faults import crash_point
from baton.workspace.contents import Content, merge_texts, read_content, same
from baton.workspace.diffing import SYMLINK, decode_text, snapshot_bytes
from baton.workspace.git import git_process, read_blobs
from baton.workspace.journal import AcceptJournal
from baton.workspace.scope import link_refusal, refusal
from baton.workspace.snapshot import Snapshot
from baton.workspace.userfile import Landing, inside, land, temp_name


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
class Redone:
    """The user's text of a file when the agent was asked to redo a hunk against it, and
    the lines (0-based, end excluded) of that text the hunk was to be redone over."""

    text: str
    first: int
    end: int

    def meets(self, first: int, end: int) -> bool:
        """Whether lines ``first``..``end`` (end excluded) meet the redone lines."""
        return first <= self.end and self.first <= end

    def shown(self, hunk: Hunk, base: str) -> str | None:
        """The user's lines at ``hunk``'s place the agent was shown, when the hunk is over
        the redone lines; else None."""
        where = place(hunk, base, self.text)
        if where is None or not self.meets(*where):
            return None
        return "".join(split_lines(self.text)[where[0] : where[1]])

    def covers(self, hunk: Hunk, base: str, ours: str) -> bool:
        """Whether accept lets ``hunk`` replace the lines at its place in ``ours``: they
        are still the lines the agent redid it against."""
        seen = self.shown(hunk, base)
        return seen is not None and at_place(hunk, base, ours) == seen


def _disk(root: Path, path: str, disk: dict[str, Content | None]) -> Content | None:
    """The file at ``path`` as first read during this accept (each file is read once)."""
    if path not in disk:
        disk[path] = read_content(root / path)
    return disk[path]


def _user_content(
    root: Path, path: str, current: Mapping[str, str], disk: dict[str, Content | None]
) -> Content | None:
    if path in current:
        return Content(current[path].encode("utf-8", "surrogateescape"))
    return _disk(root, path, disk)


def _landing(
    root: Path, path: str, post: Content | None, hunks: list[str], disk: dict[str, Content | None]
) -> Landing:
    pre = _disk(root, path, disk)
    return Landing(path, pre, post, hunks, temp_name(PurePosixPath(path).name))


def _new_content(snap: Snapshot, f: FileDiff, hunk: Hunk) -> Content | None:
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
        return Content(data, link=link, executable=mode == "100755")
    return Content(hunk.new_text.encode("utf-8", "surrogateescape"), executable=mode == "100755")


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


def _old_content(snap: Snapshot, f: FileDiff, path: str) -> Content | None:
    data = snapshot_bytes(snap, path)
    if data is None:
        return None
    mode = f.extra.get("oldMode")
    if mode is None:  # a FileDiff that went through JSON
        entry = _tree_entry(snap, snap.commit, path)
        mode = entry[0] if entry else None
    return Content(data, link=mode == SYMLINK)


def _plan_text(
    snap: Snapshot,
    f: FileDiff,
    chosen: list[Hunk],
    current: Mapping[str, str],
    disk: dict[str, Content | None],
    result: AcceptResult,
    theirs: Mapping[str, str | None],
    redone: Redone | None,
) -> list[Landing]:
    """Hunk-by-hunk merge of a modified text file."""
    base_bytes = snapshot_bytes(snap, f.path)
    base = None if base_bytes is None else decode_text(base_bytes)
    user = _user_content(snap.root, f.path, current, disk)
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
    taken = dict(theirs)
    if redone is not None:  # the user's lines the agent redid a hunk against
        for h in chosen:
            if h.id not in taken and (seen := redone.shown(h, base)) is not None:
                taken[h.id] = seen
    merged, done, conflicts = merge_hunks(base, ours, chosen, taken)
    result.conflicts += conflicts
    if not done:
        return []
    result.applied += done
    result.texts[f.path] = merged
    post = Content(merged.encode("utf-8", "surrogateescape"))
    landing = _landing(snap.root, f.path, post, done, disk)
    landing.text = True
    if f.path not in current:  # merged into the file on disk: a newer one is merged alike
        landing.remerge = functools.partial(_remerge, base, chosen, taken)
    return [landing]


def _remerge(
    base: str,
    chosen: Sequence[Hunk],
    theirs: Mapping[str, str | None],
    ours: str,
    ids: Sequence[str],
) -> tuple[str, list[str], list[tuple[str, str]]]:
    return merge_hunks(base, ours, [h for h in chosen if h.id in ids], theirs)


def merge_hunks(
    base: str,
    ours: str,
    hunks: Sequence[Hunk],
    theirs: Mapping[str, str | None] | None = None,
) -> tuple[str, list[str], list[tuple[str, str]]]:
    """Bring ``hunks`` (computed against ``base``) into ``ours``, the user's text, one by one.

    Returns the merged text, the ids merged and ``(id, reason)`` for each hunk that
    conflicts with the user's changes (left out).

    ``theirs`` names hunks whose conflict the user settled for the agent ("take theirs"):
    such a hunk replaces the user's lines at its place — with None, whatever they are; with
    a text, only while those lines still are that text (what the agent redid the hunk
    against), so a line the user changed since is still never overwritten.
    """
    taken = theirs or {}
    if ours == base:  # the user has not touched the file: a plain apply
        with contextlib.suppress(ValueError):
            return apply_hunks(base, hunks), [h.id for h in hunks], []
    merged = ours
    done: list[str] = []
    conflicts: list[tuple[str, str]] = []
    for h in sorted(hunks, key=lambda h: (h.old_start, h.old_count)):
        try:
            proposed = apply_hunks(base, [h])
        except ValueError:
            conflicts.append((h.id, "the hunk no longer matches the snapshot"))
            continue
        out, clashes = merge_texts(merged, base, proposed)
        if clashes:
            # Changes on neighbouring lines clash in a three-way merge; the hunk still
            # applies where its own lines stand unchanged (as patch applies at an offset).
            moved = relocate(h, base, merged)
            if moved is None and h.id in taken:
                wanted = taken[h.id]
                if wanted is None or at_place(h, base, merged) == wanted:
                    moved = overwrite(h, base, merged)
            if moved is None:
                span = f"{h.old_start}-{h.old_start + max(h.old_count, 1) - 1}"
                conflicts.append((h.id, f"conflicts with your changes near lines {span}"))
                continue
            out = moved
        merged = out
        done.append(h.id)
    return merged, done, conflicts


def _link_refusal(root: Path, path: str, target: str) -> str | None:
    """Why a symlink the task made must not land: its target leaves the tree or enters
    ``.git``, as written or through a symlinked folder of the user's."""
    why = link_refusal(path, target)
    if why is not None:
        return why
    top = root.resolve()
    try:
        lands = (root / os.path.dirname(path) / target).resolve().relative_to(top)
    except ValueError:
        return f"{path} is a symlink to {target!r}, outside the workspace through a symlink"
    except (OSError, RuntimeError):  # a loop of symlinks
        return f"{path} is a symlink to {target!r}, which does not resolve"
    if any(part.lower() == ".git" for part in lands.parts):
        return f"{path} is a symlink to {target!r}, into a .git folder through a symlink"
    return None


def _plan_whole(
    snap: Snapshot,
    f: FileDiff,
    hunk: Hunk,
    current: Mapping[str, str],
    disk: dict[str, Content | None],
    result: AcceptResult,
) -> list[Landing]:
    """An added, deleted, renamed, binary or type-changed file, taken as one piece."""
    old_path = f.old_path or f.path
    old = None if f.status is FileStatus.ADDED else _old_content(snap, f, old_path)
    new = None if f.status is FileStatus.DELETED else _new_content(snap, f, hunk)
    if f.status is not FileStatus.DELETED and new is None:
        result.conflicts.append((hunk.id, "the task's version of the file is gone"))
        return []
    if new is not None and new.link:
        why = _link_refusal(snap.root, f.path, os.fsdecode(new.data))
        if why is not None:
            result.refused.append((hunk.id, why))
            return []
    user_old = _user_content(snap.root, old_path, current, disk)
    user_new = user_old if old_path == f.path else _user_content(snap.root, f.path, current, disk)
    writes: list[tuple[str, Content | None]] = []
    conflict = None
    if f.status is FileStatus.ADDED:
        if user_new is not None and not (new is not None and same(new, user_new)):
            conflict = f"a different {f.path} was created since the task started"
        elif user_new is None:
            writes.append((f.path, new))
    elif f.status is FileStatus.DELETED:
        if user_old is not None and not (old is not None and same(old, user_old)):
            conflict = f"{f.path} was changed since the task started"
        elif user_old is not None:
            writes.append((f.path, None))
    elif f.status is FileStatus.RENAMED:
        done = user_old is None and new is not None and same(new, user_new)
        if not done:
            if user_old is None or old is None or not same(old, user_old):
                conflict = f"{old_path} was changed or removed since the task started"
            elif user_new is not None and not (new is not None and same(new, user_new)):
                conflict = f"a different {f.path} was created since the task started"
            else:
                writes += [(f.path, new), (old_path, None)]
    else:  # modified binary, symlink or type change
        if new is not None and same(new, user_new):
            pass
        elif user_new is None or old is None or not same(old, user_new):
            conflict = f"{f.path} was changed since the task started"
        else:
            writes.append((f.path, new))
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
    return [_landing(snap.root, path, content, [hunk.id], disk) for path, content in writes]


def _land_all(
    root: Path, landings: list[Landing], result: AcceptResult, book: AcceptJournal | None, g: int
) -> None:
    """Write the files of one change (a rename: two); when one of them cannot take it,
    put back those written and report the change's hunks as conflicts."""
    planned = landings[0].hunks
    ended: list[Landing] = []
    why = None
    try:
        for i, landing in enumerate(landings):
            revise = None if book is None else functools.partial(book.revise, g, i)
            ended.append(land(root, landing, revise=revise))
            crash_point("accept_file")
            if not ended[-1].hunks:
                break
    except OSError as exc:
        why = f"could not write: {exc}"
    kept = set(planned) if why is None and len(ended) == len(landings) else set()
    for out in ended:
        kept &= set(out.hunks)
    if len(landings) > 1 and kept != set(planned):
        kept = set()
        for before, out in zip(landings, ended, strict=False):
            if out.hunks:  # written: put the file back as it was
                with contextlib.suppress(OSError):
                    land(root, Landing(out.path, out.post, before.pre, [], out.temp))
    reasons = dict(d for out in ended for d in out.dropped)
    lost = [h for h in planned if h not in kept]
    if lost:
        result.applied = [h for h in result.applied if h not in lost]
        fallback = why or "the file was changed while it was being accepted"
        result.conflicts += [(h, reasons.get(h, fallback)) for h in lost]
    if not kept:
        for landing in landings:
            result.texts.pop(landing.path, None)
            result.data.pop(landing.path, None)
            result.links.pop(landing.path, None)
    for out in ended if kept else ():
        if out.text and out.post is not None:  # as merged with what was saved meanwhile
            result.texts[out.path] = out.post.data.decode("utf-8", "surrogateescape")


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
    journal: Path | None = None,
    theirs: Mapping[str, str | None] | None = None,
    redone: Mapping[str, Redone] | None = None,
) -> AcceptResult:
    """Apply the chosen hunks (None = every pending one) of ``files`` to the user's files.

    ``current`` maps paths (relative to ``snap.root``) to the text of open editor buffers;
    those take the place of the file on disk. Nothing the user changed is overwritten:
    conflicting hunks are reported and stay pending.

    With ``journal`` (a path in Baton's state folder) the plan is recorded there before any
    file is written (:class:`~baton.workspace.journal.JournalError` when it cannot be: no
    file was touched), and stays: the caller stores the hunk decisions, then calls
    :func:`~baton.workspace.journal.clear_journal`; after a crash,
    :func:`~baton.workspace.journal.recover_accept` finishes it.

    ``theirs`` (hunk id → None or a text) settles conflicts for the agent, see
    :func:`merge_hunks`; ``redone`` maps a path to the user's text an agent was asked to
    redo a hunk against (:class:`Redone`): a hunk over those lines replaces the user's
    lines at its place while they are still as they were then.
    """
    result = AcceptResult()
    buffers = dict(current or {})
    disk: dict[str, Content | None] = {}
    groups: list[list[Landing]] = []
    for f in files:
        chosen = _chosen(f, hunk_ids)
        if not chosen:
            continue
        why = refusal(f.path, scope) or (f.old_path and refusal(f.old_path, scope)) or None
        if why is None and inside(snap.root, f.path) is None:
            why = f"{f.path} leads outside the workspace through a symlink"
        if why is not None:
            result.refused += [(h.id, why) for h in chosen]
            continue
        whole = f.binary or f.status is not FileStatus.MODIFIED or chosen[0].whole_file
        if whole:
            landings = _plan_whole(snap, f, chosen[0], buffers, disk, result)
        else:
            landings = _plan_text(
                snap,
                f,
                chosen,
                buffers,
                disk,
                result,
                theirs or {},
                (redone or {}).get(f.path),
            )
        if landings:
            groups.append(landings)
    if not write or not groups:
        return result
    book = None
    if journal is not None:
        book = AcceptJournal.begin(journal, snap.root, groups)
        crash_point("accept_journal")
    for g, landings in enumerate(groups):
        _land_all(snap.root, landings, result, book, g)
    return result
