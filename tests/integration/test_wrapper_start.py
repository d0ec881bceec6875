"""The wrapper's way to the agent's ``exec`` loads only what costs nothing (its start is paid
on every attempt, before the agent's own): no ``subprocess``, ``json``, ``signal`` enums,
``typing`` or masking on the plain path; and it still writes its records as before."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from baton.core.masking import MASK_ENV
from baton.process import wrap

HEAVY = ("subprocess", "json", "signal", "enum", "typing", "re", "threading", "baton.core.masking")


def imported(stderr: str) -> set[str]:
    """The modules ``-X importtime`` says were imported."""
    return {
        line.split("|")[-1].strip()
        for line in stderr.splitlines()
        if line.startswith("import time:") and "|" in line
    }


def test_the_wrapper_runs_isolated_and_imports_nothing_heavy(tmp_path: Path) -> None:
    exe, *rest = wrap.command()
    assert exe == sys.executable and rest[:2] == ["-I", "-S"]
    exit_path = tmp_path / "attempt-1.exit"
    proc = subprocess.run(
        [exe, "-X", "importtime", *rest, str(exit_path), "--", "true"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    loaded = imported(proc.stderr)
    assert "baton.process.wrap" in loaded and "baton.process.reaper" in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
    record = json.loads(exit_path.read_text())
    assert record["exit"] == 0 and record["signal"] is None and record["ended_at"] > 0
    claim = json.loads((tmp_path / "attempt-1.pid").read_text())
    assert claim["pid"] > 0 and claim["create_time"] > 0 and claim["started_at"] > 0


def test_the_wrappers_name_for_the_masking_variable_is_maskings() -> None:
    assert wrap.MASK_ENV == MASK_ENV


def test_records_with_text_are_json_too(tmp_path: Path) -> None:
    path = tmp_path / "attempt-2.exit"
    record: dict[str, object] = {"exit": 127, "signal": "SIGTERM", "error": 'no "such"\n', "x": 1.5}
    wrap.write_exit(str(path), record)
    assert json.loads(path.read_text()) == record
    wrap.write_exit(str(path), {"exit": 0, "ok": True, "none": None, "ended_at": 12.25})
    assert json.loads(path.read_text()) == {"exit": 0, "ok": True, "none": None, "ended_at": 12.25}


def test_the_agent_gets_its_stdio_and_no_other_descriptor(tmp_path: Path) -> None:
    r, w = os.pipe()
    os.set_inheritable(w, True)  # a descriptor the wrapper was handed, not for its agent
    try:
        listing = "import os; print(sorted(int(n) for n in os.listdir('/proc/self/fd')))"
        proc = subprocess.run(
            [*wrap.command(), str(tmp_path / "attempt-1.exit"), "--", sys.executable, "-c",
             listing],
            capture_output=True, text=True, timeout=60, close_fds=False,
        )  # fmt: skip
    finally:
        os.close(r)
        os.close(w)
    assert proc.returncode == 0, proc.stderr
    fds = json.loads(proc.stdout)
    assert fds[:3] == [0, 1, 2] and len(fds) <= 4, fds  # the listing's own one at most
