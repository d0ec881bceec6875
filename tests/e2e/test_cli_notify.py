"""Desktop notifications from a real broker and from ``baton watch --notify``, real processes.

The desktop is a stand-in ``notify-send`` first on PATH (the broker the CLI starts inherits
it): a program that appends its argv as a JSON line to a file, so each test checks exactly
what would have been shown. Fake agents do the work.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import fake_script, user_config
from tests.e2e.test_cli import _stop_brokers, as_json, baton

__all__ = ["_stop_brokers"]  # its autouse fixture stops the brokers these tests start

EDIT = {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"}
ON = "[notify]\ndesktop = true\n"
WAIT = 60.0


class Desktop:
    """The stand-in notifier and what it was asked to show."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir()
        self.calls_file = folder / "calls.jsonl"
        self.program = folder / "notify-send"
        self.program.write_text(
            f"#!{sys.executable}\nimport json, sys\n"
            f"with open({str(self.calls_file)!r}, 'a') as f:\n"
            "    f.write(json.dumps(sys.argv) + '\\n')\n"
        )
        self.program.chmod(self.program.stat().st_mode | stat.S_IXUSR)

    @property
    def calls(self) -> list[list[str]]:
        if not self.calls_file.exists():
            return []
        return [json.loads(x) for x in self.calls_file.read_text().splitlines()]

    def wait_for(self, count: int, timeout: float = WAIT) -> list[list[str]]:
        deadline = time.monotonic() + timeout
        while len(self.calls) < count and time.monotonic() < deadline:
            time.sleep(0.1)
        return self.calls

    def argv(self, title: str, body: str) -> list[str]:
        return [str(self.program), "--app-name=Baton", "--", title, body]


@pytest.fixture
def desktop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Desktop:
    found = Desktop(tmp_path / "desktop")
    monkeypatch.setenv("PATH", f"{found.program.parent}{os.pathsep}{os.environ['PATH']}")
    return found


def delegate(repo: Path, instruction: str) -> str:
    proc = baton("delegate", "--json", "--cwd", str(repo), instruction)
    assert proc.returncode == 0, proc.stderr
    return str(as_json(proc)["id"])


def wait_state(task_id: str, done: Callable[[str], bool], timeout: float = WAIT) -> str:
    deadline = time.monotonic() + timeout
    state = ""
    while time.monotonic() < deadline:
        state = as_json(baton("inspect", "--json", task_id))["state"]
        if done(state):
            return state
        time.sleep(0.2)
    raise AssertionError(f"task {task_id} still {state}")


def test_the_broker_notifies_a_question_and_a_review(
    baton_home: Path, tmp_path: Path, repo: Path, desktop: Desktop
) -> None:
    user_config(tmp_path, ON)
    asking = delegate(repo, fake_script({"ask": "Which file should I change?"}))
    (call,) = desktop.wait_for(1)
    assert wait_state(asking, lambda s: s == "needs_input") == "needs_input"
    assert call == desktop.argv(
        "Baton: needs input", "Do the scripted work: Which file should I change?"
    )

    run = baton("run", "--cwd", str(repo), fake_script(EDIT, summary="changed a()"))
    assert run.returncode == 0, run.stderr
    calls = desktop.wait_for(2)
    assert calls[1:] == [desktop.argv("Baton: ready for review", "Do the scripted work")]
    time.sleep(3)  # nothing more comes (the state moves on the way are no notices)
    assert len(desktop.calls) == 2


def test_notifications_are_off_by_default_and_follow_the_config(
    baton_home: Path, tmp_path: Path, repo: Path, desktop: Desktop
) -> None:
    run = baton("run", "--cwd", str(repo), fake_script(EDIT))
    assert run.returncode == 0, run.stderr
    delegate(repo, fake_script({"ask": "Really?"}))
    time.sleep(5)  # well past the batching's wait
    assert desktop.calls == []
    # Turned on in the user's file, the running broker sends the next one (no restart).
    user_config(tmp_path, ON)
    time.sleep(2.5)  # the broker's settings watcher sees the file change
    task_id = delegate(repo, fake_script({"ask": "Now?"}))
    assert desktop.wait_for(1) == [desktop.argv("Baton: needs input", "Do the scripted work: Now?")]
    assert wait_state(task_id, lambda s: s == "needs_input")


