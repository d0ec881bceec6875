"""The real sandbox (bubblewrap): an agent that tries each escape of issue 15 fails every time,
and its task still completes its legitimate edit.

The escapes: read the broker's discovery file and reach the broker with its token (case 1),
write the user's ``.git/hooks`` and ``.git/config`` (case 2), write outside the checkout,
write through a symlink pointing out, and leave a background process. Each is tried by a
``command`` worker (a Python program) and by the fake agent (its ``escape`` steps). The same
``command`` worker with ``sandbox = "off"`` gets through each one: the checks can fail.

Needs bubblewrap (``scripts/test`` installs it); skipped, saying why, where it cannot run.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import pytest

from baton.agents.base import Launch
from baton.config.layers import ConfigError
from baton.config.profiles import Profile, default_profiles
from baton.config.settings import load_settings
from baton.core.events import EventType
from baton.core.lifecycle import TaskState
from baton.process import sandbox
from baton.process.sandbox import Status, confine, status
from baton.process.spawn import kill_tree, spawn, wait_exit
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor
from baton.store.paths import task_dir
from baton.surfaces.ws.endpoint import start_endpoint
from tests.conftest import fake_script, git, settle
from tests.conftest import user_config as write_user_config

needs_sandbox = pytest.mark.skipif(
    not status().works, reason=f"no sandbox can run here: {status().why}"
)

#: The escaping worker: each attempt, then the legitimate edit, then one JSON line of results.
ESCAPER = r"""
import glob, json, os, subprocess, sys, time
known_discovery, user_file, outside, marker, home_file = sys.argv[1:6]
user_git = os.path.join(os.path.dirname(user_file), ".git")
results = {}

def attempt(name, action):
    try:
        action()
        results[name] = "OPEN"
    except Exception as exc:
        results[name] = f"blocked: {type(exc).__name__}: {str(exc)[:120]}"

token = {}

def discovery():
    runtime = os.environ.get("XDG_RUNTIME_DIR", "")
    found = glob.glob(os.path.join(runtime, "baton", "broker-*.json")) + [known_discovery]
    for path in found:
        try:
            with open(path) as f:
                token.update(json.load(f))
            return
        except OSError:
            continue
    raise FileNotFoundError(f"no discovery file readable among {found}")

def broker():
    from websockets.sync.client import connect
    if not token:
        raise PermissionError("no token")
    url = f"ws://127.0.0.1:{token['port']}"
    with connect(url, additional_headers={"Authorization": f"Bearer {token['token']}"}) as ws:
        ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tasks", "params": {}}))
        answer = json.loads(ws.recv(timeout=10))
        if "result" not in answer:
            raise PermissionError(str(answer)[:120])

def git_dir():
    # The user's repository: its git dir is named in the brief's paths; the checkout's own
    # repository borrows its objects (objects/info/alternates) and is the agent's to change.
    return user_git

def hooks():
    with open(os.path.join(git_dir(), "hooks", "pre-commit"), "w") as f:
        f.write("#!/bin/sh\necho pwned\n")

def config():
    subprocess.run(["git", "--git-dir", git_dir(), "config", "core.hooksPath", "/tmp/x"],
                   check=True, capture_output=True)

def write_outside():
    with open(outside, "w") as f:
        f.write("escaped\n")

def write_home():
    with open(home_file, "w") as f:
        f.write("escaped\n")

def symlink_out():
    os.symlink(user_file, "link-out")
    try:
        with open("link-out", "a") as f:
            f.write("# through a symlink\n")
    finally:
        os.unlink("link-out")

attempt("discovery", discovery)
attempt("broker", broker)
attempt("git_hooks", hooks)
attempt("git_config", config)
attempt("write_outside", write_outside)
attempt("write_home", write_home)
attempt("symlink_out", symlink_out)
subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", marker],
                 start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
with open("app.py") as f:
    text = f.read()
with open("app.py", "w") as f:
    f.write(text.replace("return 1", "return 10"))
