"""The external adapter protocol (issue 21): a worker in another language — a small Node
program, ``tests/adapters/echo_adapter.mjs`` — runs as a Baton worker with no Python code,
and ``baton adapter check`` passes it, while a program that does not speak the protocol
(``tests/adapters/broken_adapter.sh``) fails, the cases named."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from tests.e2e.test_cli import as_json, baton, stop_brokers

ADAPTERS = Path(__file__).resolve().parent.parent / "adapters"
NODE = shutil.which("node")
needs_node = pytest.mark.skipif(NODE is None, reason="Node is not installed")


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def cases(doc: dict[str, object]) -> dict[str, tuple[str, str]]:
    listed = doc["cases"]
    assert isinstance(listed, list)
    return {c["case"]: (c["result"], c["why"]) for c in listed}


def sleepers() -> list[int]:
    """The ``sleep 60`` children the Node adapter starts in its long case."""
    found = []
    for proc in psutil.process_iter(["cmdline"]):
        if (proc.info["cmdline"] or [])[:2] == ["sleep", "60"]:
            found.append(proc.pid)
    return found


@needs_node
def test_the_contract_kit_passes_an_adapter_written_in_node(baton_home: Path) -> None:
    before = set(sleepers())
    checked = baton("adapter", "check", "--json", "--", "node", str(ADAPTERS / "echo_adapter.mjs"))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    doc = as_json(checked)
    assert doc["ok"] is True
    assert cases(doc) == {
        name: ("pass", "") for name in ("happy", "question", "resume", "error", "garbage", "cancel")
    }
    assert set(sleepers()) <= before, "cancel left the adapter's child running"
    said = baton("adapter", "check", "--", "node", str(ADAPTERS / "echo_adapter.mjs"))
    assert "6 of 6 cases pass" in said.stdout, said.stdout


def test_the_contract_kit_fails_a_program_that_does_not_speak_it(baton_home: Path) -> None:
    broken = str(ADAPTERS / "broken_adapter.sh")
    checked = baton("adapter", "check", "--json", "--timeout", "20", "--", broken)
    assert checked.returncode == 1, checked.stdout + checked.stderr
    got = cases(as_json(checked))
    for name in ("happy", "question", "error", "garbage"):
        assert got[name] == ("fail", "not JSON: 'hello, I am an agent'"), (name, got[name])
    assert got["resume"] == ("skip", "no session to resume (see happy)")
    # Slow, and deaf to SIGTERM: every case times out, and cancel says it did not stop.
    os.environ["BATON_BROKEN_SLOW"] = "1"
    try:
        slow = baton("adapter", "check", "--json", "--timeout", "2", "--", broken, timeout=120)
    finally:
        del os.environ["BATON_BROKEN_SLOW"]
    got = cases(as_json(slow))
    assert got["happy"] == ("fail", "did not end in time")
    assert got["cancel"] == ("fail", "still running 5 s after SIGTERM")
    usage = baton("adapter", "check")
    assert usage.returncode == 2 and "name the program to check" in usage.stderr


@needs_node
def test_a_node_adapter_is_a_worker_end_to_end(baton_home: Path, repo: Path) -> None:
    argv = json.dumps([NODE, str(ADAPTERS / "echo_adapter.mjs")])
    (repo / ".baton.toml").write_text(
        'default_worker = "node"\n'
        '[profiles.node]\nprovider = "external"\n'
        f"options = {{ argv = {argv} }}\n"
    )
    run = baton("run", "--json", "--cwd", str(repo), "Create hello.txt")
    assert run.returncode == 0, run.stdout + run.stderr
    task = as_json(run)["task"]
    assert task["state"] == "review"
    diff = as_json(baton("diff", "--json", task["id"]))
    assert [f["path"] for f in diff["files"]] == ["hello.txt"]
    assert not (repo / "hello.txt").exists()  # in its checkout only, until accepted
    info = as_json(baton("inspect", "--json", "--detail", "attempts", task["id"]))
    assert info["usage"] | {"cost": None} == {
        "input": 1200, "cached": 200, "output": 34, "cost": None, "cost_source": None,
    }  # fmt: skip
    assert [(a["worker"], a["provider"]) for a in info["detail"]["attempts"]] == [
        ("node", "external")
    ]

    asked = as_json(baton("run", "--json", "--cwd", str(repo), "Please ask me first"))["task"]
    assert asked["state"] == "needs_input" and asked["message"] == "Which file should I change?"
    replied = baton("reply", "--json", asked["id"], "Create notes2.txt")
    assert replied.returncode == 0, replied.stdout + replied.stderr
    assert as_json(replied)["task"]["state"] == "review"
    detail = as_json(baton("inspect", "--json", "--detail", "attempts", asked["id"]))
    sessions = {a.get("session_id") for a in detail["detail"]["attempts"]}
    assert len(sessions) == 1 and None not in sessions, detail["detail"]["attempts"]
