"""``baton lsp`` end to end, beyond the main flow: cancel from the progress, a question
answered, unsaved text reaching the worker, the user editing while the task runs, the
diagnostics in a fix brief, plain-client instruction prompts, settings, accept on disk.

Each test runs with Neovim's and with VS Code's recorded capabilities.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from baton.surfaces.lsp.actions import SUGGESTIONS
from tests.conftest import fake_script
from tests.e2e.lsp_support import EDITORS, Session, start, stop, wait_for

APP = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"


@pytest.fixture(params=EDITORS)
async def lsp(
    request: pytest.FixtureRequest, repo: Path, baton_home: Path
) -> AsyncIterator[Session]:
    session = await start(request.param, repo, baton_home, options={"progressInterval": 0.05})
    yield session
    await stop(session)


def rng(a: int, b: int) -> dict[str, Any]:
    return {"start": {"line": a, "character": 0}, "end": {"line": b, "character": 0}}


async def delegate(lsp: Session, *steps: dict[str, Any], **extra: Any) -> str:
    args = {"uri": lsp.uri("app.py"), "range": rng(0, 2), "kind": "delegate"}
    args.update(extra)
    if steps:
        args["instruction"] = fake_script(*steps, summary=extra.pop("summary", None))
    result = await lsp.command("baton.delegate", args)
    return str(result["taskId"])


def ended(lsp: Session, task_id: str) -> list[Any]:
    return [v for v in lsp.progress_of(task_id) if isinstance(v, types.WorkDoneProgressEnd)]


async def test_cancel_from_the_progress_cancels_the_task(lsp: Session) -> None:
    task_id = await delegate(lsp, {"say": "starting"}, {"hang": True})
    await lsp.settle(task_id, "running")
    token = await wait_for(
        lambda: next((t for t in lsp.client.progress_reports if task_id in str(t)), None),
        what="progress token",
    )
    await wait_for(
        lambda: any(
            isinstance(v, types.WorkDoneProgressReport) and v.message == "starting"
            for v in lsp.client.progress_reports[token]
        ),
        what="the agent's first words",
    )
    lsp.client.window_work_done_progress_cancel(types.WorkDoneProgressCancelParams(token=token))
    assert await lsp.settle(task_id, "cancelled") == "cancelled"
    (end,) = await wait_for(lambda: ended(lsp, task_id), what="progress end")
    assert end.message == "cancelled"


async def test_question_then_reply_then_review(lsp: Session) -> None:
    task_id = await delegate(
        lsp,
        {"ask": "Which value should a() return?"},
        {"edit": "app.py", "old": "return 1", "new": "return 42"},
    )
    assert await lsp.settle(task_id) == "needs_input"
    (end,) = await wait_for(lambda: ended(lsp, task_id), what="first run ends")
    assert end.message == "needs input: Which value should a() return?"
    await wait_for(lambda: lsp.rec.status and lsp.rec.status[-1]["needsInput"] == 1, what="count")
    with pytest.raises(JsonRpcException, match="steer is for running tasks; use reply"):
        await lsp.command("baton.steer", {"taskId": task_id, "text": "go"})
    moved = await lsp.command("baton.reply", {"taskId": task_id, "text": "42"})
    assert moved["state"] == "running"
    assert await lsp.settle(task_id) == "review"
    ends = await wait_for(lambda: len(ended(lsp, task_id)) == 2 and ended(lsp, task_id))
    assert ends[1].message.startswith("ready for review: 1 file")
    diff = await lsp.command("baton.diff", {"taskId": task_id})
    assert diff["final"] and diff["files"][0]["hunks"][0]["newText"] == "    return 42\n"
    await lsp.command("baton.reject", {"taskId": task_id})
    assert await lsp.state(task_id) == "rejected"


async def test_explain_sees_the_unsaved_buffer_and_shows_the_answer(lsp: Session) -> None:
    doc = lsp.open("app.py")
    lsp.change(doc, APP.replace("return 1", "return 'unsaved text'"))
    result = await lsp.command(
        "baton.delegate",
        {
            "uri": doc.uri,
            "range": rng(0, 2),
            "kind": "explain",
            "instruction": fake_script({"read": "app.py"}, summary="a() returns a string"),
        },
    )
    task_id = result["taskId"]
    assert await lsp.settle(task_id) == "answered"
    shown = await wait_for(lambda: lsp.client.shown_documents, what="answer shown")
    assert shown[0].take_focus is False and shown[0].uri.endswith("/answer.md")
    answer = Path(shown[0].uri.removeprefix("file://")).read_text()
    assert "a() returns a string" in answer
    inspect = await lsp.command("baton.inspect", {"taskId": task_id})
    outputs = [e["data"].get("output", "") for e in inspect["events"] if e["type"] == "tool_result"]
    assert any("return 'unsaved text'" in o for o in outputs)
    assert inspect["task"]["action"] == "explain"
    # The file on disk was never touched.
    assert (lsp.repo / "app.py").read_text() == APP


async def test_user_edits_while_a_task_runs_accept_merges_or_reports_a_conflict(
    lsp: Session,
) -> None:
    doc = lsp.open("app.py")
    task_id = await delegate(
        lsp, {"sleep": 0.3}, {"edit": "app.py", "old": "return 2", "new": "return 20"}
    )
    await lsp.settle(task_id, "running")
    lsp.change(doc, "# a comment on top\n" + APP.replace("return 1", "return 100"))
    assert await lsp.settle(task_id) == "review"
    diff = await lsp.command("baton.diff", {"taskId": task_id})
    (hunk,) = diff["files"][0]["hunks"]
    # Placed where the line is now (one line lower), against the version it saw.
    assert hunk["range"]["start"]["line"] == 6 and not hunk["stale"]
    assert diff["files"][0]["version"] == doc.version
    result = await lsp.command("baton.accept", {"taskId": task_id})
    assert result["applied"] == [hunk["id"]] and result["state"] == "applied"
    await wait_for(lambda: doc.version == 3, what="edit applied")
    assert doc.text == "# a comment on top\n" + APP.replace("return 1", "return 100").replace(
        "return 2", "return 20"
    )
    assert (lsp.repo / "app.py").read_text() == APP

    # Now the user rewrites the very lines a second task changed.
    notes = lsp.open("notes.txt")
    task_id = await delegate(lsp, {"edit": "notes.txt", "old": "three", "new": "THREE"})
    assert await lsp.settle(task_id) == "review"
    mine = notes.text.replace("three", "3, mine")
    lsp.change(notes, mine)
    diff = await lsp.command("baton.diff", {"taskId": task_id})
    assert diff["files"][0]["hunks"][0]["stale"]
    result = await lsp.command("baton.accept", {"taskId": task_id})
    assert result["applied"] == [] and len(result["conflicts"]) == 1
    assert result["state"] == "review"
    assert len(lsp.rec.edits) == 1 and notes.text == mine
    warning = await wait_for(
        lambda: next((m for m in lsp.client.messages if "conflict" in m.message), None),
        what="warning",
    )
    assert warning.message.startswith('Baton: "Do the scripted work": 1 hunk(s) conflict')
    assert task_id not in warning.message, "the warning names the task by its title"
    # The hunk is still there to decide.
    rejected = await lsp.command("baton.reject", {"taskId": task_id})
    assert rejected["state"] == "rejected"


async def test_refused_edits_record_nothing_and_closed_files_go_to_disk(lsp: Session) -> None:
    doc = lsp.open("app.py")
    task_id = await delegate(
        lsp,
        {"edit": "app.py", "old": "return 1", "new": "return 10"},
        {"write": "new_module.py", "content": "X = 1\n"},
    )
    assert await lsp.settle(task_id) == "review"
    diff = await lsp.command("baton.diff", {"taskId": task_id})
    app_hunk, new_hunk = (f["hunks"][0]["id"] for f in diff["files"])
    lsp.rec.apply_edits = False
    result = await lsp.command("baton.accept", {"taskId": task_id})
    # The open file went to the editor, which said no: nothing recorded for it.
    assert [n["hunkId"] for n in result["notApplied"]] == [app_hunk]
    assert result["notApplied"][0]["reason"] == "user said no"
    # The closed file was written on disk.
    assert result["applied"] == [new_hunk] and result["state"] == "review"
    assert (lsp.repo / "new_module.py").read_text() == "X = 1\n"
    assert len(lsp.rec.edits) == 1 and doc.text == APP
    diff = await lsp.command("baton.diff", {"taskId": task_id})
    assert [h["state"] for f in diff["files"] for h in f["hunks"]] == ["pending", "accepted"]
    lsp.rec.apply_edits = True
    result = await lsp.command("baton.accept", {"taskId": task_id})
    assert result["applied"] == [app_hunk] and result["state"] == "applied"
    await wait_for(lambda: "return 10" in doc.text, what="edit applied")
    assert (lsp.repo / "app.py").read_text() == APP  # the editor owns the buffer


async def test_settings_and_fix_these_diagnostics_reach_the_brief(lsp: Session) -> None:
    (lsp.repo / ".baton.toml").write_text('brief_rules = ["Keep the public API."]\n')
    lsp.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(
            settings={"baton": {"briefRules": ["Never touch notes.txt"], "worker": "nope"}}
        )
    )
    with pytest.raises(JsonRpcException, match="unknown worker 'nope'"):
        await delegate(lsp, {"say": "hi"})
    lsp.client.workspace_did_change_configuration(
        types.DidChangeConfigurationParams(settings={"baton": {"worker": None, "isolation": 3}})
    )
    await wait_for(lambda: any("isolation" in m.message for m in lsp.client.messages))
    doc = lsp.open("app.py")
    diagnostic = types.Diagnostic(
        range=types.Range(types.Position(1, 4), types.Position(1, 12)),
        message="Returning a magic number",
        severity=types.DiagnosticSeverity.Warning,
        code="PLR2004",
        source="ruff",
    )
    actions = await lsp.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(doc.uri),
            range=types.Range(types.Position(1, 0), types.Position(1, 12)),
            context=types.CodeActionContext(diagnostics=[diagnostic]),
        )
    )
    assert actions is not None
    fix = next(a for a in actions if isinstance(a, types.CodeAction) and a.kind == "quickfix.baton")
    assert fix.title == "Baton: Fix this diagnostic" and fix.command is not None
    (args,) = fix.command.arguments or []
    result = await lsp.command("baton.delegate", args)
    task_id = result["taskId"]
    await lsp.settle(task_id)
    inspect = await lsp.command("baton.inspect", {"taskId": task_id, "events": 0})
    brief = inspect["task"]["brief"]
    assert "Fix the diagnostics listed below" in brief
    assert "- line 2 warning ruff [PLR2004]: Returning a magic number" in brief
    assert "- Never touch notes.txt" in brief
    # The project's rules and the editor's share one section (issue 14, case 8).
    assert brief.count("Rules:") == 1 and "- Keep the public API." in brief
    assert inspect["task"]["action"] == "fix"
    listed = await lsp.command("baton.tasks", {"states": ["answered"]})
    assert [t["id"] for t in listed["tasks"]] == [task_id]


async def test_plain_client_is_offered_ready_made_instructions(lsp: Session) -> None:
    lsp.rec.pick = 1
    args = {"uri": lsp.uri("app.py"), "range": rng(0, 2), "kind": "delegate"}
    result = await lsp.command("baton.delegate", args)
    (question,) = lsp.rec.questions
    assert "app.py:1-2" in question.message
    assert [a.title for a in question.actions or []] == list(SUGGESTIONS)
    inspect = await lsp.command("baton.inspect", {"taskId": result["taskId"], "events": 0})
    assert inspect["task"]["instruction"] == SUGGESTIONS[1]
    await lsp.settle(result["taskId"])
    lsp.rec.pick = None
    assert await lsp.command("baton.delegate", args) == {"taskId": None, "cancelled": True}


async def test_draft_diff_follows_silent_changes_in_the_worktree(lsp: Session) -> None:
    task_id = await delegate(lsp, {"say": "thinking"}, {"sleep": 3})
    await lsp.settle(task_id, "running")
    inspect = await lsp.command("baton.inspect", {"taskId": task_id, "events": 0})
    worktree = Path(inspect["task"]["worktree"])
    # A shell command of the agent's, say: no tool event names the file.
    await wait_for(lambda: (worktree / "app.py").exists(), what="worktree")
    await asyncio.sleep(0.5)  # the watcher starts with the run
    (worktree / "app.py").write_text(APP.replace("return 2", "return 'silent'"))
    draft = await wait_for(
        lambda: next((d for d in lsp.rec.diffs_of(task_id) if not d["final"] and d["files"]), None),
        what="draft diff",
    )
    assert draft["files"][0]["hunks"][0]["newText"] == "    return 'silent'\n"
    await lsp.command("baton.cancel", {"taskId": task_id})
    assert await lsp.settle(task_id, "cancelled") == "cancelled"


async def test_hunks_can_be_decided_through_code_actions(lsp: Session) -> None:
    """For clients without code lenses (Helix, eglot): Accept / Reject as code actions."""
    doc = lsp.open("app.py")
    task_id = await delegate(
        lsp,
        {"edit": "app.py", "old": "return 1", "new": "return 10"},
        {"edit": "app.py", "old": "return 2", "new": "return 20"},
    )
    assert await lsp.settle(task_id) == "review"
    await wait_for(lambda: any(d["final"] for d in lsp.rec.diffs_of(task_id)), what="review")
    actions = await lsp.client.text_document_code_action_async(
        types.CodeActionParams(
            text_document=types.TextDocumentIdentifier(doc.uri),
            range=types.Range(types.Position(1, 4), types.Position(1, 4)),
            context=types.CodeActionContext(diagnostics=[]),
        )
    )
    review = [
        a
        for a in actions or []
        if isinstance(a, types.CodeAction) and a.kind == "refactor.baton.review"
    ]
    titles = [a.title.split(" (")[0] for a in review]
    assert titles == [
        "Baton: Accept this change",
        "Baton: Reject this change",
        "Baton: Accept all 2 changes in this file",
        "Baton: Reject all 2 changes in this file",
    ]
    accept = review[0].command
    assert accept is not None and accept.command == "baton.accept"
    result = await lsp.command(accept.command, *(accept.arguments or []))
    assert len(result["applied"]) == 1 and result["state"] == "review"
    await wait_for(lambda: "return 10" in doc.text, what="edit applied")
    assert "return 2\n" in doc.text
