"""``baton -v`` / ``BATON_LOG`` and ``baton completion``."""

from __future__ import annotations

import logging
import os
import subprocess
import sys

import pytest

from baton.cli import logs


def test_level_from_flag_and_env() -> None:
    assert logs.level(0, None) is None and logs.level(0, " ") is None
    assert logs.level(1, None) == logging.INFO
    assert logs.level(2, None) == logging.DEBUG
    assert logs.level(0, "WARNING") == logging.WARNING
    assert logs.level(1, "debug") == logging.DEBUG  # the more verbose wins
    with pytest.raises(logs.BadLevel, match="BATON_LOG"):
        logs.level(0, "loud")


def _baton(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, **env},
    )


def test_logs_go_to_stderr_and_never_stdout() -> None:
    quiet = _baton("mcp", "--print-tools", "--json")
    loud = _baton("mcp", "--print-tools", "--json", BATON_LOG="debug")
    assert quiet.returncode == loud.returncode == 0
    assert loud.stdout == quiet.stdout  # the JSON document is untouched
    assert quiet.stderr == ""
    bad = _baton("mcp", "--print-tools", BATON_LOG="loud")
    assert bad.returncode == 0 and "BATON_LOG='loud'" in bad.stderr


def test_verbose_flag_logs_at_debug() -> None:
    proc = subprocess.run(
        [sys.executable, "-c", "import logging,sys; from baton.cli import logs; "
         "logs.configure(2); logging.getLogger('baton.x').debug('hello'); "
         "print(logging.getLogger().level)"],
        capture_output=True, text=True, timeout=60, env={**os.environ, "BATON_LOG": ""},
    )  # fmt: skip
    assert proc.stdout.strip() == str(logging.DEBUG)
    assert "baton.x DEBUG hello" in proc.stderr


def test_completion_lists_every_command() -> None:
    pytest.importorskip("shtab", reason="shtab is a dependency: reinstall (scripts/bootstrap)")
    from baton import cli

    proc = _baton("completion", "bash")
    assert proc.returncode == 0, proc.stderr
    for name in ("delegate", "accept", "doctor", "completion", "--worker"):
        assert name in proc.stdout
    assert cli.main(["completion", "fish"]) == 2  # not a shell shtab writes for
