"""The permission policy by tool kind, fs requests confined to the worktree, transport choice."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from baton.acp import files, probe, transport
from baton.acp.agents import command, find_binary, spec_for
from baton.acp.policy import DEFAULT_POLICY, PolicyError, decide, inside, make_policy
from baton.agents.base import AgentNotFound, Turn
from baton.config.profiles import Profile


def test_default_policy_edits_inside_allowed_shell_asked_network_denied(tmp_path: Path) -> None:
    root = str(tmp_path)
    policy = make_policy(None)
    assert policy == DEFAULT_POLICY
    assert decide(policy, "edit", [str(tmp_path / "a.py")], root) == "allow"
    assert decide(policy, "edit", ["/etc/passwd"], root) == "ask"
    assert decide(policy, "read", [str(tmp_path / "a.py"), "/etc/hosts"], root) == "ask"
    assert decide(policy, "execute", [], root) == "ask"
    assert decide(policy, "fetch", [], root) == "deny"
    assert decide(policy, None, [], root) == "ask"
    assert decide(policy, "brand_new_kind", [], root) == "ask"


def test_overrides_per_kind_and_for_everything(tmp_path: Path) -> None:
    root = str(tmp_path)
    relaxed = make_policy({"execute": "allow", "fetch": "ask"})
    assert decide(relaxed, "execute", [], root) == "allow"
    assert decide(relaxed, "fetch", [], root) == "ask"
    strict = make_policy({"*": "ask"})
    assert decide(strict, "edit", [str(tmp_path / "a")], root) == "ask"
    with pytest.raises(PolicyError, match="must be one of allow, ask, deny"):
        make_policy({"execute": "yes"})


def test_a_symlink_out_of_the_checkout_is_outside(tmp_path: Path) -> None:
    root = tmp_path / "wt"
    root.mkdir()
    outside = tmp_path / "secret"
    outside.mkdir()
    (root / "link").symlink_to(outside)
    assert inside(str(root / "a" / "b.txt"), str(root))  # need not exist
    assert not inside(str(root / "link" / "x"), str(root))
    assert not inside(str(root / ".." / "secret"), str(root))
    assert not inside(str(tmp_path / "wt-other" / "x"), str(root))  # a prefix is not inside


def test_fs_requests_are_served_inside_the_worktree_only(tmp_path: Path) -> None:
    root = tmp_path / "wt"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    assert files.worktree_root(str(root / "src")) == str(root)
    files.write_text(str(root / "src" / "new" / "f.txt"), "one\ntwo\nthree\n", str(root))
    assert files.read_text(str(root / "src" / "new" / "f.txt"), str(root)) == "one\ntwo\nthree\n"
    assert files.read_text(str(root / "src" / "new" / "f.txt"), str(root), 2, 1) == "two\n"
    assert files.read_text(str(root / "missing.txt"), str(root)) == ""  # Gemini's new files
    outside = tmp_path / "outside.txt"
    with pytest.raises(files.OutsideWorktree, match="outside the task's worktree"):
        files.write_text(str(outside), "x", str(root))
    assert not outside.exists()
    with pytest.raises(files.OutsideWorktree):
        files.read_text("/etc/hostname", str(root))
    with pytest.raises(files.OutsideWorktree):
        files.write_text("relative.txt", "x", str(root))
    for git in (root / ".git", root / ".git" / "hooks" / "pre-commit"):  # the sandbox's too
        with pytest.raises(files.OutsideWorktree):
            files.write_text(str(git), "x", str(root))
    assert not (root / ".git" / "hooks").exists()


def test_transport_choice_explicit_or_auto_only_when_probed(tmp_path: Path) -> None:
    home = tmp_path / "home"
    native = Profile(name="n", provider="claude", options={"transport": "native"})
    assert transport.choose(native, home)[0] == "native"
    agent = tmp_path / "bin" / "claude-agent-acp"
    agent.parent.mkdir()
    agent.write_text("#!/bin/sh\n")
    agent.chmod(0o755)
    auto = Profile(name="a", provider="claude", options={"acp_binary": str(agent)})
    chosen, why = transport.choose(auto, home)
    assert chosen == "native" and "baton doctor" in why
    probe.record(home, str(agent), probe.ProbeResult(True, command=str(agent)))
    assert transport.choose(auto, home)[0] == "acp"
    os.utime(agent, (1, 1))  # reinstalled: the record no longer applies
    assert transport.choose(auto, home)[0] == "native"
    assert transport.choose(Profile(name="p", provider="pi"), home)[0] == "native"
    with pytest.raises(ValueError, match="has no ACP transport"):
        transport.choose(Profile(name="p", provider="pi", options={"transport": "acp"}), home)
    with pytest.raises(ValueError, match="transport must be one of"):
        transport.choose(Profile(name="x", provider="claude", options={"transport": "ws"}), home)


def test_acp_commands_per_agent(tmp_path: Path) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("claude", "claude-agent-acp", "codex-acp", "opencode", "gemini"):
        exe = bindir / name
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
    turn = Turn(task_id="t", prompt="p", cwd=str(tmp_path), task_dir=str(tmp_path / "task"))
    claude = Profile(name="c", provider="claude", binary=str(bindir / "claude"), model="m1")
    argv, env = command(claude, turn)  # found beside the claude binary
    assert argv == [str(bindir / "claude-agent-acp")] and env["ANTHROPIC_MODEL"] == "m1"
    codex = Profile(name="x", provider="codex", env={"PATH": str(bindir)})
    argv, _ = command(codex, turn)
    assert argv[0] == str(bindir / "codex-acp") and 'approval_policy="untrusted"' in argv
    oc = Profile(
        name="o",
        provider="opencode",
        binary=str(bindir / "opencode"),
        env={"OPENCODE_CONFIG_CONTENT": '{"model": "mock/m", "permission": {"bash": "allow"}}'},
    )
    argv, env = command(oc, turn)
    assert argv == [str(bindir / "opencode"), "acp"]
    assert '"bash": "ask"' in env["OPENCODE_CONFIG_CONTENT"]
    assert '"model": "mock/m"' in env["OPENCODE_CONFIG_CONTENT"]
    gem = Profile(name="g", provider="gemini", binary=str(bindir / "gemini"), model="gm")
    argv, env = command(gem, turn)
    assert argv == [str(bindir / "gemini"), "--acp", "-m", "gm"]
    assert Path(env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]).exists()
    missing = Profile(name="c2", provider="claude", env={"PATH": str(tmp_path / "none")})
    spec = spec_for(missing)
    assert spec is not None
    with pytest.raises(AgentNotFound, match="npm install -g @zed-industries/claude-agent-acp"):
        find_binary(missing, spec)
    own = Profile(name="f", provider="fake", options={"acp_argv": ["python3", "agent.py"]})
    assert command(own, turn)[0] == ["python3", "agent.py"]
