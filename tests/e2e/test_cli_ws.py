"""The CLI as a client of the broker: `baton delegate` prints an id at once, `baton watch` in
the background exits 0 when the task settles — with `baton serve` running, and with the
broker started on demand (which then exits once idle)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from baton.surfaces.ws import discovery
from tests.conftest import fake_script
from tests.e2e.test_cli import as_json, baton, stop_brokers

SLOW = fake_script(
    {"say": "working", "chunks": 3, "delay": 0.1},
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
)


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def background(*args: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "baton.cli", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
    )


def brokers(tmp_path: Path) -> list[discovery.Discovery]:
    return discovery.live_brokers(tmp_path / "run" / "baton")


def delegate_then_watch(
    repo: Path, tmp_path: Path
) -> tuple[str, subprocess.CompletedProcess[str], list[discovery.Discovery]]:
    t0 = time.monotonic()
    made = baton("delegate", "--cwd", str(repo), SLOW)
    assert made.returncode == 0, made.stderr
    task_id = made.stdout.strip()
    assert len(task_id) == 11 and time.monotonic() - t0 < 10
    serving = brokers(tmp_path)
    watcher = background("watch", task_id, "--timeout", "30", "--json")
    human = background("watch", task_id[:6], "--timeout", "30")
    out, err = watcher.communicate(timeout=40)
    h_out, h_err = human.communicate(timeout=40)
    assert watcher.returncode == 0, err
    assert human.returncode == 0, h_err
    lines = h_out.strip().splitlines()
    assert any("queued → preparing" in line for line in lines), h_out
    assert any("running → review" in line for line in lines), h_out
    assert lines[-1].startswith(f"task {task_id} is review") and "next: diff, accept" in lines[-1]
    return task_id, subprocess.CompletedProcess(watcher.args, 0, out, err), serving


def test_delegate_then_watch_with_baton_serve(baton_home: Path, repo: Path, tmp_path: Path) -> None:
    server = background("serve", "--root", str(repo), "--json")
    try:
        assert server.stdout is not None
        ready = json.loads(server.stdout.readline())
        assert ready["url"].startswith("ws://127.0.0.1:") and ready["roots"] == [str(repo)]
        task_id, watched, _ = delegate_then_watch(repo, tmp_path)
        doc = json.loads(watched.stdout)
        assert doc["task"]["id"] == task_id and doc["task"]["state"] == "review"
        assert doc["task"]["next"] == ["diff", "accept", "reject", "reply"]
        assert [e["data"]["to"] for e in doc["events"]] == [
            "queued", "preparing", "running", "review"
        ]  # fmt: skip
        # Every command went to that broker: none other was started.
        assert [b.pid for b in brokers(tmp_path)] == [server.pid]
        assert as_json(baton("tasks", "--json", "--state", "review"))[0]["id"] == task_id
    finally:
        server.terminate()
        server.wait(10)
    assert not (tmp_path / "run" / "baton" / f"broker-{server.pid}.json").exists()


def test_delegate_then_watch_with_a_broker_started_on_demand(
    baton_home: Path, repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_IDLE_EXIT", "3")
    assert brokers(tmp_path) == []
    task_id, _, serving = delegate_then_watch(repo, tmp_path)
    (started,) = serving  # started by `baton delegate` for the repository
    assert started.headless and started.roots == [str(repo)]
    # Idle (no client, no running task) for three seconds: it exits and removes its file.
    deadline = time.monotonic() + 10
    while psutil.pid_exists(started.pid) and psutil.Process(started.pid).status() != "zombie":
        assert time.monotonic() < deadline, "the on-demand broker did not exit when idle"
        time.sleep(0.05)
    assert started.pid not in [b.pid for b in brokers(tmp_path)]
    # The next command starts another one and still sees the task.
    info = as_json(baton("inspect", "--json", task_id))
    assert info["state"] == "review" and info["next"][0] == "diff"


def test_watch_exit_codes(baton_home: Path, repo: Path) -> None:
    script = fake_script({"sleep": 60})
    task_id = baton("delegate", "--cwd", str(repo), script).stdout.strip()
    t0 = time.monotonic()
    late = baton("watch", task_id, "--timeout", "0.5")
    assert late.returncode == 1 and "timeout" in late.stderr
    assert time.monotonic() - t0 < 5
    unknown = baton("watch", "nosuchtask", "--timeout", "5")
    assert unknown.returncode == 2 and "no task" in unknown.stderr
    cancel = baton("cancel", "--json", task_id)
    cancelled = as_json(cancel)
    assert "task" in cancelled, cancel.stdout + cancel.stderr
    assert cancelled["task"]["state"] == "cancelled"
    # A settled task: watch exits 0 at once.
    done = baton("watch", "--json", task_id)
    assert done.returncode == 0 and as_json(done)["task"]["state"] == "cancelled"


def test_memory_workers_and_health_from_the_command_line(baton_home: Path, repo: Path) -> None:
    added = as_json(baton("memory", "--json", "--cwd", str(repo), "add", "Tests", "use", "pytest"))
    assert [m["text"] for m in added["memory"]] == ["Tests use pytest"]
    listed = baton("memory", "--cwd", str(repo))
    assert "Tests use pytest" in listed.stdout
    workers = as_json(baton("workers", "--json"))
    assert "fake" in [w["name"] for w in workers["workers"]]
    health = as_json(baton("health", "--json"))
    assert health["ok"] and health["url"].startswith("ws://127.0.0.1:")


def test_watch_reports_a_rate_limit_and_exits_3(baton_home: Path, repo: Path) -> None:
    """A task that hits a rate limit while watched wakes `baton watch` (exit 3: it runs again
    by itself once the limit resets); watching again waits for it to settle."""
    script = fake_script(
        {"sleep": 3},
        {"rate_limit": {"retry_after": 2}},
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    )
    task_id = baton("delegate", "--cwd", str(repo), script).stdout.strip()
    held = baton("watch", task_id, "--timeout", "60")
    assert held.returncode == 3, held.stdout + held.stderr
    lines = held.stdout.strip().splitlines()
    assert any("running → rate_limited  rate limited; retry after 2 s" in x for x in lines)
    assert lines[-1].startswith(f"task {task_id} is rate_limited: rate limited; retry after 2 s")
    assert lines[-1].endswith("next: watch, cancel") and "runs again in " in lines[-1]
    done = baton("watch", "--json", task_id, "--timeout", "60")
    assert done.returncode == 0, done.stdout + done.stderr
    doc = as_json(done)
    assert doc["task"]["state"] == "review"
    moves = [e["data"]["to"] for e in doc["events"]]
    assert moves[:4] == ["queued", "preparing", "running", "rate_limited"]
    assert moves[-1] == "review"
