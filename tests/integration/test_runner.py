"""Detached agent processes: spawn, output files, exit records, liveness, kill_tree."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from baton.agents.base import AgentNotFound, Launch, Turn
from baton.agents.fake import FakeAdapter
from baton.config.profiles import Profile
from baton.process import spawn as runner
from baton.process.sandbox import UNCONFINED, status
from baton.process.spawn import ProcessRecord, is_alive, kill_tree, read_exit, spawn, wait_exit
from baton.process.tail import Tailer

PY = sys.executable


def py(code: str, **kw: object) -> Launch:
    return Launch(argv=[PY, "-c", code], **kw)  # type: ignore[arg-type]


async def until(condition: object, within: float = 5.0) -> None:
    deadline = time.monotonic() + within
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_spawn_streams_output_and_writes_an_exit_record(tmp_path: Path) -> None:
    code = "import sys, time\nfor i in range(3):\n    print(f'line {i}', flush=True)\n    time.sleep(0.02)\nprint('oops', file=sys.stderr)\nsys.exit(3)"  # noqa: E501
    rec = spawn(py(code), tmp_path / "task", 1)
    assert rec.out_path == tmp_path / "task" / "attempt-1.out"
    assert rec.err_path.name == "attempt-1.err" and rec.exit_path.name == "attempt-1.exit"
    assert os.getpgid(rec.pid) == rec.pid  # its own group…
    assert os.getsid(rec.pid) == rec.pid  # …and its own session
    tailer = Tailer(rec.out_path)
    lines = [await tailer.__anext__() for _ in range(3)]
    assert lines == ["line 0", "line 1", "line 2"]
    ended = await asyncio.wait_for(wait_exit(rec), 30)  # generous: CI machines are loaded
    assert ended is not None and ended.code == 3 and ended.signal is None
    assert ended.ended_at >= rec.started_at
    assert runner.stderr_tail(rec.err_path) == "oops\n"
    # The wrapper writes the record just before it exits: give it that moment.
    deadline = time.monotonic() + 10
    while is_alive(rec.pid, rec.create_time):
        assert time.monotonic() < deadline, "the wrapper outlived its exit record"
        await asyncio.sleep(0.01)
    tailer.close()


async def test_env_cwd_and_stdin_reach_the_agent(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BATON_TEST_KEEP", "kept")
    monkeypatch.setenv("BATON_TEST_DROP", "dropped")
    work = tmp_path / "work"
    work.mkdir()
    code = (
        "import json, os, sys\n"
        "print(json.dumps({k: os.environ.get(k) for k in "
        "('BATON_TEST_KEEP', 'BATON_TEST_DROP', 'BATON_TEST_ADD')}))\n"
        "print(os.getcwd()); print(sys.stdin.read())"
    )
    launch = py(
        code,
        env={"BATON_TEST_ADD": "added"},
        unset_env=("BATON_TEST_DROP",),
        cwd=str(work),
        stdin="hello on stdin",
    )
    rec = spawn(launch, tmp_path / "task", 2)
    assert (await wait_exit(rec)) is not None
    env_line, cwd_line, stdin_line = rec.out_path.read_text().splitlines()
    assert json.loads(env_line) == {
        "BATON_TEST_KEEP": "kept",
        "BATON_TEST_DROP": None,
        "BATON_TEST_ADD": "added",
    }
    assert Path(cwd_line) == work.resolve()
    assert stdin_line == "hello on stdin"


async def test_stdin_defaults_to_dev_null(tmp_path: Path) -> None:
    rec = spawn(py("import sys; print(repr(sys.stdin.read()))"), tmp_path, 1)
    await wait_exit(rec)
    assert rec.out_path.read_text() == "''\n"


def test_missing_binary_raises_agent_not_found_before_starting(tmp_path: Path) -> None:
    with pytest.raises(AgentNotFound, match=r"no-such-agent-cli.*not found on PATH"):
        spawn(Launch(argv=["no-such-agent-cli", "-p", "x"]), tmp_path / "task", 1)
    with pytest.raises(AgentNotFound, match="does not exist"):
        spawn(Launch(argv=[str(tmp_path / "bin" / "agent")]), tmp_path / "task", 1)
    not_exec = tmp_path / "agent.sh"
    not_exec.write_text("#!/bin/sh\n")
    with pytest.raises(AgentNotFound, match="not executable"):
        spawn(Launch(argv=[str(not_exec)]), tmp_path / "task", 1)
    with pytest.raises(AgentNotFound, match="empty"):
        spawn(Launch(argv=[]), tmp_path / "task", 1)
    assert not (tmp_path / "task").exists()  # nothing was started, nothing written


async def test_exec_failure_in_the_wrapper_gives_exit_127(tmp_path: Path) -> None:
    agent = tmp_path / "agent"
    agent.write_text("#!/nonexistent/interpreter\n")
    agent.chmod(0o755)  # passes the pre-check; exec itself fails
    # Unsandboxed: in the sandbox, bubblewrap starts and the exec fails inside it (127 too,
    # said by the sandbox; see tests/integration/test_sandbox.py).
    rec = spawn(Launch(argv=[str(agent)]), tmp_path / "task", 1, UNCONFINED)
    ended = await asyncio.wait_for(wait_exit(rec), 5)
    assert ended is not None and ended.code == 127
    assert "cannot start" in runner.stderr_tail(rec.err_path)
    assert ended.error and str(agent) in ended.error


@pytest.mark.parametrize("sandboxed", [False, True], ids=["unsandboxed", "sandboxed"])
async def test_sigterm_to_the_wrapper_reaches_the_agent(tmp_path: Path, sandboxed: bool) -> None:
    if sandboxed and not status().works:
        pytest.skip(f"no sandbox here: {status().why}")
    code = "import time; print('up', flush=True); time.sleep(30)"
    rec = spawn(py(code), tmp_path, 1, None if sandboxed else UNCONFINED)
    await until(lambda: rec.out_path.read_text() == "up\n")
    os.kill(rec.pid, signal.SIGTERM)  # only the wrapper is sent it
    ended = await asyncio.wait_for(wait_exit(rec), 5)
    assert ended is not None
    # Through bubblewrap a signal comes back as the exit code 128 + n alone.
    expected = (143, None if sandboxed else "SIGTERM", "SIGTERM")
    assert (ended.code, ended.signal, ended.received) == expected


async def test_kill_tree_kills_a_grandchild_in_its_own_session(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    prompt = '```baton-fake\n{"steps": [{"spawn_sleeper": "sleeper.pid"}, {"hang": true}]}\n```'
    turn = Turn(task_id="t", prompt=prompt, cwd=str(work), task_dir=str(tmp_path / "task"))
    # Unsandboxed: the sleeper's pid must be the host's (test_sandbox.py: the same sandboxed).
    launch = FakeAdapter().launch(turn, Profile("fake", "fake"))
    rec = spawn(launch, tmp_path / "task", 1, UNCONFINED)
    pidfile = work / "sleeper.pid"
    await until(lambda: pidfile.exists() and pidfile.read_text().strip())
    sleeper = psutil.Process(int(pidfile.read_text()))
    assert os.getsid(sleeper.pid) not in (rec.pid, os.getsid(0))  # escaped the group
    t0 = time.monotonic()
    await kill_tree(rec.pid, grace=2.0, create_time=rec.create_time)
    assert time.monotonic() - t0 < 1.5  # SIGTERM sufficed
    assert not sleeper.is_running() or sleeper.status() == psutil.STATUS_ZOMBIE
    assert not is_alive(rec.pid, rec.create_time)
    ended = read_exit(rec.exit_path)
    assert ended is not None and ended.signal == "SIGTERM"


async def test_kill_tree_escalates_to_sigkill(tmp_path: Path) -> None:
    code = (
        "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
        "print('up', flush=True)\ntime.sleep(30)"
    )
    rec = spawn(py(code), tmp_path, 1)
    await until(lambda: rec.out_path.read_text() == "up\n")
    t0 = time.monotonic()
    await kill_tree(rec.pid, grace=0.3)
    assert 0.25 < time.monotonic() - t0 < 3
    assert not is_alive(rec.pid)
    ended = await wait_exit(rec)
    # The wrapper itself was SIGKILLed with its group, so no record: the adopter sees "vanished".
    assert ended is None or ended.signal == "SIGKILL"


async def test_kill_tree_of_a_dead_or_reused_pid_does_nothing(tmp_path: Path) -> None:
    await kill_tree(2**22 + 12345, grace=0.1)  # no such process
    me = psutil.Process()
    await kill_tree(os.getpid(), grace=0.1, create_time=me.create_time() - 100)  # "reused"
    assert me.is_running()


async def test_the_agent_outlives_the_process_that_started_it(tmp_path: Path) -> None:
    launch = {"argv": [PY, "-c", "import time; time.sleep(0.6); print('still here')"]}
    starter = (
        "import json, sys\nfrom pathlib import Path\nfrom baton.agents.base import Launch\n"
        "from baton.process.spawn import spawn\n"
        f"rec = spawn(Launch(**json.loads({json.dumps(json.dumps(launch))})), Path(sys.argv[1]), 1)\n"  # noqa: E501
        "print(json.dumps(rec.to_json()))"
    )
    done = await asyncio.to_thread(
        subprocess.run,
        [PY, "-c", starter, str(tmp_path)],
        capture_output=True,
        text=True,
        check=True,
        timeout=10,
    )
    rec = ProcessRecord.from_json(json.loads(done.stdout))
    assert is_alive(rec.pid, rec.create_time)  # its broker is gone; it is not
    assert read_exit(rec.exit_path) is None
    ended = await asyncio.wait_for(wait_exit(rec), 5)
    assert ended is not None and ended.code == 0
    assert rec.out_path.read_text() == "still here\n"


def test_is_alive_counts_zombies_and_reused_pids_as_dead() -> None:
    me = psutil.Process()
    assert is_alive(os.getpid())
    assert is_alive(os.getpid(), me.create_time())
    assert not is_alive(os.getpid(), me.create_time() - 10)
    child = subprocess.Popen([PY, "-c", "pass"])
    deadline = time.monotonic() + 5
    while psutil.Process(child.pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline
        time.sleep(0.01)
    assert not is_alive(child.pid)  # exited, not yet reaped
    child.wait()


def test_read_exit_and_stderr_tail_tolerate_missing_and_bad_files(tmp_path: Path) -> None:
    assert read_exit(tmp_path / "none.exit") is None
    (tmp_path / "bad.exit").write_text("{half")
    assert read_exit(tmp_path / "bad.exit") is None
    assert runner.stderr_tail(tmp_path / "none.err") == ""
    (tmp_path / "big.err").write_text("x" * 10_000 + "END")
    tail = runner.stderr_tail(tmp_path / "big.err", limit=100)
    assert len(tail) == 100 and tail.endswith("END")


def test_process_record_round_trips_through_json(tmp_path: Path) -> None:
    rec = ProcessRecord(7, tmp_path / "o", tmp_path / "e", tmp_path / "x", 1.5, 2.5)
    assert ProcessRecord.from_json(json.loads(json.dumps(rec.to_json()))) == rec


async def test_ended_wrappers_do_not_linger_as_zombies(tmp_path: Path) -> None:
    records = [spawn(py("pass"), tmp_path / str(i), 1) for i in range(3)]
    for rec in records:
        await wait_exit(rec)

    # Other tests' agents may still run in this process: only ours must be reaped.
    def ours_reaped() -> bool:
        runner.reap()
        return not any(psutil.pid_exists(rec.pid) for rec in records)  # gone, not zombies

    await until(ours_reaped)


def test_agent_env_sets_pwd_to_the_agent_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from baton.agents.base import Launch
    from baton.process.spawn import agent_env

    monkeypatch.setenv("PWD", "/somewhere/the/broker/runs")
    env = agent_env(Launch(argv=["x"], cwd=str(tmp_path)))
    assert env["PWD"] == str(tmp_path)
