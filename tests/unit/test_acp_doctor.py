"""``baton doctor`` reports both transports per profile and probes ACP commands for real."""

from __future__ import annotations

import sys
from pathlib import Path

from baton.acp import probe, transport
from baton.cli.doctor import check_acp, format_report, run_doctor
from baton.config.profiles import Profile

FAKE = str(Path(__file__).resolve().parents[1] / "support" / "acp_fake_agent.py")


def test_a_working_acp_agent_is_probed_recorded_and_then_chosen(tmp_path: Path) -> None:
    home = tmp_path / "state"
    profile = Profile(name="acp", provider="fake", options={"acp_argv": [sys.executable, FAKE]})
    assert transport.choose(profile, home)[0] == "native"  # not seen to work yet
    report = run_doctor({"acp": profile}, home=home)
    (check,) = report.profiles
    assert check.acp is not None and check.acp.ok and check.acp.agent == "acp-fake 1.0"
    assert check.transport == "acp"
    assert probe.verified(home, profile)
    assert transport.choose(profile, home) == ("acp", "ACP adapter installed and seen to work")
    text = format_report(report)
    assert "transport: acp" in text and "ACP: ok: acp-fake 1.0 answered in" in text


def test_a_broken_or_missing_acp_command_is_reported_with_what_to_do(tmp_path: Path) -> None:
    home = tmp_path / "state"
    broken = tmp_path / "bin" / "claude-agent-acp"
    broken.parent.mkdir()
    broken.write_text("#!/bin/sh\necho nope >&2\nexit 3\n")
    broken.chmod(0o755)
    failing = Profile(name="c", provider="claude", options={"acp_binary": str(broken)})
    check = check_acp(failing, home)
    assert check is not None and check.probed and check.ok is False
    assert any("did not answer initialize" in n and "nope" in n for n in check.notes)
    assert not probe.verified(home, failing)
    missing = Profile(name="m", provider="claude", env={"PATH": str(tmp_path / "empty")})
    check = check_acp(missing, home, path=str(tmp_path / "empty"))
    assert check is not None and check.command is None
    assert "npm install -g @zed-industries/claude-agent-acp" in check.notes[0]
    codex = tmp_path / "bin" / "codex-acp"
    codex.write_text("#!/bin/sh\n")
    codex.chmod(0o755)
    no_bwrap = Profile(name="x", provider="codex", options={"acp_binary": str(codex)})
    check = check_acp(no_bwrap, None, path=str(tmp_path / "bin"))
    assert check is not None and any("bubblewrap" in n for n in check.notes)
    assert check_acp(Profile(name="p", provider="pi"), home) is None  # no ACP transport
