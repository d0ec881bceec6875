"""``baton lsp`` end to end: delegate → progress → draft and final diff → accept one hunk
through ``workspace/applyEdit`` → reject the other → worktree gone, counts back to zero.

Runs once with Neovim's recorded capabilities and once with VS Code's.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from lsprotocol import types

from baton.surfaces.lsp.documents import apply_text_edits
from tests.conftest import fake_script
from tests.e2e.lsp_support import EDITORS, Session, start, stop, wait_for

APP = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
EDIT_TWO = (
    {"say": "looking at app.py"},
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    {"sleep": 0.3},
    {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
    {"usage": {"input": 120, "output": 30}},
)


@pytest.fixture(params=EDITORS)
async def lsp(
    request: pytest.FixtureRequest, repo: Path, baton_home: Path
) -> AsyncIterator[Session]:
    session = await start(request.param, repo, baton_home)
    yield session
    await stop(session)


def whole(doc_range: types.Range | None = None) -> dict[str, object]:
    return {"start": {"line": 0, "character": 0}, "end": {"line": 5, "character": 0}}


async def test_delegate_review_accept_one_reject_other(lsp: Session) -> None:
    doc = lsp.open("app.py")
    actions = await lsp.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(doc.uri),
            range=types.Range(types.Position(0, 0), types.Position(5, 0)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    assert actions is not None, actions
    titles = [a.title for a in actions if isinstance(a, types.CodeAction)]
    assert "Baton: Delegate selection…" in titles
    delegate = next(a for a in actions if isinstance(a, types.CodeAction) and "Delegate" in a.title)
    assert delegate.command is not None and delegate.command.command == "baton.delegate"
    args = dict(delegate.command.arguments[0])  # type: ignore[index]
    assert args["uri"] == doc.uri and args["kind"] == "delegate" and "instruction" not in args
    args["instruction"] = fake_script(*EDIT_TWO)

    result = await lsp.command("baton.delegate", args)
    task_id = result["taskId"]
    assert result["state"] == "queued"

    assert await lsp.settle(task_id) == "review"
    # The task list (the editors' task view) carries the task's usage: the fake model has
    # no price, so tokens and no cost.
    listed = await lsp.command("baton.tasks", {})
    (mine,) = [t for t in listed["tasks"] if t["id"] == task_id]
    assert mine["usage"] == {
        "input": 120,
        "cached": 0,
        "output": 30,
        "cost": None,
        "cost_source": None,
    }
    # Progress: begin, at least one report, end with the outcome.
    values = await wait_for(
        lambda: (
            (v := lsp.progress_of(task_id)) and isinstance(v[-1], types.WorkDoneProgressEnd) and v
        ),
        what="progress end",
    )
    assert isinstance(values[0], types.WorkDoneProgressBegin) and values[0].cancellable
    assert any(isinstance(v, types.WorkDoneProgressReport) for v in values)
    assert "ready for review" in (values[-1].message or "")
    # baton/diff: a draft while running, then the final one with both hunks.
    diffs = await wait_for(
        lambda: [d for d in lsp.rec.diffs_of(task_id) if d["final"]] and lsp.rec.diffs_of(task_id),
        what="final diff",
    )
    assert not diffs[0]["final"]
    final = next(d for d in diffs if d["final"])
    (f,) = final["files"]
    assert f["uri"] == doc.uri and f["version"] == doc.version
    first, second = f["hunks"]
    assert first["oldText"] == "    return 1\n" and first["newText"] == "    return 10\n"
    assert first["range"] == {
        "start": {"line": 1, "character": 0},
        "end": {"line": 2, "character": 0},
    }
    assert second["range"]["start"]["line"] == 5 and first["state"] == "pending"
    await wait_for(
        lambda: lsp.rec.status and lsp.rec.status[-1]["review"] == 1, what="status review"
    )

    # Code lenses for any client: per hunk, and per file.
    lenses = await lsp.client.text_document_code_lens_async(
        types.CodeLensParams(text_document=types.TextDocumentIdentifier(doc.uri))
    )
    assert lenses is not None
    titles = [(lens.range.start.line, lens.command.title) for lens in lenses if lens.command]
    assert (1, "Accept") in titles and (5, "Reject") in titles
    assert any("Accept all (2)" in t for _, t in titles)

    # Accept the first hunk: the edit goes through the editor, versioned when it can be.
    accepted = await lsp.command("baton.accept", {"taskId": task_id, "hunkIds": [first["id"]]})
    assert accepted["applied"] == [first["id"]] and accepted["state"] == "review"
    (edit,) = lsp.rec.edits
    if lsp.editor.startswith("visual"):
        (change,) = edit.edit.document_changes or []
        assert isinstance(change, types.TextDocumentEdit)
        assert change.text_document.version == 1 and change.text_document.uri == doc.uri
        edits = change.edits
    else:
        edits = (edit.edit.changes or {})[doc.uri]
    assert apply_text_edits(APP, edits) == APP.replace("return 1\n", "return 10\n")  # type: ignore[arg-type]
    assert len(edits) == 1 and edits[0].range.start.line == 1
    # Nothing written on disk: the editor owns the buffer (undoable there).
    assert (lsp.repo / "app.py").read_text() == APP
    await wait_for(lambda: doc.version == 2, what="didChange after applyEdit")

    rejected = await lsp.command("baton.reject", {"taskId": task_id, "hunkIds": [second["id"]]})
    # Every hunk decided, one of them taken: the task is applied and its worktree removed.
    assert rejected["rejected"] == [second["id"]] and rejected["state"] == "applied"
    inspect = await lsp.command("baton.inspect", {"taskId": task_id})
    worktree = inspect["task"]["worktree"]
    assert worktree and not Path(worktree).exists()
    await wait_for(
        lambda: lsp.rec.counts() == {"running": 0, "needsInput": 0, "review": 0, "failed": 0},
        what="counts back to zero",
    )
    assert lsp.rec.lens_refreshes >= 1 or lsp.editor.startswith("neovim")
    await wait_for(lambda: lsp.rec.task_states(task_id)[-1] == "applied", what="applied summary")
    final_diff = await wait_for(
        lambda: (d := lsp.rec.diffs_of(task_id)[-1])["state"] == "applied" and d, what="last diff"
    )
    assert [h["state"] for h in final_diff["files"][0]["hunks"]] == ["accepted", "rejected"]
