"""The wrapper writes an agent's raw output files masked (real processes).

The broker names the variables that hold secrets (``BATON_MASK_ENV``); the wrapper reads
their values from the environment it shares with the agent, gives the agent pipes instead
of the files, and writes what comes through them with every secret masked — whole, cut
across writes, folded. Lines still reach the file at once, and the exit record still comes
after the last byte of output.
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

import pytest

from baton.agents.base import Launch
from baton.core.masking import MASK, MASK_ENV
from baton.process.spawn import ExitRecord, ProcessRecord, spawn, wait_exit

PY = sys.executable
SECRET = "canary-0b5e7c1d-6a2f-4e3b-9c8d-000baton000"
SECRET_ENV = {"API_TOKEN": SECRET, MASK_ENV: "API_TOKEN"}
FOLDS = [SECRET[i : i + 8] for i in range(0, len(SECRET), 8)]
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc")

LEAKY = r"""
import os, subprocess, sys, time
t = os.environ["API_TOKEN"]
print("whole", t, flush=True)
for piece in (t[:5], t[5:17], t[17:] + "\n"):  # one line, three writes: cuts inside it
    os.write(1, piece.encode())
    time.sleep(0.05)
subprocess.run(["fold", "-w", "8"], input=t + "\n", text=True, check=True)
os.write(2, ("err " + t + "\n").encode())
print("ok é ü", flush=True)
"""


async def ended(rec: ProcessRecord) -> ExitRecord:
    found = await asyncio.wait_for(wait_exit(rec), 60)
    assert found is not None
    return found


async def until(condition: object, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, "timed out"
        await asyncio.sleep(0.01)


async def test_raw_output_files_are_written_masked(tmp_path: Path) -> None:
    launch = Launch(argv=[PY, "-c", LEAKY], env=SECRET_ENV, cwd=str(tmp_path))
    rec = spawn(launch, tmp_path / "task", 1)
    assert (await ended(rec)).code == 0
    out = rec.out_path.read_text(encoding="utf-8")
    assert out == f"whole {MASK}\n{MASK}\n" + f"{MASK}\n" * len(FOLDS) + "ok é ü\n"
    assert rec.err_path.read_text() == f"err {MASK}\n"


async def test_without_secrets_the_agent_writes_its_files_itself(tmp_path: Path) -> None:
    where = "import os; print(os.readlink('/proc/self/fd/1'))"
    plain = spawn(Launch(argv=[PY, "-c", where], cwd=str(tmp_path)), tmp_path / "a", 1)
    masked = spawn(
        Launch(argv=[PY, "-c", where], env=SECRET_ENV, cwd=str(tmp_path)), tmp_path / "b", 1
    )
    await ended(plain)
    await ended(masked)
    assert plain.out_path.read_text().strip() == str(plain.out_path)
    assert masked.out_path.read_text().startswith("pipe:")


async def test_a_line_reaches_the_file_at_once_and_a_secrets_beginning_waits(
    tmp_path: Path,
) -> None:
    go = tmp_path / "go"
    agent = (
        "import os, pathlib, time\n"
        "t = os.environ['API_TOKEN']\n"
        "print('hello can', flush=True)\n"  # ends with the secret's first letters: not held
        "print('begins ' + t[:10], flush=True)\n"
        "while not pathlib.Path(os.environ['GO']).exists(): time.sleep(0.02)\n"
        "print(t[10:], flush=True)\n"
    )
    launch = Launch(argv=[PY, "-c", agent], env={**SECRET_ENV, "GO": str(go)}, cwd=str(tmp_path))
    rec = spawn(launch, tmp_path / "task", 1)
    await until(lambda: "begins " in rec.out_path.read_text())
    assert rec.out_path.read_text() == "hello can\nbegins "  # the rest is held back
    go.touch()
    assert (await ended(rec)).code == 0
    assert rec.out_path.read_text() == f"hello can\nbegins {MASK}\n{MASK}\n"


async def test_a_leftover_holding_the_pipe_does_not_keep_the_record_back(tmp_path: Path) -> None:
    agent = (
        "import os, subprocess\n"
        "subprocess.Popen(['sleep', '300'])\n"  # inherits the agent's stdout and stderr
        "print('bye', os.environ['API_TOKEN'], flush=True)\n"
    )
    launch = Launch(argv=[PY, "-c", agent], env=SECRET_ENV, cwd=str(tmp_path))
    rec = spawn(launch, tmp_path / "task", 1)
    started = time.monotonic()
    assert (await ended(rec)).code == 0
    assert time.monotonic() - started < 20
    assert rec.out_path.read_text() == f"bye {MASK}\n"
