"""Secrets never stored (issue 15, cases 5 and 6), through a real broker and real processes.

The agent (:mod:`tests.support.secret_agent`) prints its keyring secret whole, in pieces over
several text deltas and several writes, folded, to stderr, in a tool result and its answer,
and writes it into a file of its checkout. None of it may reach the database (events, the
task, the ``diffs`` table), the raw output files or the diff; a hunk holding the value is
flagged and accepted only with an explicit override, which takes the real text from git.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import keyring
import pytest

from baton.config import secrets
from baton.config.secrets import MASK, FileKeyring, SecretRef
from baton.core.events import EventType
from baton.core.lifecycle import TaskState
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor
from baton.store.paths import task_dir
from tests.conftest import settle

CANARY = "canary-5e1d0c3b-a11e-4f6a-8d2c-000baton000"
AGENT = Path(__file__).resolve().parents[1] / "support" / "secret_agent.py"


def pieces(value: str, size: int = 10) -> list[str]:
    """Every run of ``size`` characters of ``value``: none may be stored either."""
    return [value[i : i + size] for i in range(len(value) - size + 1)]


def holding(data: bytes | str, value: str = CANARY, size: int = 10) -> list[str]:
    text = data.decode("utf-8", "replace") if isinstance(data, bytes) else data
    return [p for p in pieces(value, size) if p in text]


def launcher(tmp_path: Path) -> Path:
    """An executable that runs the leaking agent (a profile's ``binary``), kept beside it:
    the sandbox shows the launcher's folder, not a script a shell script names (the tests'
    own folder is hidden when the repository is checked out under the temporary folder)."""
    agent = tmp_path / AGENT.name
    shutil.copyfile(AGENT, agent)
    path = tmp_path / "secret-agent"
    path.write_text(f'#!/bin/sh\nexec "{sys.executable}" "{agent}" "$@"\n')
    path.chmod(0o755)
    return path


def project(repo: Path, binary: Path, *, go: Path | None = None, verify: bool = False) -> None:
    """The project names the worker; the profile holding the keyring reference is the user's
    (a project may not hold one: baton.config.trust)."""
    env = 'API_TOKEN = "keyring:baton/canary"'
    if go is not None:
        env += f', AGENT_GO = "{go}"'
    user = Path(os.environ["BATON_CONFIG"])
    user.write_text(
        user.read_text()
        + f'\n[profiles.leaky]\nprovider = "fake"\nbinary = "{binary}"\nenv = {{ {env} }}\n'
    )
    text = 'default_worker = "leaky"\n'
    if verify:
        text += '[[verify]]\nname = "show"\nargv = ["cat", "config.txt"]\n'
    (repo / ".baton.toml").write_text(text)


@pytest.fixture
def canary(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, baton_home: Path) -> Iterator[str]:
    """The canary in Baton's file keyring, outside the state folder."""
    monkeypatch.setenv("BATON_SECRETS_FILE", str(tmp_path / "keyring" / "secrets.json"))
    monkeypatch.setenv("BATON_KEYRING", "file")
    before = keyring.get_keyring()
    secrets.use_backend("file")
    assert isinstance(keyring.get_keyring(), FileKeyring)
    secrets.set_secret(SecretRef("baton", "canary"), CANARY)
    yield CANARY
    keyring.set_keyring(before)


def state_files(home: Path) -> dict[str, bytes]:
    """Every file Baton keeps in its state folder, but the agent's own checkouts."""
    worktrees = home / "worktrees"
    return {
        str(p): p.read_bytes()
        for p in home.rglob("*")
        if p.is_file() and not p.is_symlink() and worktrees not in p.parents
    }


async def wait_file(path: Path, timeout: float = 45.0) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        await asyncio.sleep(0.05)


