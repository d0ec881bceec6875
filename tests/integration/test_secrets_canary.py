"""A canary secret in the keyring reaches the agent and nothing else.

The keyring is Baton's opt-in file backend (``[secrets] backend = "file"`` in the user config)
in a folder outside the state folder. A task whose profile env refers to the canary runs end
to end through the CLI and a real broker (websocket); then every byte of the state folder,
the runtime folder (discovery files, the broker's log) and every CLI output is searched.
The same holds across a broker killed with SIGKILL in the middle of the task, for an agent
that prints the canary whole, in pieces and folded and writes it into a file; the
websocket traffic of a subscriber is searched too.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import keyring
import psutil
import pytest
from websockets.asyncio.client import connect

from baton.config import secrets
from baton.config.secrets import MASK, FileKeyring, SecretRef
from baton.core.events import EventType
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor
from baton.surfaces.ws.client import Client, find_broker
from tests.conftest import settle

CANARY = "canary-7f3a9c1e-d00d-4b1d-9e55-000baton000"

# The agent: checks the token by its hash (the canary itself is never on any command line),
# writes proof.txt, and says nothing about the value.
CHECK = (
    "import hashlib, os, sys, pathlib\n"
    "ok = hashlib.sha256(os.environ.get('API_TOKEN', '').encode()).hexdigest() == sys.argv[1]\n"
    "pathlib.Path('proof.txt').write_text('token ok' if ok else 'token WRONG')\n"
    "print('checked the token')\n"
    "sys.exit(0 if ok else 3)\n"
)
ECHO = "import os\nprint('the token is ' + os.environ['API_TOKEN'])\n"


def own_profile(text: str) -> None:
    """Add a profile to the user config: a keyring reference is the user's to write (a
    project's file may not hold one: baton.config.trust)."""
    user = Path(os.environ["BATON_CONFIG"])
    user.write_text(user.read_text() + "\n" + text)


def profile_toml(name: str, code: str, *args: str) -> str:
    argv = json.dumps([sys.executable, "-c", code, *args])
    return (
        f'[profiles.{name}]\nprovider = "command"\n'
        f'env = {{ API_TOKEN = "keyring:baton/canary" }}\n'
        f"options = {{ argv = {argv} }}\n"
    )


