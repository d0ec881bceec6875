"""The ``baton.*`` commands that decide hunks: accept (applied as an editor edit where the
file is open), reject, resolve a conflict, the agent's proposed text, and an undo or redo
reported by a client (reopen, reaccept). Registered with the others in
:mod:`baton.surfaces.lsp.commands`, which turns a task or store error into
``RequestFailed``."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from lsprotocol import types

import baton.surfaces.lsp.placement as placement
from baton.core.diff import FileDiff, FileStatus, HunkState, apply_hunks, find_hunk
from baton.core.lifecycle import TaskState
from baton.runtime import TaskError
from baton.surfaces.lsp.documents import path_to_uri, text_edits
from baton.surfaces.lsp.foresee import Foresee
from baton.surfaces.lsp.notify import Notifier
from baton.surfaces.lsp.payloads import Args, failed, invalid, moved
from baton.surfaces.lsp.progress import Progress
from baton.surfaces.lsp.server import BatonServer
from baton.workspace import AcceptResult


@dataclass
class _Outcome:
    applied: list[str] = field(default_factory=list)
    conflicts: list[dict[str, str]] = field(default_factory=list)
    refused: list[dict[str, str]] = field(default_factory=list)
    not_applied: list[dict[str, str]] = field(default_factory=list)

    def add(self, result: AcceptResult) -> None:
        self.applied += result.applied
        self.conflicts += [{"hunkId": h, "reason": r} for h, r in result.conflicts]
        self.refused += [{"hunkId": h, "reason": r} for h, r in result.refused]


def _chosen(files: Sequence[FileDiff], hunk_ids: list[str] | None) -> dict[str, list[str]]:
    """Pending hunk ids to accept, by file path (raises for unknown or decided hunks)."""
    pending = {h.id for f in files for h in f.hunks if h.state == HunkState.PENDING}
    if hunk_ids is None:
        wanted = set(pending)
    else:
        wanted = set()
        for hid in hunk_ids:
            found = find_hunk(files, hid)
            if found is None:
                known = ", ".join(h.id for f in files for h in f.hunks) or "none"
                raise invalid(f"unknown hunk {hid!r}; this task's hunks: {known}")
            wanted.add(found[1].id)
        decided = wanted - pending
        if decided:
            raise failed(TaskError(f"hunks already decided: {', '.join(sorted(decided))}"))
    out: dict[str, list[str]] = {}
    for f in files:
        ids = [h.id for h in f.hunks if h.id in wanted]
        if ids:
            out[f.path] = ids
    return out


def _in_editor(f: FileDiff) -> bool:
    return (
        f.status == FileStatus.MODIFIED and not f.binary and not any(h.whole_file for h in f.hunks)
    )


async def accept(ls: BatonServer, args: Args) -> Any:
    task_id = args.task_id()
    hunk_ids = args.texts("hunkIds")
    allow_secret = args.flag("allowSecret")
    return await _accept(ls, task_id, hunk_ids, allow_secret, args.flag("theirs"))


async def _accept(
    ls: BatonServer, task_id: str, hunk_ids: list[str] | None, allow_secret: bool, theirs: bool
) -> Any:
    """Accept the chosen hunks; with ``theirs``, a conflicting one replaces the user's lines
    at its place (the user chose "take theirs")."""
    sup = await ls.broker()
    task = await sup.get(task_id)
    if task.state != TaskState.REVIEW:
        raise failed(TaskError(f"task {task.id} is {task.state}; accept is for tasks in review"))
    root = placement.snapshot_root(task)
    if root is None:
        raise failed(TaskError(f"task {task.id} has no snapshot"))
    files, _ = await sup.diff(task.id)
    chosen = _chosen(files, hunk_ids)
    by_path = {f.path: f for f in files}
    editor: dict[str, tuple[str, list[str]]] = {}  # path → (uri, hunk ids)
    disk: list[str] = []
    for path, ids in chosen.items():
        uri = _open_uri(ls, root / path)
        if uri is not None and _in_editor(by_path[path]):
            editor[path] = (uri, ids)
        else:
            disk += ids
    out = _Outcome()
    taken = [h for ids in chosen.values() for h in ids] if theirs else []
    if editor:
        await _accept_in_editor(ls, task.id, editor, out, allow_secret, taken)
    if disk:
        out.add(
            await sup.accept(task.id, disk, write=True, allow_secret=allow_secret, theirs=taken)
        )
    ls.get_feature(Notifier).touch(task.id, diff=True)
    _report(ls, task.title or task.id, out)
    state = (await sup.get(task.id)).state
    return {
        "taskId": task.id,
        "state": str(state),
        "applied": out.applied,
        "conflicts": out.conflicts,
        "refused": out.refused,
        "notApplied": out.not_applied,
    }


def _open_uri(ls: BatonServer, path: Path) -> str | None:
    uri = path_to_uri(path)
    return uri if unquote(uri) in ls.workspace.text_documents else None


async def _accept_in_editor(
    ls: BatonServer,
    task_id: str,
    editor: dict[str, tuple[str, list[str]]],
    out: _Outcome,
    allow_secret: bool,
    theirs: list[str],
) -> None:
    """Merge the hunks into the open documents and apply them with ``workspace/applyEdit``.

    The merge runs against the text the editor has; if the document changes meanwhile the
    merge is redone (twice at most), and if the client refuses the edit nothing is recorded.
    """
    sup = await ls.broker()
    ids = [h for _, hs in editor.values() for h in hs]
    for _ in range(3):
        seen: dict[str, tuple[str, str, int | None]] = {}
        for path, (uri, _ids) in editor.items():
            doc = ls.open_document(uri)
            if doc is not None:
                seen[path] = (uri, doc[0], doc[1])
        note: dict[str, str] = {}
        current = {path: text for path, (_, text, _) in seen.items()}
        result = await sup.accept(
            task_id,
            ids,
            current=current,
            write=False,
            applied_by_client=functools.partial(_apply_edit, ls, task_id, seen, note),
            allow_secret=allow_secret,
            theirs=theirs,
        )
        if "moved" in note:
            continue
        out.add(result)
        if "refused" in note:
            conflicted = {c["hunkId"] for c in out.conflicts}
            out.not_applied += [
                {"hunkId": h, "reason": note["refused"]} for h in ids if h not in conflicted
            ]
        return
    out.not_applied += [
        {"hunkId": h, "reason": "the document kept changing; try again"} for h in ids
    ]


async def _apply_edit(
    ls: BatonServer,
    task_id: str,
    seen: dict[str, tuple[str, str, int | None]],
    note: dict[str, str],
    result: AcceptResult,
) -> bool:
    """Send the merged texts as edits of the documents they were merged against.

    False (and nothing recorded) when a document moved since, or the client refused.
    """
    changes: list[tuple[str, int | None, list[types.TextEdit]]] = []
    encoding = ls.encoding
    for path, (uri, text, version) in seen.items():
        now = ls.open_document(uri)
        if now is None or now[1] != version or now[0] != text:
            note["moved"] = path
            return False
        new = result.texts.get(path)
        if new is not None and new != text:
            edits = await asyncio.to_thread(text_edits, text, new, encoding)
            changes.append((uri, version, edits))
    if not changes:
        return True
    for uri, version, _ in changes:  # the document may have moved while the edits were made
        now = ls.open_document(uri)
        if now is None or now[1] != version:
            note["moved"] = uri
            return False
    ws = ls.client_capabilities.workspace
    if ws and ws.workspace_edit and ws.workspace_edit.document_changes:
        edit = types.WorkspaceEdit(
            document_changes=[
                types.TextDocumentEdit(
                    text_document=types.OptionalVersionedTextDocumentIdentifier(
                        uri=uri, version=version
                    ),
                    edits=list(edits),
                )
                for uri, version, edits in changes
            ]
        )
    else:
        edit = types.WorkspaceEdit(changes={uri: edits for uri, _, edits in changes})
    answer = await ls.workspace_apply_edit_async(
        types.ApplyWorkspaceEditParams(edit=edit, label=f"Baton: accept {task_id}")
    )
    if not answer.applied:
        note["refused"] = answer.failure_reason or "the editor did not apply the edit"
        return False
    return True


def _report(ls: BatonServer, title: str, out: _Outcome) -> None:
    if ls.settings.accept_reports == "inline":
        return  # the client says it shows the answer's conflicts itself
    problems = []
    if out.conflicts:
        problems.append(f"{len(out.conflicts)} hunk(s) conflict with your edits and stay pending")
    if out.refused:
        problems.append(f"{len(out.refused)} hunk(s) refused: {out.refused[0]['reason']}")
    if out.not_applied:
        problems.append(
            f"{len(out.not_applied)} hunk(s) not applied: {out.not_applied[0]['reason']}"
        )
    if problems:
        ls.warn(f'"{title}": ' + "; ".join(problems))


#: The ways to settle a hunk that conflicts with the user's edits (``baton.resolve``).
RESOLUTIONS = ("mine", "theirs", "redo")


async def resolve(ls: BatonServer, args: Args) -> Any:
    """Settle a conflicting hunk: ``{taskId, hunkId, choice}`` — ``mine`` keeps the user's
    lines (the hunk is rejected), ``theirs`` puts the agent's lines in their place (an
    accept, applied as an editor edit when the file is open), ``redo`` asks the agent to
    redo the hunk against the user's text (a new turn; the task runs again)."""
    sup = await ls.broker()
    task_id, hunk_id, choice = args.task_id(), args.text("hunkId"), args.text("choice")
    if choice not in RESOLUTIONS:
        raise invalid(f"baton.resolve: choice must be one of {', '.join(RESOLUTIONS)}")
    task = await sup.get(task_id)
    if choice == "mine":
        rejected = await sup.reject(task.id, [hunk_id])
        ls.get_feature(Notifier).touch(task.id, diff=True)
        state = (await sup.get(task.id)).state
        return {"taskId": task.id, "state": str(state), "choice": choice, "rejected": rejected}
    if choice == "theirs":
        out = await _accept(ls, task.id, [hunk_id], False, True)
        return {**out, "choice": choice}
    files, _ = await sup.diff(task.id)
    found = find_hunk(files, hunk_id)
    root = placement.snapshot_root(task)
    current = None
    if found is not None and root is not None:
        uri = _open_uri(ls, root / found[0].path)
        doc = ls.open_document(uri) if uri is not None else None
        current = doc[0] if doc is not None else None
    ls.get_feature(Progress).follow(task.id, task.title, TaskState.RUNNING)
    task = await sup.redo(task.id, hunk_id, current)
    ls.get_feature(Notifier).touch(task.id, diff=True)
    return {**moved(task.id, task.state), "choice": choice}