def test_a_burst_of_tasks_settling_is_one_summary(
    baton_home: Path, tmp_path: Path, repo: Path, desktop: Desktop
) -> None:
    user_config(tmp_path, ON + '\n[profiles.fake]\nprovider = "fake"\nconcurrency = 20\n')
    nodes = [
        {"key": f"n{i}", "instruction": fake_script({"sleep": 3}, summary=f"done {i}")}
        for i in range(20)
    ]
    graph = tmp_path / "graph.json"
    graph.write_text(json.dumps(nodes))
    proc = baton("graph", "--json", "--cwd", str(repo), str(graph))
    assert proc.returncode == 0, proc.stderr
    ids = [t["id"] for t in as_json(proc)["tasks"].values()]
    assert len(ids) == 20
    for task_id in ids:
        wait_state(task_id, lambda s: s == "answered", timeout=120)
    time.sleep(4)  # the batch's quiet wait and more
    calls = desktop.calls
    assert 1 <= len(calls) <= 2, calls  # 20 tasks: one summary (two if the burst spread out)
    assert all(argv[:3] == desktop.argv("", "")[:3] and len(argv) == 5 for argv in calls)
    counted = 0
    for argv in calls:
        title, body = argv[3], argv[4]
        if title == "Baton: answered":
            counted += 1
        else:
            assert title.startswith("Baton: ") and title.endswith(" tasks"), title
            many = int(title.split()[1])
            assert body.startswith(f"{many} answered. "), body
            counted += many
    assert counted == 20
    assert calls[0][3].endswith(" tasks") and int(calls[0][3].split()[1]) >= 10


def test_a_secret_never_reaches_the_desktop(
    baton_home: Path, tmp_path: Path, repo: Path, desktop: Desktop
) -> None:
    secret = "tok-4f9a8b7c6d5e-secret"
    user_config(
        tmp_path, ON + f'\n[profiles.fake]\nprovider = "fake"\nenv = {{ API_TOKEN = "{secret}" }}\n'
    )
    instruction = (
        f"Deploy with {secret} please"
        + fake_script({"ask": "Ready?"})[len("Do the scripted work") :]
    )
    delegate(repo, instruction)
    (call,) = desktop.wait_for(1)
    assert call == desktop.argv("Baton: needs input", "Deploy with ******** please: Ready?")
    assert secret not in json.dumps(call)


def test_watch_notify_rings_and_sends_what_it_watches(
    baton_home: Path, tmp_path: Path, repo: Path, desktop: Desktop
) -> None:
    """The broker's notifications are off: ``watch --notify`` sends its task's one."""
    task_id = delegate(repo, fake_script({"sleep": 2}, {"ask": "Which one?"}))
    watch = baton("watch", "--notify", task_id, cwd=repo, timeout=WAIT)
    assert watch.returncode == 0, watch.stderr
    assert f"task {task_id} is needs_input" in watch.stdout
    assert "\a" in watch.stderr  # the terminal's bell
    assert desktop.calls == [desktop.argv("Baton: needs input", "Do the scripted work: Which one?")]


def test_watch_notify_leaves_the_desktop_to_the_broker(
    baton_home: Path, tmp_path: Path, repo: Path, desktop: Desktop
) -> None:
    """With the broker's notifications on, ``watch --notify`` only rings: one notice, once."""
    user_config(tmp_path, ON)
    task_id = delegate(repo, fake_script({"sleep": 2}, {"ask": "Which one?"}))
    watch = baton("watch", "--notify", task_id, cwd=repo, timeout=WAIT)
    assert watch.returncode == 0, watch.stderr
    assert "\a" in watch.stderr
    desktop.wait_for(1)
    time.sleep(3)
    assert desktop.calls == [desktop.argv("Baton: needs input", "Do the scripted work: Which one?")]


def test_watch_without_ids_needs_notify(baton_home: Path) -> None:
    proc = baton("watch")
    assert proc.returncode == 2 and "--notify" in proc.stderr, proc.stderr


def test_watch_notify_with_no_ids_follows_every_task(
    baton_home: Path, tmp_path: Path, repo: Path, desktop: Desktop
) -> None:
    first = delegate(repo, fake_script({"ask": "First?"}))  # the broker runs now
    wait_state(first, lambda s: s == "needs_input")
    watch = subprocess.Popen(
        [sys.executable, "-m", "baton.cli", "watch", "--notify"],
        cwd=repo,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        time.sleep(3)  # it is watching
        second = delegate(repo, fake_script(EDIT))
        wait_state(second, lambda s: s == "review")
        deadline = time.monotonic() + WAIT  # its notice is sent before it is told to stop
        while not desktop.calls and time.monotonic() < deadline:
            time.sleep(0.1)
        watch.send_signal(signal.SIGTERM)  # how a session ends it: a clean stop
        out, err = watch.communicate(timeout=WAIT)
    finally:
        if watch.poll() is None:
            watch.kill()
            watch.wait()
    assert watch.returncode == 0, err
    assert f" {second} " in out and "→ review" in out, out
    assert "\a" in err
    # Only what happened while it watched: the first task's question came before.
    assert desktop.calls == [desktop.argv("Baton: ready for review", "Do the scripted work")]
