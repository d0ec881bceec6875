"""The files of the MCP servers an agent's CLI starts: which servers (``started``), what each
names (``files_of``), and what the sandbox policy shows of them, refuses, or warns about."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest

from baton.agents.base import Launch, Turn
from baton.agents.mcp_files import Server, ServerFiles, files_of, for_profile, started
from baton.config.profiles import Profile
from baton.config.settings import load_settings
from baton.process import sandbox
from baton.process.sandbox import HIDE, READ
from baton.process.spawn import ProcessRecord
from baton.process.transport import started as started_record

# --- which servers ------------------------------------------------------------------------------


def claude(tmp_path: Path, worker_mcp: dict[str, object] | None = None) -> tuple[Profile, str]:
    account = tmp_path / "acct"
    account.mkdir(exist_ok=True)
    servers = {
        "mine": {"type": "stdio", "command": "mine-mcp", "args": ["/etc/hostname"]},
        "web": {"type": "http", "url": "https://h/mcp"},
        "off": {"command": "off-mcp"},
    }
    (account / ".claude.json").write_text(json.dumps({"mcpServers": servers}))
    cwd = tmp_path / "tree"
    cwd.mkdir(exist_ok=True)
    project = {"mcpServers": {"theirs": {"command": "theirs-mcp"}}}
    (cwd / ".mcp.json").write_text(json.dumps(project))
    profile = Profile(
        name="c", provider="claude", config_dir=str(account), worker_mcp=worker_mcp or {}
    )
    return profile, str(cwd)


def test_the_servers_started_are_the_kept_and_the_added(tmp_path: Path) -> None:
    plain, cwd = claude(tmp_path)
    found = {s.name: s for s in started(plain, dict(os.environ), cwd)}
    assert sorted(found) == ["mine", "off", "theirs"]  # no worker_mcp: all stdio ones
    assert found["mine"].own and found["mine"].args == ("/etc/hostname",)
    assert not found["theirs"].own  # from the project's .mcp.json

    add = {"extra": {"command": "x-mcp", "args": [], "env": {"K": "v"}}}
    lean, cwd = claude(tmp_path, {"disable": ["off"], "add": add})
    found = {s.name: s for s in started(lean, dict(os.environ), cwd)}
    assert sorted(found) == ["extra", "mine", "theirs"]
    assert found["extra"].own and found["extra"].env == {"K": "v"}

    theirs, cwd = claude(tmp_path, {"disable": ["*"], "add": add, "added_by_project": True})
    assert [(s.name, s.own) for s in started(theirs, dict(os.environ), cwd)] == [("extra", False)]


def test_opencode_servers_switched_off_are_not_started(tmp_path: Path) -> None:
    config = tmp_path / "oc"
    (config / "opencode").mkdir(parents=True)
    mcp = {
        "on": {"type": "local", "command": ["node", "/srv/on.js"]},
        "down": {"type": "local", "command": ["node"], "enabled": False},
    }
    (config / "opencode" / "opencode.json").write_text(json.dumps({"mcp": mcp}))
    profile = Profile(name="o", provider="opencode")
    env = {**os.environ, "XDG_CONFIG_HOME": str(config)}
    found = started(profile, env, str(tmp_path))
    assert [(s.name, s.command, s.args) for s in found] == [("on", "node", ("/srv/on.js",))]
    assert started(Profile(name="p", provider="pi", worker_mcp={"disable": ["*"]}), env, "/") == []


def test_a_projects_worker_mcp_add_is_marked(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    add = '[profiles.c.worker_mcp.add.x]\ncommand = "x-mcp"\n'
    user.write_text('[profiles.c]\nprovider = "claude"\n' + add)
    mine = load_settings(tmp_path, user_config=user, profiles={}).profiles["c"]
    assert "added_by_project" not in mine.worker_mcp
    user.write_text('[profiles.c]\nprovider = "claude"\n')
    (tmp_path / ".baton.toml").write_text(add)
    theirs = load_settings(tmp_path, user_config=user, profiles={}).profiles["c"]
    assert theirs.worker_mcp["added_by_project"] is True
    assert theirs.worker_mcp["add"]["x"]["command"] == "x-mcp"


# --- what each names ----------------------------------------------------------------------------


def test_files_of_a_server(tmp_path: Path) -> None:
    tools = tmp_path / "tools"
    tools.mkdir()
    script, data = tools / "server.py", tools / "data"
    script.write_text("")
    data.mkdir()
    server = Server(
        "s",
        sys.executable,
        (str(script), f"--data={data}", "relative.txt", "/api/v1", str(tools / "new.log")),
        {"CONFIG": str(tools), "LEVEL": "full"},
    )
    found = files_of(server, dict(os.environ), str(tmp_path))
    assert found.problems == ()
    assert str(script) in found.read and str(data) in found.read and str(tools) in found.read
    assert found.program and all(p in found.read for p in found.program)
    assert found.missing == (str(tools / "new.log"),)  # its folder exists: it may be written
    assert not any("relative" in p or "/api" in p for p in (*found.read, *found.missing))


@pytest.mark.parametrize(
    ("command", "said"),
    [
        ("no-such-mcp-server", "its command no-such-mcp-server is not on the agent's PATH"),
        ("/nowhere/server", "its command /nowhere/server does not exist"),
        ("./bin/server", "does not exist in the task's checkout (where it starts)"),
    ],
)
def test_a_server_that_cannot_start_is_named(tmp_path: Path, command: str, said: str) -> None:
    found = files_of(Server("notes", command), {"PATH": str(tmp_path)}, str(tmp_path))
    assert len(found.problems) == 1
    assert found.problems[0].startswith("warning: MCP server notes will not start: ")
    assert said in found.problems[0]


def test_a_program_in_node_modules_or_a_virtualenv_is_shown_whole(tmp_path: Path) -> None:
    cli = tmp_path / "pkg" / "node_modules" / "srv" / "dist" / "index.js"
    cli.parent.mkdir(parents=True)
    cli.write_text("")
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "pyvenv.cfg").write_text("home = /usr/bin\n")
    python = venv / "bin" / "python"
    python.write_text("")
    python.chmod(0o755)
    found = files_of(Server("s", str(python), ("node", str(cli))), {}, str(tmp_path))
    assert found.read == (str(venv), str(tmp_path / "pkg" / "node_modules"))
    assert found.program == (str(venv),)


# --- what the sandbox shows -------------------------------------------------------------------


def place(tmp_path: Path) -> tuple[Path, Path, Launch]:
    checkout, task = tmp_path / "checkout", tmp_path / "state" / "tasks" / "t1"
    checkout.mkdir()
    task.mkdir(parents=True)
    return checkout, task, Launch(argv=["true"], cwd=str(checkout))


def rules(policy: sandbox.Policy) -> dict[str, str]:
    return {m.path: m.access for m in policy.mounts}


def test_a_named_file_under_tmp_is_shown_alone(tmp_path: Path) -> None:
    """tmp_path lies under the private /tmp: the script is shown, read-only, not its folder."""
    _, task, launch = place(tmp_path)
    tools = tmp_path / "tools"
    tools.mkdir()
    script = tools / "server.py"
    script.write_text("")
    (tools / "secret.txt").write_text("")
    served = files_of(Server("probe", sys.executable, (str(script),)), dict(os.environ), "/")
    policy = sandbox.policy_for(launch, task, {}, mcp=[served])
    shown = rules(policy)
    assert shown[str(script.resolve())] == READ
    assert str(tools.resolve()) not in shown and str(tools / "secret.txt") not in shown
    assert policy.warnings == ()
    argv = sandbox.bwrap_argv(policy)
    at = argv.index(str(script.resolve()))
    assert argv[at - 1] == "--ro-bind"
    assert "/tmp" in shown and shown["/tmp"] == HIDE  # the rest of /tmp stays private


def test_what_is_never_shown_is_named_in_a_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _, task, launch = place(tmp_path)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    key = home / ".ssh" / "id_ed25519"
    key.write_text("")
    repo = tmp_path / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "tool.py").write_text("")
    database = tmp_path / "state" / "baton.db"
    database.write_text("")
    monkeypatch.setenv("BATON_HOME", str(tmp_path / "state"))
    args = (str(key), str(repo / ".git"), str(home), str(database), "/tmp", str(repo))
    served = ServerFiles("sly", read=args, own=True)
    policy = sandbox.policy_for(launch, task, {"HOME": str(home)}, mcp=[served])
    shown = rules(policy)
    for path in (key, repo / ".git", database):
        assert shown.get(str(path.resolve())) != READ, path
    assert shown[str(home.resolve())] == READ  # $HOME is read-only anyway: not as a side effect
    assert shown[str(key.resolve().parent)] == HIDE
    assert shown[str(repo.resolve())] == READ and shown[str(repo.resolve() / ".git")] == HIDE
    said = "\n".join(policy.warnings)
    assert f"sly names {key}, which the sandbox hides on purpose" in said
    assert f"sly names {repo / '.git'}, inside a .git folder, which is never shown" in said
    assert f"sly names {home}, your home folder or one holding it" in said
    assert f"sly names {database}, which the sandbox hides on purpose" in said
    assert "sly names /tmp, the whole temporary folder, which is never shown" in said
    assert all(w.startswith("warning: MCP server sly names ") for w in policy.warnings)
    assert len(policy.warnings) == 5


def test_a_projects_server_is_shown_nothing_and_told(tmp_path: Path) -> None:
    _, task, launch = place(tmp_path)
    script = tmp_path / "theirs.py"
    script.write_text("")
    served = ServerFiles("theirs", read=(str(script), "/usr/bin/env"), own=False)
    policy = sandbox.policy_for(launch, task, {}, mcp=[served])
    assert str(script.resolve()) not in rules(policy)
    assert policy.warnings == (
        f"warning: MCP server theirs comes from the project's own config, so the sandbox does"
        f" not show it {script} (only the servers of your own config and your worker_mcp.add"
        " are shown their files)",
    )


def test_a_file_it_would_write_outside_writable_folders_is_warned_about(tmp_path: Path) -> None:
    checkout, task, launch = place(tmp_path)
    inside, outside = checkout / "probe.log", tmp_path / "logs" / "probe.log"
    served = ServerFiles("probe", missing=(str(inside), str(outside)))
    policy = sandbox.policy_for(launch, task, {}, mcp=[served])
    assert policy.warnings == (
        f"warning: MCP server probe names {outside}, which does not exist and which the"
        " agent's sandbox cannot create (it writes only its checkout, its CLI's state folders"
        " and the profile's options.sandbox.write)",
    )
    logs = dataclasses.replace(launch, writable=(str(tmp_path / "logs"),))
    assert sandbox.policy_for(logs, task, {}, mcp=[served]).warnings == ()


def test_warnings_reach_the_started_attempt_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The task's log gets the warnings at warning level (runtime/attempts.py): apart from
    ``how``, which keeps the other notes and how the agent runs."""
    monkeypatch.setattr(sandbox, "status", lambda: sandbox.Status("none", False, False, why="x"))
    served = ServerFiles("gone", problems=("warning: MCP server gone will not start: …",))
    launch = Launch(argv=["true"], notes=("worker_mcp for Claude Code: kept a", "warning: w"))
    how = sandbox.confine(launch, tmp_path, {}, mcp=[served])
    record = ProcessRecord(1, tmp_path / "o", tmp_path / "e", tmp_path / "x", 0.0, 0.0)
    done = started_record(record, launch, how)
    assert done.how == 'worker_mcp for Claude Code: kept a; UNSANDBOXED: x (sandbox = "auto")'
    assert done.warnings == ("warning: w", "warning: MCP server gone will not start: …")


