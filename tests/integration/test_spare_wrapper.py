"""The spare wrapper (:mod:`baton.process.spare`): started ahead of need, it runs the next
attempt as a wrapper started for it would — its claim, working folder, environment, stdio,
records — orders cut short run nothing, and a starter that dies leaves no spare behind."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from baton.agents.base import Launch
from baton.process import spare
from baton.process.spawn import claim_paths, find_attempt, spawn, wait_exit
from baton.process.wrap import SPARE, command, take_lock

PY = sys.executable
SHOW = (
    "import json, os, sys; print(json.dumps({'cwd': os.getcwd(), 'env': os.environ.get('MINE'),"
    " 'stdin': sys.stdin.read(), 'ppid': os.getppid()})); print('to err', file=sys.stderr)"
)


def _ready(within: float = 30.0) -> int:
    """The pid of the spare once one is ready."""
    deadline = time.monotonic() + within
    while True:
        with spare._lock:
            found = spare._spare
        if found is not None:
            return found.proc.pid
        assert time.monotonic() < deadline, "no spare wrapper came"
        spare.ask()
        time.sleep(0.02)


async def test_a_spare_runs_the_next_attempt_as_a_wrapper_started_for_it(
    no_sandbox: None, tmp_path: Path
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    pid = _ready()
    launch = Launch(argv=[PY, "-c", SHOW], cwd=str(work), env={"MINE": "yes"}, stdin="in")
    record = spawn(launch, tmp_path / "task", 1)
    assert record.pid == pid  # the spare took it
    ended = await wait_exit(record)
    assert ended is not None and ended.code == 0
    said = json.loads(record.out_path.read_text())
    assert said == {"cwd": str(work), "env": "yes", "stdin": "in", "ppid": pid}
    assert record.err_path.read_text() == "to err\n"
    claim = json.loads(claim_paths(tmp_path / "task", 1)[1].read_text())
    assert claim["pid"] == pid
    with contextlib.suppress(psutil.Error):
        psutil.Process(pid).wait(30)
    assert find_attempt(tmp_path / "task", 1, wait=0.5) is None  # ended: its lock is free
    assert _ready() != pid  # and another spare is asked for


async def test_a_spare_in_a_folder_that_is_gone_says_so_in_its_exit_record(
    tmp_path: Path,
) -> None:
    work = tmp_path / "work"
    work.mkdir()
    _ready()
    folder = tmp_path / "task"
    folder.mkdir()
    lock_path, _ = claim_paths(folder, 1)
    lock = take_lock(str(lock_path))
    assert lock is not None
    out, err = folder / "o", folder / "e"
    with open(os.devnull, "rb") as i, open(out, "wb") as o, open(err, "wb") as e:
        proc = spare.hand_over(
            [str(folder / "attempt-1.exit")], str(work / "gone"), ["true"], {}, [lock, *(
                f.fileno() for f in (i, o, e))]
        )  # fmt: skip
    os.close(lock)
    assert proc is not None
    assert proc.wait(30) == 127
    record = json.loads((folder / "attempt-1.exit").read_text())
    assert record["exit"] == 127 and "gone" in record["error"]


@pytest.mark.parametrize("cut", [0, 10, -2])
def test_orders_cut_short_run_nothing_and_free_the_claim(tmp_path: Path, cut: int) -> None:
    mine, theirs = socket.socketpair()
    proc = subprocess.Popen([*command(), SPARE], stdin=theirs, start_new_session=True)
    theirs.close()
    marker = tmp_path / "ran"
    lock_path = tmp_path / "attempt-1.lock"
    lock = take_lock(str(lock_path))
    assert lock is not None
    orders = spare._orders([str(tmp_path / "attempt-1.exit")], str(tmp_path),
                           ["touch", str(marker)], {})  # fmt: skip
    with open(os.devnull, "rb") as null:
        fds = [lock, null.fileno(), null.fileno(), null.fileno()]
        rights = b"".join(fd.to_bytes(4, sys.byteorder) for fd in fds)
        if cut:  # -2: everything but the end of the last field
            mine.sendmsg([orders[:cut]], [(socket.SOL_SOCKET, socket.SCM_RIGHTS, rights)])
    os.close(lock)
    mine.close()
    assert proc.wait(30) == 0
    assert not marker.exists() and not (tmp_path / "attempt-1.exit").exists()
    again = take_lock(str(lock_path), within=0.0)  # the spare let go of the claim
    assert again is not None
    os.close(again)


async def test_a_starter_that_dies_leaves_no_spare_behind(tmp_path: Path) -> None:
    starter = (
        "import os, signal, time\nfrom baton.process import spare\nspare.ask()\n"
        "while spare._spare is None: time.sleep(0.01)\n"
        "print(spare._spare.proc.pid, flush=True)\nos.kill(os.getpid(), signal.SIGKILL)\n"
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([PY, "-c", starter], capture_output=True, text=True, env=env, timeout=60)
    pid = int(out.stdout.strip())
    deadline = time.monotonic() + 30
    while psutil.pid_exists(pid) and psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
        assert time.monotonic() < deadline, "the spare outlived its starter"
        await asyncio.sleep(0.05)
