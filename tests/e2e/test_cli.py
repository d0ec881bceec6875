"""The `baton` command as a user runs it: a real subprocess, real git, the real fake agent.

The commands are clients of a broker: the first one starts a headless broker on demand
(detached); each test stops the brokers it started.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from baton.surfaces.ws import discovery
from tests.conftest import fake_script

EDITS = (
    {"say": "editing", "chunks": 2},
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
)


def stop_brokers(run_dir: Path, timeout: float = 10.0) -> list[int]:
    """SIGTERM every broker with a discovery file in ``run_dir``; wait until they are gone."""
    stopped = []
    for rec in discovery.live_brokers(run_dir):
        try:
            psutil.Process(rec.pid).terminate()
            stopped.append(rec.pid)
        except psutil.Error:
            pass
    deadline = time.monotonic() + timeout
    for pid in stopped:
        while psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie":
            if time.monotonic() > deadline:
                psutil.Process(pid).kill()
                break
            time.sleep(0.02)
    return stopped


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def baton(
    *args: str, cwd: Path | None = None, stdin: str | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton.cli", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "COLUMNS": "200"},
    )


def as_json(proc: subprocess.CompletedProcess[str]) -> Any:
    assert proc.stdout.strip(), f"no output; stderr: {proc.stderr}"
    return json.loads(proc.stdout)


def test_run_review_diff_accept_reject(baton_home: Path, repo: Path) -> None:
    run = baton(
        "run",
        "--json",
        "--cwd",
        str(repo),
        "--file",
        "app.py",
        "--lines",
        "1-2",
        fake_script(*EDITS),
    )
    assert run.returncode == 0, run.stderr
    out = as_json(run)
    task_id = out["task"]["id"]
    assert out["task"]["state"] == "review" and "accept" in out["task"]["next"]
    hunks = [h["id"] for f in out["diff"]["files"] for h in f["hunks"]]
    assert len(hunks) == 2

    human = baton("diff", task_id)
    assert human.returncode == 0 and hunks[0] in human.stdout and "+    return 10" in human.stdout

    listed = as_json(baton("tasks", "--json", "--state", "review"))
    assert [t["id"] for t in listed] == [task_id]
    assert as_json(baton("tasks", "--json", "--query", "scripted"))[0]["id"] == task_id
    assert as_json(baton("tasks", "--json", "--query", "nothingmatches")) == []

    acc = baton("accept", "--json", task_id[:6], hunks[0])
    assert acc.returncode == 0, acc.stderr
    assert as_json(acc)["applied"] == [hunks[0]]
    assert "return 10" in (repo / "app.py").read_text()
    rej = baton("reject", "--json", task_id)
    assert as_json(rej)["task"]["state"] == "applied"
    assert "return 2\n" in (repo / "app.py").read_text()

    info = as_json(baton("inspect", "--json", task_id))
    assert info["state"] == "applied" and info["diff"] == "app.py +2 -2, 0 of 2 hunks pending"
    assert "detail" not in info
    more = as_json(baton("inspect", "--json", "--detail", "attempts,events", task_id))
    seqs = [e["seq"] for e in more["detail"]["events"]]
    assert seqs[-1] == more["detail"]["eventCount"] and len(seqs) <= 50
    assert seqs == list(range(seqs[0], seqs[0] + len(seqs)))
    assert {a["reason"] for a in more["detail"]["attempts"]} == {"first"}
    bad = baton("inspect", "--json", "--detail", "everything", task_id)
    assert bad.returncode == 2 and "attempts" in as_json(bad)["error"]
    # --transcript: what the editors show, from the same events
    told = baton("inspect", "--transcript", task_id)
    assert told.returncode == 0 and told.stdout.startswith("# Do the scripted work\n"), told
    assert "- edit `app.py` ✓" in told.stdout and "**applied**" in told.stdout
    lines = as_json(baton("inspect", "--transcript", "--json", task_id))["lines"]
    assert "\n".join(lines) + "\n" == told.stdout


def test_bad_input_exits_2_with_a_clear_message(baton_home: Path, repo: Path) -> None:
    unknown = baton("inspect", "nosuchtask")
    assert unknown.returncode == 2 and "no task" in unknown.stderr
    assert as_json(baton("inspect", "--json", "nosuchtask"))["error"]
    lines = baton("run", "x", "--cwd", str(repo), "--file", "app.py", "--lines", "9-2")
    assert lines.returncode == 2 and "--lines" in lines.stderr
    missing = baton("run", "x", "--cwd", str(repo), "--file", "nope.py")
    assert missing.returncode == 2 and "nope.py" in missing.stderr
    empty = baton("run", "-", "--cwd", str(repo), stdin="   ")
    assert empty.returncode == 2 and "empty" in empty.stderr
    worker = baton("run", "x", "--cwd", str(repo), "--worker", "nobody")
    assert worker.returncode == 2 and "unknown worker" in worker.stderr


def test_detached_task_is_adopted_and_cancelled_by_a_later_command(
    baton_home: Path, repo: Path, tmp_path: Path, unsandboxed: None
) -> None:
    pidfile = tmp_path / "sleeper.pid"
    script = fake_script({"spawn_sleeper": str(pidfile)}, {"hang": True})
    started = baton("run", "--json", "--detach", "--cwd", str(repo), script)
    assert started.returncode == 0, started.stderr
    task_id = as_json(started)["id"]
    deadline = time.monotonic() + 10
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.05)
    sleeper = int(pidfile.read_text())
    # Stop the broker that started it: the agent still runs, and the next command's broker
    # (started on demand) adopts it.
    assert stop_brokers(tmp_path / "run" / "baton")
    assert as_json(baton("tasks", "--json"))[0]["state"] == "running"
    cancelled = baton("cancel", "--json", task_id)
    assert cancelled.returncode == 0, cancelled.stderr
    assert as_json(cancelled)["task"]["state"] == "cancelled"
    deadline = time.monotonic() + 5
    while psutil.pid_exists(sleeper) and psutil.Process(sleeper).status() != "zombie":
        assert time.monotonic() < deadline, "the agent's grandchild survived"
        time.sleep(0.05)


def test_question_reply_from_the_command_line(baton_home: Path, repo: Path) -> None:
    script = fake_script(
        {"ask": "Which number?"},
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 7\n"},
    )
    asked = baton("run", "--json", "--cwd", str(repo), script)
    assert asked.returncode == 0, asked.stderr
    task = as_json(asked)["task"]
    assert task["state"] == "needs_input" and task["message"] == "Which number?"
    replied = baton("reply", "--json", task["id"], "seven")
    assert replied.returncode == 0, replied.stderr
    assert as_json(replied)["task"]["state"] == "review"


def test_demo_runs_end_to_end_in_under_10_seconds(baton_home: Path) -> None:
    start = time.monotonic()
    demo = baton("demo")
    took = time.monotonic() - start
    assert demo.returncode == 0, demo.stdout + demo.stderr
    assert "applied" in demo.stdout and "accepting" in demo.stdout and "rejected" in demo.stdout
    assert took < 10, f"demo took {took:.1f} s"


def test_demo_json_prints_one_document(baton_home: Path) -> None:
    demo = baton("demo", "--json")
    assert demo.returncode == 0, demo.stdout + demo.stderr
    out = as_json(demo)  # json.loads: exactly one document, nothing around it
    assert out["task"]["state"] == "applied" and out["applied"] and out["rejected"]