def test_for_profile_reads_the_clis_config(tmp_path: Path) -> None:
    profile, cwd = claude(tmp_path)
    t = Turn(task_id="t1", prompt="p", cwd=cwd, task_dir=str(tmp_path / "task"))
    found = {f.server: f for f in for_profile(profile, {"PATH": str(tmp_path)}, t.cwd)}
    assert sorted(found) == ["mine", "off", "theirs"]
    assert "not on the agent's PATH" in found["mine"].problems[0]
    assert "/etc/hostname" in found["mine"].read


def test_doctor_names_a_server_that_will_not_start(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from baton.cli.doctor import run_doctor

    profile, cwd = claude(tmp_path, {"add": {"gone": {"command": "/nowhere/mcp", "args": []}}})
    monkeypatch.chdir(cwd)
    empty = tmp_path / "bin"
    empty.mkdir()
    report = run_doctor({"c": profile}, path=str(empty))
    notes = next(p.notes for p in report.profiles if p.name == "c")
    said = "warning: MCP server gone will not start: its command /nowhere/mcp does not exist"
    assert said in notes, notes


def test_a_command_on_path_is_shown_where_it_is_hidden(tmp_path: Path) -> None:
    """``node``, ``npx``, ``uvx`` in /usr/bin are in the read-only rest already (no rule); one
    found on PATH under the private /tmp is shown, by its real path."""
    _, task, launch = place(tmp_path)
    (tmp_path / "bin").mkdir()
    program = tmp_path / "bin" / "notes-mcp"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    env = {"PATH": f"{tmp_path / 'bin'}:/usr/bin:/bin"}
    mine = files_of(Server("notes", "notes-mcp"), env, "/")
    system = files_of(Server("sys", "env"), env, "/")
    assert mine.program == (str(program),) and system.problems == ()
    policy = sandbox.policy_for(launch, task, {}, mcp=[mine, system])
    shown = rules(policy)
    assert shown[str(program.resolve())] == READ
    assert not any(p.startswith("/usr/") for p in shown)
    assert policy.warnings == ()