@pytest.fixture
def keyring_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The user config opts in to the file backend, kept outside the state folder."""
    user = tmp_path / "config" / "baton" / "config.toml"
    user.parent.mkdir(parents=True)
    # Unsandboxed: the agent signals the test through files under the temporary folder,
    # which the sandbox makes private (the sandbox has tests of its own).
    user.write_text('sandbox = "off"\n[secrets]\nbackend = "file"\n')
    store = tmp_path / "keyring" / "secrets.json"
    monkeypatch.setenv("BATON_CONFIG", str(user))
    monkeypatch.setenv("BATON_SECRETS_FILE", str(store))
    monkeypatch.setenv("BATON_IDLE_EXIT", "20")  # one broker for all the commands
    monkeypatch.delenv("BATON_KEYRING", raising=False)
    before = keyring.get_keyring()
    yield store
    keyring.set_keyring(before)


def baton(*args: str, stdin: str | None = None, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton.cli", *args],
        input=stdin,
        cwd=cwd,
        env=dict(os.environ),
        capture_output=True,
        text=True,
        timeout=60,
    )


def files_holding(folder: Path, needle: bytes) -> list[str]:
    """Every file under ``folder`` whose bytes contain ``needle``."""
    found = []
    for path in folder.rglob("*"):
        if path.is_file() and not path.is_symlink():
            try:
                if needle in path.read_bytes():
                    found.append(str(path))
            except OSError:
                pass
    return found


def test_canary_reaches_the_agent_and_appears_nowhere_else(
    baton_home: Path, repo: Path, tmp_path: Path, keyring_env: Path
) -> None:
    outputs: list[subprocess.CompletedProcess[str]] = []

    def run(*args: str, stdin: str | None = None, ok: bool = True) -> dict[str, object]:
        out = baton(*args, stdin=stdin, cwd=repo)
        outputs.append(out)
        assert out.returncode == 0 or not ok, f"{args}: {out.stderr}"
        return json.loads(out.stdout) if "--json" in args and out.stdout.strip() else {}

    run("secret", "set", "baton/canary", stdin=CANARY + "\n")
    assert keyring_env.is_file() and (keyring_env.stat().st_mode & 0o777) == 0o600
    digest = hashlib.sha256(CANARY.encode()).hexdigest()
    own_profile(profile_toml("sec", CHECK, digest))
    (repo / ".baton.toml").write_text('default_worker = "sec"\n')
    broker_pid = None
    try:
        done = run("run", "Write proof.txt", "--cwd", str(repo), "--json")
        task = done.get("task", done)
        assert isinstance(task, dict)
        task_id = str(task["id"])
        assert task["state"] == "review", done
        broker_pid = int(run("health", "--json")["pid"])  # type: ignore[call-overload]
        inspected = run("inspect", task_id, "--json", "--detail", "all")
        assert "sec" in json.dumps(inspected)
        run("accept", task_id, "--json")
        run("stats", "--json")
        config = run("config", str(repo), "--json")
        assert "profiles.sec.env.API_TOKEN" in json.dumps(config)
        got = run("secret", "get", "baton/canary", "--json")
        assert got["value"] == MASK and got["set"] is True
    finally:
        if broker_pid is not None:  # stop it, and let it finish writing before the search
            with contextlib.suppress(psutil.Error):
                proc = psutil.Process(broker_pid)
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=15)

    # The agent got the real value (it checked it by hash and wrote proof.txt).
    assert (repo / "proof.txt").read_text() == "token ok"
    needle = CANARY.encode()
    # The search does find the canary where it legitimately is: the keyring file.
    assert files_holding(keyring_env.parent, needle) == [str(keyring_env)]
    assert files_holding(baton_home, needle) == []
    assert files_holding(tmp_path / "run", needle) == []  # discovery files, serve.log
    for out in outputs:
        assert CANARY not in out.stdout and CANARY not in out.stderr, out.args
    assert files_holding(repo, needle) == []


async def test_events_are_redacted_when_an_agent_prints_the_secret(
    baton_home: Path, repo: Path, keyring_env: Path
) -> None:
    secrets.use_backend("file")
    assert isinstance(keyring.get_keyring(), FileKeyring)
    secrets.set_secret(SecretRef("baton", "canary"), CANARY)
    own_profile(profile_toml("echo", ECHO))
    (repo / ".baton.toml").write_text('default_worker = "echo"\n')
    sup = Supervisor(baton_home, limits=Limits(kill_grace=1.0))
    await sup.start()
    try:
        task = await sup.delegate(DelegateRequest("say it", root=str(repo)))
        await settle(sup, task.id)
        events = await sup.events(task.id)
        texts = [e.data.get("text", "") for e in events if e.type == EventType.TEXT]
        assert f"the token is {MASK}\n" in texts
        assert CANARY not in json.dumps([e.to_json() for e in events])
        done = await sup.get(task.id)
        assert CANARY not in json.dumps(done.to_json())
    finally:
        await sup.close()
    db = [p for p in baton_home.iterdir() if p.name.startswith("baton.db")]
    assert db and all(CANARY.encode() not in p.read_bytes() for p in db)
    # The agent's own stdout file is written masked too (by its wrapper).
    assert files_holding(baton_home / "tasks", CANARY.encode()) == []
    outs = list((baton_home / "tasks").rglob("attempt-1.out"))
    assert outs and f"the token is {MASK}\n" in outs[0].read_text()


def test_missing_backend_says_so_and_file_backend_needs_opt_in(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from keyring.backends import fail

    monkeypatch.delenv("BATON_KEYRING", raising=False)
    monkeypatch.delenv("PYTHON_KEYRING_BACKEND", raising=False)
    before = keyring.get_keyring()
    try:
        keyring.set_keyring(fail.Keyring())
        with pytest.raises(secrets.NoKeyring, match="no OS keyring is available") as err:
            secrets.get_secret(SecretRef("baton", "x"))
        assert "BATON_KEYRING=file" in str(err.value)
        # Not viable on its own: keyring never picks the file backend by itself.
        assert not FileKeyring.viable
        monkeypatch.setenv("PYTHON_KEYRING_BACKEND", "baton.config.secrets.FileKeyring")
        assert FileKeyring.viable
    finally:
        keyring.set_keyring(before)


def test_resolve_env_names_the_missing_secret(
    keyring_env: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secrets.use_backend("file")
    with pytest.raises(secrets.SecretError, match="baton secret set baton/nope"):
        secrets.resolve_env({"API_TOKEN": "keyring:baton/nope"}, "w")
    secrets.set_secret(SecretRef("svc", "k"), "value-1234")
    env, found = secrets.resolve_env({"A": "keyring:svc/k", "B": "plain", "MY_KEY": "lit-12345"})
    assert env == {"A": "value-1234", "B": "plain", "MY_KEY": "lit-12345"}
    assert found == ["value-1234", "lit-12345"]
    assert secrets.delete_secret(SecretRef("svc", "k")) is True
    assert secrets.delete_secret(SecretRef("svc", "k")) is False


# -- across a broker killed mid-task ------------------------------------------------------------

AGENT = Path(__file__).resolve().parents[1] / "support" / "secret_agent.py"


def pieces(value: str, size: int = 10) -> list[str]:
    return [value[i : i + size] for i in range(len(value) - size + 1)]


class Recorded:
    """A websocket connection that keeps every frame it sends and receives."""

    def __init__(self, ws: object, frames: list[str]) -> None:
        self.ws = ws
        self.frames = frames

    async def send(self, message: str) -> None:
        self.frames.append(message)
        await self.ws.send(message)  # type: ignore[attr-defined]

    async def close(self) -> None:
        await self.ws.close()  # type: ignore[attr-defined]

    async def _frames(self) -> object:
        async for frame in self.ws:  # type: ignore[attr-defined]
            self.frames.append(frame if isinstance(frame, str) else frame.decode())
            yield frame

    def __aiter__(self) -> object:
        return self._frames()

    def __getattr__(self, name: str) -> object:  # state, close_code, …: the connection's
        return getattr(self.ws, name)


async def subscriber(repo: Path, task_id: str, frames: list[str]) -> Client:
    """A websocket client of the broker serving ``repo`` watching the task, recorded."""
    info = find_broker(repo)
    assert info is not None, "no broker serves the repository"
    ws = await connect(
        info.url,
        additional_headers={"Authorization": f"Bearer {info.token}"},
        max_size=None,
        compression=None,
        ping_interval=None,
    )
    client = Client(Recorded(ws, frames), info)  # type: ignore[arg-type]
    await client.call("watch", ids=[task_id])
    return client


async def until(what: str, condition: object, within: float = 60.0) -> None:
    deadline = time.monotonic() + within
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def test_the_canary_is_in_no_byte_across_a_broker_killed_mid_task(
    baton_home: Path, repo: Path, tmp_path: Path, keyring_env: Path
) -> None:
    outputs: list[subprocess.CompletedProcess[str]] = []

    async def run(*args: str, stdin: str | None = None, ok: bool = True) -> dict[str, object]:
        out = await asyncio.to_thread(baton, *args, stdin=stdin, cwd=repo)
        outputs.append(out)
        assert out.returncode == 0 or not ok, f"{args}: {out.stderr}"
        return json.loads(out.stdout) if "--json" in args and out.stdout.strip() else {}

    await run("secret", "set", "baton/canary", stdin=CANARY + "\n")
    agent = tmp_path / "secret-agent"
    agent.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{AGENT}" "$@"\n')
    agent.chmod(0o755)
    go = tmp_path / "go"
    own_profile(
        '[profiles.leaky]\nprovider = "fake"\n'
        f'binary = "{agent}"\n'
        f'env = {{ API_TOKEN = "keyring:baton/canary", AGENT_GO = "{go}" }}\n'
    )
    (repo / ".baton.toml").write_text('default_worker = "leaky"\n')
    frames: list[str] = []
    brokers: list[int] = []
    try:
        delegated = await run("delegate", "Leak the token", "--cwd", str(repo), "--json")
        task = delegated.get("task", delegated)
        assert isinstance(task, dict)
        task_id = str(task["id"])
        brokers.append(int((await run("health", "--json"))["pid"]))  # type: ignore[call-overload]
        first = await subscriber(repo, task_id, frames)
        await until("the agent's first half", lambda: Path(f"{go}.ready").exists())
        # The first broker has stored the delta that ends with the secret's beginning.
        await until("the delta before the stop", lambda: any("next: " in f for f in frames))
        os.kill(brokers[0], signal.SIGKILL)
        await until(
            "the broker's end",
            lambda: (
                not psutil.pid_exists(brokers[0])
                or (psutil.Process(brokers[0]).status() == psutil.STATUS_ZOMBIE)
            ),
        )
        await first.close()

        listed = await run("tasks", "--json")  # starts the next broker, which adopts the task
        assert task_id in json.dumps(listed)
        brokers.append(int((await run("health", "--json"))["pid"]))  # type: ignore[call-overload]
        assert brokers[1] != brokers[0]
        second = await subscriber(repo, task_id, frames)
        go.touch()
        await run("watch", task_id, "--timeout", "90")
        inspected = await run("inspect", task_id, "--json", "--detail", "all")
        assert json.dumps(inspected).count(MASK) >= 5
        await run("tasks", "--json")
        await run("diff", task_id)
        shown = await run("diff", task_id, "--json")
        (hunk,) = [h for f in shown["files"] for h in f["hunks"]]  # type: ignore[index]
        assert hunk["secret"] is True and hunk["newText"] == f"token={MASK}\n"
        # While the task is in review the canary is in the agent's own checkout, and there only.
        held = files_holding(baton_home, CANARY.encode())
        assert [Path(p).name for p in held] == ["config.txt"] and "worktrees" in held[0]
        refused = await run("accept", task_id, "--json", ok=False)
        assert refused["refused"] and not refused.get("applied"), refused
        assert not (repo / "config.txt").exists()
        accepted = await run("accept", task_id, "--allow-secret", "--json")
        assert accepted["applied"] == [hunk["id"]], accepted
        await second.close()
    finally:
        for pid in brokers[1:]:  # stop it, and let it finish writing before the search
            with contextlib.suppress(psutil.Error):
                proc = psutil.Process(pid)
                proc.send_signal(signal.SIGTERM)
                proc.wait(timeout=15)

    needle = CANARY.encode()
    assert (repo / "config.txt").read_text() == f"token={CANARY}\n"  # accepted, from git
    assert files_holding(keyring_env.parent, needle) == [str(keyring_env)]
    assert files_holding(baton_home, needle) == []  # the database, its WAL, the task folders
    assert files_holding(tmp_path / "run", needle) == []  # discovery files, serve.log
    assert any(MASK in f for f in frames) and len(frames) > 10
    for frame in frames:
        assert not [p for p in pieces(CANARY) if p in frame], frame
    for out in outputs:
        for p in pieces(CANARY):
            assert p not in out.stdout and p not in out.stderr, out.args
    for db in baton_home.glob("baton.db*"):
        text = db.read_bytes().decode("utf-8", "replace")
        assert not [p for p in pieces(CANARY) if p in text], db
