"""The body of a remote attempt (:class:`baton.process.ray_node.AttemptRun`) without Ray:
the checkout from a bundle, the agent run as locally, its lines numbered and streamed again
from any number, its result as a bundle the broker's checkout takes, and its stop."""

from __future__ import annotations

import dataclasses
import threading
import time
from pathlib import Path
from typing import Any

import psutil
import pytest

from baton.agents.base import Turn
from baton.config.profiles import Profile
from baton.process.ray_node import AttemptRun
from baton.process.ray_relay import bundle_files, take_result
from tests.conftest import fake_script, git


def spec_for(prompt: str, task_id: str = "t1") -> dict[str, Any]:
    turn = dataclasses.asdict(Turn(task_id=task_id, prompt=prompt, cwd="", sandbox="off"))
    turn.pop("cwd")
    turn.pop("task_dir")
    turn["subdir"] = ""
    profile = dataclasses.asdict(Profile(name="fake", provider="fake"))
    return {"task_id": task_id, "attempt": 1, "namespace": "ns", "turn": turn, "profile": profile}


@pytest.fixture
def checkout(repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A checkout of ``repo`` standing in for the broker's, with an uncommitted change."""
    monkeypatch.setenv("BATON_NODE_HOME", str(tmp_path / "node"))
    here = tmp_path / "checkout"
    git(tmp_path, "clone", "-q", str(repo), str(here))
    (here / "notes.txt").write_text("one\ntwo (unsaved here)\n")
    return here


def test_lines_are_numbered_streamed_again_from_any_number_and_the_result_comes_back(
    checkout: Path, tmp_path: Path
) -> None:
    steps = [{"say": f"line {i}", "chunks": 1} for i in range(8)]
    steps.append({"edit": "notes.txt", "old": "two (unsaved here)\n", "new": "TWO\n"})
    steps += [{"write": "new.txt", "content": "made on the node\n"}, {"delete": "app.py"}]
    bundle = bundle_files(checkout, tmp_path / "base.bundle")
    run = AttemptRun(spec_for(fake_script(*steps)), bundle)
    items = [i for i in run.run(0) if "beat" not in i]
    lines, end = items[:-1], items[-1]
    assert [i["seq"] for i in lines] == list(range(len(lines)))
    assert end["end"] and end["exit"] == 0 and end["bundle"] and not end["failure"]
    again = [i for i in run.run(3) if "beat" not in i]
    assert [i["seq"] for i in again[:-1]] == list(range(3, len(lines)))
    assert [i["line"] for i in again[:-1]] == [i["line"] for i in lines[3:]]
    take_result(checkout, end["bundle"], tmp_path / "result.bundle")
    assert (checkout / "notes.txt").read_text() == "one\nTWO\n"  # the unsaved line travelled
    assert (checkout / "new.txt").read_text() == "made on the node\n"
    assert not (checkout / "app.py").exists()
    # Outside an actor nothing ends the process once the result waited a while.
    assert not any(t.name == "attempt-linger" for t in threading.enumerate())


def test_stop_ends_the_agents_tree_on_the_node(checkout: Path, tmp_path: Path) -> None:
    pidfile = tmp_path / "sleeper.pid"
    script = fake_script({"spawn_sleeper": str(pidfile)}, {"hang": True})
    run = AttemptRun(spec_for(script, "t2"), bundle_files(checkout, tmp_path / "b.bundle"))
    seen: list[dict[str, Any]] = []
    reader = threading.Thread(target=lambda: seen.extend(run.run(0)), daemon=True)
    reader.start()
    deadline = time.monotonic() + 30
    while not pidfile.exists():
        assert time.monotonic() < deadline, "the agent never started its sleeper"
        time.sleep(0.05)
    sleeper = psutil.Process(int(pidfile.read_text()))
    assert run.stop(0.5)
    reader.join(30)
    assert seen and seen[-1].get("end") and seen[-1]["stopped"]
    assert not sleeper.is_running() or sleeper.status() == psutil.STATUS_ZOMBIE