async def test_split_folded_and_written_secrets_are_stored_masked(
    baton_home: Path, repo: Path, tmp_path: Path, canary: str
) -> None:
    project(repo, launcher(tmp_path), verify=True)
    sup = Supervisor(baton_home, limits=Limits(kill_grace=1.0, draft_debounce=0.05))
    await sup.start()
    try:
        task = await sup.delegate(DelegateRequest("leak it", root=str(repo)))
        assert await settle(sup, task.id, timeout=60) == TaskState.REVIEW
        events = await sup.events(task.id)
        texts = "".join(e.data["text"] for e in events if e.type == EventType.TEXT)
        assert f"whole: {MASK}\n" in texts and f"pieces: {MASK}" in texts
        assert f"cut: {MASK}\n" in texts and "folded:\n" in texts
        assert holding(json.dumps([e.to_json() for e in events])) == []
        check = next(e for e in events if e.type == EventType.VERIFY)
        assert check.data["passed"] and "token=" + MASK in check.data["output"]
        done = await sup.get(task.id)
        assert done.summary == f"finished; the token was {MASK}"
        assert holding(json.dumps(done.to_json())) == []

        # The diff: the hunk holding the value is flagged and masked; no other place has it.
        files, final = await sup.diff(task.id)
        assert final and [f.path for f in files] == ["config.txt"]
        (hunk,) = files[0].hunks
        assert hunk.secret and hunk.new_text == f"token={MASK}\n"

        # Accept refuses it without the override; the user's file does not change.
        refused = await sup.accept(task.id, [hunk.id])
        assert refused.applied == [] and [h for h, _ in refused.refused] == [hunk.id]
        assert "secret" in refused.refused[0][1]
        assert not (repo / "config.txt").exists()
        assert (await sup.get(task.id)).state == TaskState.REVIEW
    finally:
        await sup.close()

    stored = state_files(baton_home)
    assert any(name.endswith("attempt-1.out") for name in stored)
    for name, data in stored.items():
        if name.endswith(".out"):  # a JSON stream spreads pieces over lines: no whole value
            assert CANARY.encode() not in data, name
        else:
            assert holding(data) == [], name
    # The raw output files were written masked: whole, cut across two writes, folded in a
    # JSON string and as plain lines, in the final answer and on stderr.
    folder = task_dir(baton_home, task.id)
    out = (folder / "attempt-1.out").read_text()
    for text in (f"whole: {MASK}\n", f"cut: {MASK}\n", f"folded:\n{MASK}\n"):
        assert json.dumps({"type": "delta", "text": text}) in out, text
    assert f"finished; the token was {MASK}" in out
    folds = [CANARY[i : i + 8] for i in range(0, len(CANARY), 8)]
    assert not set(out.splitlines()) & set(folds)
    err = (folder / "attempt-1.err").read_text()
    assert err == f"stderr: {MASK}\n" + f"{MASK}\n" * len(folds)


async def test_accept_with_the_override_writes_the_real_text_from_git(
    baton_home: Path, repo: Path, tmp_path: Path, canary: str
) -> None:
    project(repo, launcher(tmp_path))
    sup = Supervisor(baton_home, limits=Limits(kill_grace=1.0))
    await sup.start()
    try:
        task = await sup.delegate(DelegateRequest("leak it", root=str(repo)))
        assert await settle(sup, task.id, timeout=60) == TaskState.REVIEW
        files, _ = await sup.diff(task.id)
        (hunk,) = next(f for f in files if f.path == "config.txt").hunks
        assert hunk.secret
        result = await sup.accept(task.id, [hunk.id], allow_secret=True)
        assert result.applied == [hunk.id] and not result.refused
        assert (repo / "config.txt").read_text() == f"token={CANARY}\n"
        files, _ = await sup.diff(task.id)
        (after,) = next(f for f in files if f.path == "config.txt").hunks
        assert after.id == hunk.id and after.new_text == f"token={MASK}\n"  # still masked
    finally:
        await sup.close()
    for name, data in state_files(baton_home).items():
        if not name.endswith(".out"):
            assert holding(data) == [], name


async def test_a_broker_that_adopts_the_attempt_masks_a_secret_begun_before_it(
    baton_home: Path, repo: Path, tmp_path: Path, canary: str, unsandboxed: None
) -> None:
    """Case 5: the values to mask come from the task's profile on the adopting broker too,
    and a secret whose first characters the first broker held back is masked whole."""
    go = tmp_path / "go"
    project(repo, launcher(tmp_path), go=go)
    first = Supervisor(baton_home, limits=Limits(kill_grace=1.0))
    await first.start()
    task = await first.delegate(DelegateRequest("leak it", root=str(repo)))
    await wait_file(Path(str(go) + ".ready"))
    deadline = time.monotonic() + 30
    while not any(
        "next: " in str(e.data.get("text")) for e in await first.events(task.id)
    ):  # the first broker stored the delta whose end it holds back
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
    await first.close()  # the agent goes on; the next broker adopts it

    second = Supervisor(baton_home, limits=Limits(kill_grace=1.0))
    await second.start()
    try:
        go.touch()
        assert await settle(second, task.id, timeout=60) == TaskState.REVIEW
        events = await second.events(task.id)
        texts = "".join(e.data["text"] for e in events if e.type == EventType.TEXT)
        assert f"next: {MASK}\n" in texts and f"after the restart: {MASK}\n" in texts
        assert holding(json.dumps([e.to_json() for e in events])) == []
        assert holding(json.dumps((await second.get(task.id)).to_json())) == []
    finally:
        await second.close()
    for name, data in state_files(baton_home).items():
        if not name.endswith(".out"):
            assert holding(data) == [], name
