"""The real sandbox (bubblewrap) and the files of an agent's MCP servers; the warnings of a
launch reaching the task's log at warning level.

An MCP server's script under the private ``/tmp`` is readable inside the sandbox once it is
among the servers the agent's CLI starts — and not without (the check can fail) — while its
siblings stay unreadable, it cannot be written, and the ``.git`` folder of a folder a server
names stays hidden. A log it writes works in a folder the profile's ``options.sandbox.write``
names, and nowhere else of the private ``/tmp``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from baton.agents.base import Launch
from baton.agents.mcp_files import Server, files_of
from baton.agents.registry import ADAPTERS
from baton.core.events import EventType
from baton.process.sandbox import confine, status
from baton.process.spawn import spawn, wait_exit
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor
from tests.conftest import fake_script, settle

needs_sandbox = pytest.mark.skipif(
    not status().works, reason=f"no sandbox can run here: {status().why}"
)

#: Inside the sandbox: what can be read, and written, of the paths given.
PROBE = r"""
import json, os, sys
script, sibling, repo, log = (os.environ[k] for k in ("SCRIPT", "SIBLING", "REPO", "LOG"))
out = {}
def attempt(name, fn):
    try:
        fn()
        out[name] = True
    except OSError:
        out[name] = False
attempt("read_script", lambda: open(script).read())
attempt("read_sibling", lambda: open(sibling).read())
attempt("write_script", lambda: open(script, "a").write("x"))
attempt("read_repo_file", lambda: open(os.path.join(repo, "tool.py")).read())
attempt("read_repo_git", lambda: open(os.path.join(repo, ".git", "config")).read())
attempt("write_log", lambda: open(log, "a").write("started\n"))
print(json.dumps(out))
"""


async def run(tmp_path: Path, launch: Launch, servers: list[Server]) -> dict[str, bool]:
    env = dict(os.environ)
    files = [files_of(s, env, launch.cwd) for s in servers]
    task = tmp_path / "task"
    task.mkdir(exist_ok=True)
    how = confine(launch, task, env, mode="require", mcp=files)
    attempt = len(list(task.glob("attempt-*.out"))) + 1
    record = spawn(launch, task, attempt, how)
    ended = await asyncio.wait_for(wait_exit(record), 30)
    assert ended is not None and ended.code == 0, record.err_path.read_text()
    found: dict[str, bool] = json.loads(record.out_path.read_text().splitlines()[-1])
    return found


@needs_sandbox
async def test_an_mcp_servers_files_under_tmp_are_shown_read_only_and_alone(
    tmp_path: Path,
) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    script, sibling = tools / "server.py", tools / "token.txt"
    script.write_text("print('serving')\n")
    sibling.write_text("secret")
    repo = tmp_path / "data-repo"
    (repo / ".git").mkdir(parents=True)
    (repo / ".git" / "config").write_text("[core]\n")
    (repo / "tool.py").write_text("")
    logs = tmp_path / "logs"
    logs.mkdir()
    log = logs / "server.log"
    work = tmp_path / "work"
    work.mkdir()
    program = tmp_path / "agent" / "probe.py"  # its folder is shown, as an agent's program
    program.parent.mkdir()
    program.write_text(PROBE)
    argv = [sys.executable, str(program)]  # the paths in its environment: not shown for it
    named = {"SCRIPT": str(script), "SIBLING": str(sibling), "REPO": str(repo), "LOG": str(log)}
    launch = Launch(argv=argv, cwd=str(work), env=named)
    server = Server("notes", sys.executable, (str(script), f"--root={repo}"), {"LOG": str(log)})

    without = await run(tmp_path, launch, [])
    assert without["read_script"] is False and without["read_repo_file"] is False

    found = await run(tmp_path, launch, [server])
    assert found["read_script"] is True
    assert found["read_sibling"] is False
    assert found["write_script"] is False
    assert found["read_repo_file"] is True and found["read_repo_git"] is False
    assert found["write_log"] is False  # the private /tmp is not writable for it
    assert script.read_text() == "print('serving')\n"

    writes = Launch(argv=argv, cwd=str(work), env=named, writable=(str(logs),))
    found = await run(tmp_path, writes, [server])  # as options.sandbox.write = [logs] does
    assert found["write_log"] is True and log.read_text() == "started\n"
    assert found["read_sibling"] is False


class WarnedAdapter:
    """The fake agent, whose launch carries a note and a warning (as worker_mcp's do)."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.provider = inner.provider

    def launch(self, turn: Any, profile: Any) -> Launch:
        launch = self.inner.launch(turn, profile)
        notes = ("worker_mcp for Fake: kept none", "warning: MCP server notes will not start")
        return dataclasses.replace(launch, notes=notes)

    def parser(self) -> Any:
        return self.inner.parser()


async def test_launch_warnings_are_logged_at_warning_level(
    sup: Supervisor, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(ADAPTERS, "fake", WarnedAdapter(ADAPTERS["fake"]))
    task = await sup.delegate(DelegateRequest(instruction=fake_script(), root=str(repo)))
    await settle(sup, task.id)
    logged = [
        (e.data.get("level"), str(e.data.get("message")))
        for e in await sup.events(task.id)
        if e.type == EventType.LOG
    ]
    warned = [m for level, m in logged if level == "warning"]
    assert warned == ["native turn 1: warning: MCP server notes will not start"], logged
    how = [m for level, m in logged if m.startswith("native turn 1: worker_mcp for Fake")]
    assert len(how) == 1 and "warning" not in how[0], logged
    assert [lv for lv, m in logged if m == how[0]] == ["info"]