async def proposed(ls: BatonServer, args: Args) -> Any:
    """The agent's version of one file of a task (every hunk applied to the snapshot's
    text): ``{taskId, path}`` → ``{path, uri, text}``, for a merge view."""
    sup = await ls.broker()
    td = await placement.load(sup, args.task_id())
    path = args.text("path")
    if td is None:
        raise failed(TaskError(f"task {args.task_id()} has no snapshot"))
    for f in td.files:
        if path in (f.path, unquote(td.uri(f)), td.uri(f)):
            base = td.base.get(f.path)
            if base is None:
                raise failed(TaskError(f"{f.path} is not a text change Baton can show"))
            text = apply_hunks(base, f.hunks)
            return {"path": f.path, "uri": td.uri(f), "text": text}
    raise failed(TaskError(f"task {td.task.id} does not change {path}"))


async def reject(ls: BatonServer, args: Args) -> Any:
    sup = await ls.broker()
    task_id = args.task_id()
    hunk_ids = args.texts("hunkIds")
    task = await sup.get(task_id)
    if hunk_ids:
        files, _ = await sup.diff(task.id)
        for hid in hunk_ids:
            if find_hunk(files, hid) is None:
                raise invalid(f"unknown hunk {hid!r} in task {task.id}")
    rejected = await sup.reject(task.id, hunk_ids)
    ls.get_feature(Notifier).touch(task.id, diff=True)
    state = (await sup.get(task.id)).state
    return {"taskId": task.id, "state": str(state), "rejected": rejected}