print(json.dumps({"escapes": results}), flush=True)
"""

CLI = "import sys; from baton.cli import main; sys.exit(main())"
ESCAPES = (
    "discovery", "broker", "git_hooks", "git_config", "write_outside", "write_home", "symlink_out",
)  # fmt: skip
#: Escapes to paths under /tmp, where pytest keeps the user's repository and ``outside.txt``:
#: the write lands in the sandbox's private /tmp and the real file never changes (checked).
#: Outside /tmp (``write_home``; a user's real repository) the same write is refused:
#: the file system is read-only there.
ABSORBED = frozenset({"git_hooks", "git_config", "write_outside", "symlink_out"})


def user_config(tmp_path: Path, text: str) -> None:
    write_user_config(tmp_path, text)


def marked(marker: str) -> list[psutil.Process]:
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if marker in (proc.info["cmdline"] or []) and proc.info["status"] != "zombie":
            found.append(proc)
    return found


@dataclass
class Broker:
    sup: Supervisor
    marker: str  # in the command line of the background process the escaper leaves
    home_file: Path  # a file in $HOME (outside /tmp) the escaper tries to write


@pytest.fixture
async def broker(baton_home: Path, repo: Path, tmp_path: Path) -> AsyncIterator[Broker]:
    """A broker with its websocket endpoint (and so its discovery file) and an escaping worker."""
    marker = f"baton-escape-{os.getpid()}-{time.time_ns()}"
    home_file = Path.home() / f".{marker}"
    args = [str(repo / "app.py"), str(tmp_path / "outside.txt"), marker, str(home_file)]
    argv = [sys.executable, "-c", ESCAPER, "DISCOVERY", *args]
    profile = Profile("escaper", "command", options={"argv": argv})
    sup = Supervisor(
        baton_home,
        profiles={**default_profiles(), "escaper": profile},
        limits=Limits(stall_after=30, kill_grace=1.0),
    )
    await sup.start()
    endpoint = await start_endpoint(sup, [str(repo)], headless=True)
    profile.options["argv"][3] = str(endpoint.discovery_path)
    try:
        yield Broker(sup, marker, home_file)
    finally:
        home_file.unlink(missing_ok=True)  # the unsandboxed control writes it
        for proc in marked(marker):
            proc.kill()
        await endpoint.close()
        await sup.close()


async def run_escaper(broker: Broker, repo: Path) -> tuple[str, dict[str, str]]:
    sup = broker.sup
    task = await sup.delegate(
        DelegateRequest(instruction="return 10", root=str(repo), worker="escaper")
    )
    state = await settle(sup, task.id, timeout=60)
    assert state == TaskState.REVIEW, (await sup.get(task.id)).message
    texts = "".join(
        str(e.data.get("text", "")) for e in await sup.events(task.id) if e.type == EventType.TEXT
    )
    line = next(x for x in texts.splitlines() if x.startswith('{"escapes"'))
    return task.id, json.loads(line)["escapes"]


def user_repo_state(repo: Path) -> dict[str, Any]:
    return {
        "config": (repo / ".git" / "config").read_bytes(),
        "hooks": sorted(p.name for p in (repo / ".git" / "hooks").iterdir()),
        "app": (repo / "app.py").read_text(),
    }


@needs_sandbox
async def test_a_command_worker_fails_every_escape_and_still_edits(
    broker: Broker, repo: Path, tmp_path: Path
) -> None:
    before = user_repo_state(repo)
    task_id, escapes = await run_escaper(broker, repo)
    assert set(escapes) == set(ESCAPES)
    opened = {k: v for k, v in escapes.items() if not v.startswith("blocked") and k not in ABSORBED}
    assert not opened, f"escapes that got through: {opened}"
    assert "Read-only file system" in escapes["write_home"]
    assert user_repo_state(repo) == before  # no hook, no config change, no write via the link
    assert not (tmp_path / "outside.txt").exists() and not broker.home_file.exists()
    assert not marked(broker.marker)  # the sandbox took it along
    files, final = await broker.sup.diff(task_id)
    assert final and [f.path for f in files] == ["app.py"]
    assert [h.new_text for h in files[0].hunks] == ["    return 10\n"]
    log = " ".join(str(e.data.get("message", "")) for e in await broker.sup.events(task_id))
    assert "sandboxed (bubblewrap" in log


@needs_sandbox
async def test_the_same_worker_unsandboxed_gets_through_each_time(
    broker: Broker, repo: Path, tmp_path: Path
) -> None:
    """The control: with ``sandbox = "off"`` every escape above works, so the checks can fail."""
    user_config(tmp_path, 'sandbox = "off"\n')
    task_id, escapes = await run_escaper(broker, repo)
    assert escapes == {name: "OPEN" for name in ESCAPES}
    assert (repo / ".git" / "hooks" / "pre-commit").exists()
    assert (tmp_path / "outside.txt").exists() and broker.home_file.exists()
    log = " ".join(str(e.data.get("message", "")) for e in await broker.sup.events(task_id))
    assert 'unsandboxed (sandbox = "off")' in log


@needs_sandbox
async def test_the_fake_agent_fails_every_escape_and_still_edits(
    sup: Supervisor, repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    home_file = Path.home() / f".baton-escape-{time.time_ns()}"
    (repo / "link-out").symlink_to(repo / "notes.txt")  # links out, in the user's own tree
    (repo / "link-home").symlink_to(home_file)
    git(repo, "add", "link-out", "link-home")
    git(repo, "commit", "-q", "-m", "a link")
    before = user_repo_state(repo)
    notes = (repo / "notes.txt").read_text()
    runtime = Path(os.environ["XDG_RUNTIME_DIR"]) / "baton"
    runtime.mkdir(parents=True, exist_ok=True)
    (runtime / "broker-1.json").write_text('{"pid": 1, "port": 1, "token": "secret"}')
    worktrees = baton_home / "worktrees"
    steps = [
        {"escape": str(runtime / "broker-*.json")},
        {"escape": str(repo / ".git" / "hooks" / "pre-commit"), "content": "#!/bin/sh\n"},
        {"escape": str(repo / ".git" / "config"), "content": "[core]\n\thooksPath = /x\n"},
        {"escape": str(tmp_path / "outside.txt"), "content": "escaped\n"},  # absorbed
        {"escape": "link-out", "content": "through the link\n"},  # absorbed
        {"escape": str(home_file), "content": "escaped\n"},
        {"escape": "link-home", "content": "through the link\n"},
        {"escape": str(baton_home / "baton.db")},
        {"escape": str(worktrees / "*" / "app.py")},  # its own checkout: readable
        {"spawn_sleeper": "/tmp/sleeper.pid"},
        {"edit": "app.py", "old": "return 1", "new": "return 10"},
    ]
    task = await sup.delegate(DelegateRequest(instruction=fake_script(*steps), root=str(repo)))
    try:
        assert await settle(sup, task.id, timeout=60) == TaskState.REVIEW
    finally:
        home_file.unlink(missing_ok=True)
    said = "".join(
        str(e.data.get("text", "")) for e in await sup.events(task.id) if e.type == EventType.TEXT
    )
    lines = [x for x in said.splitlines() if x.startswith("escape ")]
    assert len(lines) == 9, said
    # Refused: the discovery file, $HOME directly and through a link, the database. The
    # writes to the user's .git, outside.txt and through link-out are under /tmp here: they
    # land in the private /tmp, refused or not, and the real files stay (checked below).
    refused = [lines[i] for i in (0, 5, 6, 7)]
    assert all("refused" in x for x in refused), "\n".join(lines)
    assert all("Read-only file system" in x for x in refused[1:3]), "\n".join(lines)
    assert "read" in lines[8], lines[8]  # the sandbox does not stop the agent's own work
    assert user_repo_state(repo) == before and (repo / "notes.txt").read_text() == notes
    assert not (tmp_path / "outside.txt").exists() and not home_file.exists()
    files, final = await sup.diff(task.id)
    assert final and [f.path for f in files] == ["app.py"]


@needs_sandbox
async def test_network_none_cuts_the_agent_off(tmp_path: Path) -> None:
    """``network = "none"``: not even the loopback of the machine is reachable."""
    server = await asyncio.start_server(lambda r, w: w.close(), "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    code = (
        "import socket, sys\n"
        "try:\n"
        f"    socket.create_connection(('127.0.0.1', {port}), timeout=5); print('reached')\n"
        "except OSError as exc:\n"
        "    print('cut off:', exc)\n"
    )
    try:
        for network, expected in ((True, "reached"), (False, "cut off")):
            launch = Launch(argv=[sys.executable, "-c", code], cwd=str(tmp_path))
            task_dir = tmp_path / f"task-{network}"
            how = confine(launch, task_dir, dict(os.environ), network=network)
            record = spawn(launch, task_dir, 1, how)
            assert await asyncio.wait_for(wait_exit(record), 20) is not None
            assert record.out_path.read_text().startswith(expected), record.out_path.read_text()
    finally:
        server.close()


@needs_sandbox
async def test_kill_tree_ends_the_sandbox_and_a_grandchild_in_its_own_session(
    tmp_path: Path,
) -> None:
    marker = f"baton-sandboxed-sleeper-{time.time_ns()}"
    code = (
        "import subprocess, sys, time\n"
        f"subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)', {marker!r}],"
        " start_new_session=True)\n"
        "print('up', flush=True)\ntime.sleep(600)\n"
    )
    record = spawn(Launch(argv=[sys.executable, "-c", code], cwd=str(tmp_path)), tmp_path / "t", 1)
    deadline = time.monotonic() + 20
    while not marked(marker) or record.out_path.read_text() != "up\n":
        assert time.monotonic() < deadline, "the sleeper never started"
        await asyncio.sleep(0.05)
    await kill_tree(record.pid, grace=2.0, create_time=record.create_time)
    deadline = time.monotonic() + 10
    while marked(marker):
        assert time.monotonic() < deadline, "the grandchild survived"
        await asyncio.sleep(0.05)


@needs_sandbox
async def test_a_missing_interpreter_inside_the_sandbox_is_exit_127(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    agent = work / "agent"
    agent.write_text("#!/nonexistent/interpreter\n")
    agent.chmod(0o755)
    record = spawn(Launch(argv=[str(agent)], cwd=str(work)), tmp_path / "task", 1)
    ended = await asyncio.wait_for(wait_exit(record), 20)
    assert ended is not None and ended.code == 127
    assert str(agent) in record.err_path.read_text()


@needs_sandbox
async def test_a_program_the_command_line_names_is_readable_under_the_private_tmp(
    tmp_path: Path,
) -> None:
    """``[python, /tmp/…/agent.py]`` (an ACP agent's or a command's argv): the script and the
    folder it imports from are readable, though they sit under the hidden ``/tmp``."""
    tools = tmp_path / "tools"
    tools.mkdir()
    (tools / "helper.py").write_text("WORD = 'hello from the script'\n")
    script = tools / "agent.py"
    script.write_text("import helper\nprint(helper.WORD)\n")
    work = tmp_path / "work"
    work.mkdir()
    launch = Launch(argv=[sys.executable, str(script)], cwd=str(work))
    record = spawn(launch, tmp_path / "task", 1)
    ended = await asyncio.wait_for(wait_exit(record), 20)
    assert ended is not None and ended.code == 0, record.err_path.read_text()
    assert "hello from the script" in record.out_path.read_text()


async def test_require_without_a_sandbox_refuses_to_start_the_agent(
    sup: Supervisor, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sandbox, "status", lambda: Status("bubblewrap", False, False, why="gone"))
    user_config(tmp_path, 'sandbox = "require"\n')
    steps = [{"write": "new.txt", "content": "x\n"}]
    task = await sup.delegate(DelegateRequest(instruction=fake_script(*steps), root=str(repo)))
    assert await settle(sup, task.id) == TaskState.FAILED
    done = await sup.get(task.id)
    assert "no sandbox can run here: gone" in done.message and "not started" in done.message
    assert not any(p.endswith(".out") for p in os.listdir(task_dir(sup.home, task.id)))


async def test_a_project_cannot_turn_the_sandbox_off(sup: Supervisor, repo: Path) -> None:
    (repo / ".baton.toml").write_text('sandbox = "off"\n')
    with pytest.raises(ConfigError, match="only be set in your user config"):
        load_settings(repo)
    (repo / ".baton.toml").write_text(
        '[profiles.wide]\nprovider = "command"\noptions = { sandbox = { write = ["~"] } }\n'
    )
    with pytest.raises(ConfigError, match=r"options\.sandbox may only be set in your user config"):
        load_settings(repo)


def test_doctor_json_reports_the_sandbox(baton_home: Path, tmp_path: Path) -> None:
    for setting in ("auto", "off"):
        user_config(tmp_path, f'sandbox = "{setting}"\n')
        out = subprocess.run(
            [sys.executable, "-c", CLI, "doctor", "--json"],
            capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        found = json.loads(out.stdout)["sandbox"]
        assert found["setting"] == setting and found["kind"] in (
            "bubblewrap",
            "sandbox-exec",
            "none",
        )
        if setting == "off":
            assert found["agents"] == "unsandboxed"
            assert found["advice"].startswith('Remove sandbox = "off"'), found
            text = subprocess.run(
                [sys.executable, "-c", CLI, "doctor"], capture_output=True, text=True, timeout=120
            ).stdout
            assert f"{found['summary']}\n  {found['advice']}." in text, text
        else:
            assert found["agents"] == ("sandboxed" if status().works else "unsandboxed")
