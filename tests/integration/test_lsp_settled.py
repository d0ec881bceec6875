"""The language server's ``baton.handoff`` and ``baton.archive`` commands (what the editors'
task lists call), run through the command table on a real broker and the fake agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException

from baton.runtime import DelegateRequest, Supervisor
from baton.surfaces.lsp import commands
from tests.conftest import fake_script, settle

FAILS = fake_script({"error": {"kind": "worker_error", "message": "boom"}})


class Editor:
    """The part of the language server these commands use."""

    def __init__(self, sup: Supervisor) -> None:
        self.sup = sup
        self.followed: list[str] = []

    async def broker(self) -> Supervisor:
        return self.sup

    def get_feature(self, feature: type) -> Editor:
        return self  # the task progress it follows

    def follow(self, task_id: str, title: str, state: object) -> None:
        self.followed.append(task_id)


async def run(editor: Editor, name: str, arg: dict[str, Any]) -> Any:
    handler, optional = commands.HANDLERS[name]
    return await commands._command(name, handler, optional)(editor, arg)


async def test_handoff_and_archive_from_the_editor(sup: Supervisor, repo: Path) -> None:
    editor = Editor(sup)
    (repo / ".baton.toml").write_text('[profiles.fb]\nprovider = "fake"\n')
    task = await sup.delegate(DelegateRequest(FAILS, root=str(repo)))
    assert await settle(sup, task.id) == "failed"
    with pytest.raises(JsonRpcException, match="unknown worker 'ghost'"):
        await run(editor, "baton.handoff", {"taskId": task.id, "worker": "ghost"})
    res = await run(editor, "baton.handoff", {"taskId": task.id, "worker": "fb"})
    assert res["taskId"] == task.id and res["state"] == "queued" and res["worker"] == "fb"
    assert editor.followed == [task.id]
    # fb plays the brief's script too: it fails again, on fb
    assert await settle(sup, task.id) == "failed"
    attempts = await sup.attempts(task.id)
    assert [(a.reason, a.worker) for a in attempts] == [("first", "fake"), ("handoff", "fb")]

    live = await sup.delegate(DelegateRequest(fake_script({"sleep": 60}), root=str(repo)))
    with pytest.raises(JsonRpcException, match=f"task {live.id} is .*cancel it first"):
        await run(editor, "baton.archive", {"taskIds": [task.id, live.id]})
    listed = await run(editor, "baton.tasks", {})
    assert task.id in [t["id"] for t in listed["tasks"]]
    assert await run(editor, "baton.archive", {"taskId": task.id}) == {"archived": [task.id]}
    listed = await run(editor, "baton.tasks", {})
    assert [t["id"] for t in listed["tasks"]] == [live.id]
    undone = await run(editor, "baton.archive", {"taskIds": [task.id], "undo": True})
    assert undone == {"unarchived": [task.id]}
    listed = await run(editor, "baton.tasks", {})
    assert {t["id"] for t in listed["tasks"]} == {task.id, live.id}
    await sup.cancel(live.id)
