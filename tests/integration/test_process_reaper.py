"""When an attempt ends, everything it started is gone (real processes, Linux).

The agent dies with its wrapper (PDEATHSIG), and what the agent leaves behind — a shell's
background job, a ``setsid`` process, a double-forked daemon, one that ignores SIGTERM — is
ended by the wrapper before it writes the exit record.

These are the wrapper's own guarantees, which hold without the OS sandbox too: the agents run
unsandboxed here (their pids must be the host's). tests/integration/test_sandbox.py shows the
same for sandboxed agents, whose PID namespace ends with them.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from baton.agents.base import Launch
from baton.core.lifecycle import TaskState
from baton.process.spawn import ExitRecord, ProcessRecord, is_alive, spawn, wait_exit
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Supervisor
from tests.conftest import fake_script, settle

PY = sys.executable
pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="prctl and /proc"),
    pytest.mark.usefixtures("no_sandbox"),
]


async def until(condition: object, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.02)


def pids_in(path: Path) -> list[int]:
    return [int(p) for p in path.read_text().split()] if path.exists() else []


async def ended(rec: ProcessRecord) -> ExitRecord:
    found = await asyncio.wait_for(wait_exit(rec), 60)
    assert found is not None
    return found


async def test_the_agent_dies_when_its_wrapper_is_sigkilled(tmp_path: Path) -> None:
    agent = "import os, time; print(os.getpid(), flush=True); time.sleep(300)"
    rec = spawn(Launch(argv=[PY, "-c", agent], cwd=str(tmp_path)), tmp_path / "task", 1)
    await until(lambda: rec.out_path.read_text().strip())
    pid = int(rec.out_path.read_text())
    created = psutil.Process(pid).create_time()
    os.kill(rec.pid, signal.SIGKILL)  # the wrapper only, not its group
    await until(lambda: not is_alive(pid, created))
    assert not is_alive(rec.pid, rec.create_time)


async def test_background_jobs_and_setsid_processes_are_gone_when_the_record_appears(
    tmp_path: Path,
) -> None:
    script = (
        "sleep 300 & echo $! >> left.pids\n"
        "setsid sh -c 'echo $$ >> left.pids; exec sleep 300' &\n"
        "while [ $(wc -l < left.pids) -lt 2 ]; do sleep 0.02; done\n"
        "exit 0\n"
    )
    rec = spawn(Launch(argv=["sh", "-c", script], cwd=str(tmp_path)), tmp_path / "task", 1)
    assert (await ended(rec)).code == 0
    left = pids_in(tmp_path / "left.pids")
    assert len(left) == 2
    assert [pid for pid in left if is_alive(pid)] == []
    assert os.getsid(0) not in left  # (sanity: none of them is us)


async def test_a_double_forked_daemon_is_gone_when_the_record_appears(tmp_path: Path) -> None:
    agent = (
        "import os, time\n"
        "if os.fork() == 0:\n"
        "    os.setsid()\n"
        "    if os.fork() == 0:\n"
        "        with open('daemon.pid', 'w') as f: f.write(str(os.getpid()))\n"
        "        time.sleep(300)\n"
        "    os._exit(0)\n"
        "while not os.path.exists('daemon.pid') or not open('daemon.pid').read():\n"
        "    time.sleep(0.02)\n"
    )
    rec = spawn(Launch(argv=[PY, "-c", agent], cwd=str(tmp_path)), tmp_path / "task", 1)
    assert (await ended(rec)).code == 0
    daemon = pids_in(tmp_path / "daemon.pid")
    assert len(daemon) == 1 and not is_alive(daemon[0])


async def test_a_leftover_that_ignores_sigterm_is_killed_after_the_grace(tmp_path: Path) -> None:
    script = "(trap '' TERM; exec sleep 300) & echo $! > left.pids; sleep 0.1; exit 3"
    rec = spawn(Launch(argv=["sh", "-c", script], cwd=str(tmp_path)), tmp_path / "task", 1)
    record = await ended(rec)
    assert record.code == 3
    (stubborn,) = pids_in(tmp_path / "left.pids")
    assert not is_alive(stubborn)
    assert record.ended_at - rec.started_at >= 0.9  # it had its grace before the SIGKILL


async def test_a_wrapper_run_by_hand_spares_the_group_it_does_not_lead(tmp_path: Path) -> None:
    sibling = subprocess.Popen(["sleep", "60"])  # in our group, not the wrapper's child
    try:
        exit_path = tmp_path / "attempt-1.exit"
        wrapper = [PY, "-P", "-m", "baton.process.wrap", str(exit_path), "--", "true"]
        done = await asyncio.to_thread(subprocess.run, wrapper, timeout=60)
        assert done.returncode == 0 and exit_path.exists()
        assert sibling.poll() is None and is_alive(os.getpid())
    finally:
        sibling.kill()
        sibling.wait()


async def test_a_bound_agent_dies_with_the_process_that_started_it(tmp_path: Path) -> None:
    starter = (
        "import os, subprocess, sys, time\nfrom baton.process.reaper import bound\n"
        "agent = subprocess.Popen(bound(['sleep', '300'], os.getpid()))\n"
        "print(agent.pid, flush=True)\ntime.sleep(300)\n"
    )
    proc = subprocess.Popen(
        [PY, "-c", starter], stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        assert proc.stdout is not None
        line = await asyncio.wait_for(asyncio.to_thread(proc.stdout.readline), 60)
        agent = psutil.Process(int(line))
        await until(lambda: agent.cmdline() == ["sleep", "300"])  # bound, then exec'd
        proc.kill()  # SIGKILL: the starter cleans nothing up
        await until(lambda: not is_alive(agent.pid, agent.create_time()))
    finally:
        proc.kill()
        proc.wait()


async def test_an_acp_runner_and_its_agent_die_with_the_runners_wrapper(
    repo: Path, tmp_path: Path
) -> None:
    from baton.acp.transport import AcpTransport
    from baton.agents.base import Turn
    from tests.integration.test_process_transport import acp_profile
    from tests.support.acp_fake_agent import script

    task_dir = tmp_path / "task"
    turn = Turn(task_id="t1", prompt=script({"sleep": 60}), cwd=str(repo), task_dir=str(task_dir))
    started = await AcpTransport("fake").start(turn, acp_profile(), 1)
    wrapper = psutil.Process(started.record.pid)

    def runner_and_agent() -> list[psutil.Process]:
        """The runner and its agent, once the agent runs (bound, then exec'd)."""
        found = {}
        for proc in wrapper.children(recursive=True):
            cmd = " ".join(proc.cmdline())
            if "baton.acp.session_runner" in cmd:
                found["runner"] = proc
            elif "acp_fake_agent.py" in cmd and "baton.process.reaper" not in cmd:
                found["agent"] = proc
        return list(found.values()) if len(found) == 2 else []

    await until(runner_and_agent)
    procs = runner_and_agent()
    wrapper.kill()
    await until(lambda: not any(is_alive(p.pid, p.create_time()) for p in procs))


async def test_an_acp_turns_background_job_is_gone_when_the_turn_ends(
    repo: Path, tmp_path: Path
) -> None:
    from baton.acp.transport import AcpTransport, stop
    from baton.agents.base import Turn
    from tests.integration.test_process_transport import acp_profile
    from tests.support.acp_fake_agent import script

    task_dir = tmp_path / "task"
    job = "sleep 300 > /dev/null 2>&1 & echo $! > bg.pid"  # not holding the tool's pipes
    turn = Turn(
        task_id="t1", prompt=script({"run": ["sh", "-c", job]}), cwd=str(repo),
        task_dir=str(task_dir),
    )  # fmt: skip
    profile = acp_profile()
    profile.options["permissions"] = {"execute": "allow"}
    try:
        started = await AcpTransport("fake").start(turn, profile, 1)
        assert (await ended(started.record)).code == 0
        (job_pid,) = pids_in(repo / "bg.pid")
        assert not is_alive(job_pid)
        assert is_alive(started.record.pid, started.record.create_time)  # the session stays
    finally:
        await stop(task_dir)


async def test_a_task_in_review_leaves_no_process_of_its_agent(
    sup: Supervisor, repo: Path, tmp_path: Path
) -> None:
    """Issue 15, case 4: a process the agent started in the background (in a session of its
    own) does not survive the task reaching review."""
    pidfile = tmp_path / "sleeper.pid"
    steps = ({"spawn_sleeper": str(pidfile)}, {"write": "new.txt", "content": "x\n"})
    req = DelegateRequest(instruction=fake_script(*steps, summary="done"), root=str(repo))
    task = await sup.delegate(req)
    assert await settle(sup, task.id, timeout=60) == TaskState.REVIEW
    (sleeper,) = pids_in(pidfile)
    assert not is_alive(sleeper)


def test_kill_tree_of_pid_0_or_1_signals_nothing(tmp_path: Path) -> None:
    """pid 0 would be the caller's own process group (an adopted attempt once recorded 0):
    run in a child of its own session, the call returns and the child lives on."""
    code = (
        "import asyncio, sys\n"
        "from baton.process.spawn import kill_tree\n"
        "asyncio.run(kill_tree(0, 0.2))\n"
        "asyncio.run(kill_tree(1, 0.2))\n"
        "print('alive')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60,
        start_new_session=True,
    )  # fmt: skip
    assert done.returncode == 0 and done.stdout.strip() == "alive", (done.returncode, done.stderr)
