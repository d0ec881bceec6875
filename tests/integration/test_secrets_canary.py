"""A canary secret in the keyring reaches the agent and nothing else.

The keyring is Baton's opt-in file backend (``[secrets] backend = "file"`` in the user config)
in a folder outside the state folder. A task whose profile env refers to the canary runs end
to end through the CLI and a real broker (websocket); then every byte of the state folder,
the runtime folder (discovery files, the broker's log) and every CLI output is searched.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import keyring
import psutil
import pytest

from baton.config import secrets
from baton.config.secrets import MASK, FileKeyring, SecretRef
from baton.core.events import EventType
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor
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
    user.write_text('[secrets]\nbackend = "file"\n')
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
    (repo / ".baton.toml").write_text(
        'default_worker = "sec"\n' + profile_toml("sec", CHECK, digest)
    )
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
    (repo / ".baton.toml").write_text('default_worker = "echo"\n' + profile_toml("echo", ECHO))
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
    # What Baton cannot unsay: the agent's own stdout file keeps what the agent printed.
    assert files_holding(baton_home / "tasks", CANARY.encode())


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