async def reopen(ls: BatonServer, args: Args) -> Any:
    """Accepted hunks the user undid in the editor are pending again (see runtime.reopen)."""
    return await _redecide(ls, args, "reopened")


async def reaccept(ls: BatonServer, args: Args) -> Any:
    """Hunks the user redid in the editor (their new lines are back) are accepted again."""
    return await _redecide(ls, args, "reaccepted")


async def _redecide(ls: BatonServer, args: Args, word: str) -> Any:
    sup = await ls.broker()
    task = await sup.get(args.task_id())
    hunk_ids = args.texts("hunkIds")
    if not hunk_ids:
        raise invalid(f"baton.{word[:-2]}: hunkIds must name the hunks")
    root = placement.snapshot_root(task)
    if root is None:
        raise failed(TaskError(f"task {task.id} has no snapshot"))
    files, _ = await sup.diff(task.id)
    current: dict[str, str] = {}  # the open documents: what the user has
    for f in files:
        uri = _open_uri(ls, root / f.path)
        doc = ls.open_document(uri) if uri is not None else None
        if doc is not None:
            current[f.path] = doc[0]
    decide = sup.reopen if word == "reopened" else sup.reaccept
    done = await decide(task.id, hunk_ids, current=current)
    # The server may have seen the same undo in the document first: decided once, done here.
    done = ls.get_feature(Foresee).undone.also_done(task.id, word, done)
    if done.decided:
        ls.get_feature(Notifier).touch(task.id, diff=True)
    state = (await sup.get(task.id)).state
    return {
        "taskId": task.id,
        "state": str(state),
        word: done.decided,
        "kept": [{"hunkId": h, "reason": r} for h, r in done.kept],
    }
