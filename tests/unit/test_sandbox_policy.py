"""The sandbox policy as text: rule order, the bubblewrap command line, the macOS profile.

The macOS ``sandbox-exec`` profile cannot run here, so it is checked as text: the same
policy gives the same rules, in the same order, as the bubblewrap mounts.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from baton.agents.base import Launch
from baton.process import sandbox
from baton.process.sandbox import (
    HIDE,
    PROTECT,
    READ,
    WRITE,
    Mount,
    Policy,
    SandboxUnavailable,
    Status,
    bwrap_argv,
    confine,
    report,
    report_text,
    seatbelt_profile,
)

STATE = "/home/u/.local/state/baton"
CHECKOUT = f"{STATE}/worktrees/t1"

POLICY = Policy.of(
    CHECKOUT,
    [
        Mount(CHECKOUT, WRITE),
        Mount(STATE, HIDE),
        Mount("/tmp", HIDE),
        Mount("/home/u/.claude", WRITE),
        Mount("/home/u/.claude/ide", HIDE),
        Mount(f"{CHECKOUT}/.git", PROTECT, is_dir=False),
        Mount("/home/u/.npmrc", HIDE, is_dir=False),
        Mount(f"{STATE}/tasks/t1/prompts/p.txt", READ, is_dir=False),
        Mount("/usr/bin/claude", READ, is_dir=False),  # not inside anything opened: dropped
        Mount("/tmp", WRITE),  # the same path twice: hide wins
    ],
)


def test_rules_apply_shallowest_first_and_one_per_path() -> None:
    assert [(m.path, m.access) for m in POLICY.mounts] == [
        ("/tmp", HIDE),
        ("/home/u/.claude", WRITE),
        ("/home/u/.npmrc", HIDE),
        ("/home/u/.claude/ide", HIDE),
        (STATE, HIDE),
        (CHECKOUT, WRITE),
        (f"{CHECKOUT}/.git", PROTECT),
        (f"{STATE}/tasks/t1/prompts/p.txt", READ),
    ]


def test_relative_and_root_rules_are_dropped() -> None:
    policy = Policy.of("/w", [Mount("rel/path", HIDE), Mount("/", WRITE), Mount("/w/", WRITE)])
    assert policy.mounts == (Mount("/w", WRITE),)
    with pytest.raises(ValueError, match="unknown access"):
        Policy.of("/w", [Mount("/w", "execute")])


def test_the_bubblewrap_command_line() -> None:
    argv = bwrap_argv(POLICY, "/usr/bin/bwrap")
    head = argv[: argv.index("--ro-bind")]
    assert head == [
        "/usr/bin/bwrap", "--die-with-parent", "--unshare-pid", "--unshare-ipc",
        "--unshare-cgroup-try",
    ]  # fmt: skip
    body = " ".join(argv[len(head) :])
    assert body == (
        "--ro-bind / / --dev /dev --proc /proc --tmpfs /tmp --bind /home/u/.claude /home/u/.claude "
        "--ro-bind /dev/null /home/u/.npmrc --tmpfs /home/u/.claude/ide "
        f"--tmpfs {STATE} --bind {CHECKOUT} {CHECKOUT} "
        f"--ro-bind {CHECKOUT}/.git {CHECKOUT}/.git "
        f"--ro-bind {STATE}/tasks/t1/prompts/p.txt {STATE}/tasks/t1/prompts/p.txt "
        f"--chdir {CHECKOUT} --"
    )
    offline = bwrap_argv(Policy.of("/w", [], network=False))
    assert "--unshare-net" in offline and "--unshare-net" not in argv


def test_the_macos_profile_is_the_same_policy_as_text() -> None:
    text = seatbelt_profile(POLICY, "/private/tmp/agent-1")
    lines = text.splitlines()
    assert lines[:3] == ["(version 1)", "(allow default)", '(deny file-write* (subpath "/"))']
    assert '(subpath "/private/tmp/agent-1"))' in text  # its own temporary folder is writable
    assert "(allow signal (target same-sandbox))" in lines
    rules = lines[lines.index("(allow signal (target same-sandbox))") + 1 :]
    assert rules == [
        '(deny file-read* file-write* (subpath "/tmp"))',
        '(allow file-read* file-write* (subpath "/home/u/.claude"))',
        '(deny file-read* file-write* (literal "/home/u/.npmrc"))',
        '(deny file-read* file-write* (subpath "/home/u/.claude/ide"))',
        f'(deny file-read* file-write* (subpath "{STATE}"))',
        f'(allow file-read* file-write* (subpath "{CHECKOUT}"))',
        f'(deny file-write* (literal "{CHECKOUT}/.git"))',
        f'(allow file-read* (literal "{STATE}/tasks/t1/prompts/p.txt"))',
    ]
    assert "(deny network*)" not in text
    offline = seatbelt_profile(Policy.of("/w", [], network=False), "/t")
    assert offline.splitlines()[-1] == "(deny network*)"


def test_quotes_in_paths_are_escaped_in_the_profile() -> None:
    text = seatbelt_profile(Policy.of("/w", [Mount('/w/a "b"\\c', HIDE)]), "/t")
    assert '(subpath "/w/a \\"b\\"\\\\c")' in text


BROKEN = Status("bubblewrap", False, False, "/usr/bin/bwrap", "0.8.0", "it cannot start here")


def test_without_a_working_sandbox_auto_runs_unsandboxed_and_require_refuses(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sandbox, "status", lambda: BROKEN)
    launch = Launch(argv=["true"], cwd=str(tmp_path))
    auto = confine(launch, tmp_path / "task", {}, mode="auto")
    assert not auto.sandboxed and auto.wrap(["a", "b"]) == ["a", "b"]
    assert auto.note == 'UNSANDBOXED: it cannot start here (sandbox = "auto")'
    with pytest.raises(SandboxUnavailable, match=r"require.*it cannot start here.*not started"):
        confine(launch, tmp_path / "task", {}, mode="require")
    off = confine(launch, tmp_path / "task", {}, mode="off")
    assert off.note == 'unsandboxed (sandbox = "off")' and not off.sandboxed
    with pytest.raises(ValueError, match="unknown sandbox setting"):
        confine(launch, tmp_path / "task", {}, mode="sometimes")


@pytest.mark.parametrize(
    ("found", "mode", "agents", "words"),
    [
        (BROKEN, "auto", "unsandboxed", "UNSANDBOXED"),
        (BROKEN, "require", "refused", "REFUSED"),
        (BROKEN, "off", "unsandboxed", "off"),
        (Status("bubblewrap", True, True, "/b", "0.8.0"), "auto", "sandboxed", "bubblewrap 0.8.0"),
        (Status("sandbox-exec", True, False, "/s"), "auto", "unsandboxed", "UNSANDBOXED"),
        (Status("sandbox-exec", True, False, "/s"), "require", "sandboxed", "sandbox-exec"),
    ],
)
def test_doctor_says_how_agents_run(
    monkeypatch: pytest.MonkeyPatch, found: Status, mode: str, agents: str, words: str
) -> None:
    monkeypatch.setattr(sandbox, "status", lambda: found)
    answer: dict[str, Any] = report(mode)
    assert answer["agents"] == agents and answer["setting"] == mode
    assert answer["ok"] is (agents != "refused")
    assert words in report_text(answer)


MISSING = Status("bubblewrap", False, False, why="bubblewrap is not installed")


@pytest.mark.parametrize(
    ("found", "mode", "advice"),
    [
        (MISSING, "auto", ("Install bubblewrap", 'set sandbox = "require"')),
        (MISSING, "require", ("Install bubblewrap", 'set sandbox = "auto"')),
        (BROKEN, "auto", ("user namespaces", 'set sandbox = "require"')),
        (BROKEN, "off", ('Remove sandbox = "off"',)),
        (Status("sandbox-exec", True, False, "/s"), "auto", ("sandbox-exec profile",)),
        (Status("none", False, False, why="no sandbox"), "auto", ("No sandbox is known",)),
    ],
)
def test_the_report_says_what_to_do_when_agents_are_not_sandboxed(
    monkeypatch: pytest.MonkeyPatch, found: Status, mode: str, advice: tuple[str, ...]
) -> None:
    monkeypatch.setattr(sandbox, "status", lambda: found)
    answer: dict[str, Any] = report(mode)
    assert answer["agents"] != "sandboxed"
    assert all(words in answer["advice"] for words in advice), answer["advice"]
    assert answer["summary"] == report_text(answer)


def test_the_report_has_no_advice_when_agents_run_sandboxed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sandbox, "status", lambda: Status("bubblewrap", True, True, "/b", "0.8"))
    answer: dict[str, Any] = report("auto")
    assert answer["advice"] == "" and answer["summary"].startswith("Sandbox: bubblewrap 0.8 (/b)")


def test_a_named_user_config_is_hidden_but_not_the_folder_it_sits_in(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``BATON_CONFIG`` names a file: that file is hidden, the agent's own program beside it
    stays readable (hiding the whole folder hid a launcher kept next to the config)."""
    config = tmp_path / "baton.toml"
    config.write_text('default_worker = "fake"\n')
    program = tmp_path / "agent"
    program.write_text("#!/bin/sh\n")
    program.chmod(0o755)
    checkout, task = tmp_path / "checkout", tmp_path / "state" / "tasks" / "t1"
    checkout.mkdir()
    task.mkdir(parents=True)
    monkeypatch.setenv("BATON_CONFIG", str(config))
    policy = sandbox.policy_for(Launch(argv=[str(program)], cwd=str(checkout)), task, {})
    rules = {m.path: m.access for m in policy.mounts}
    folder = str(tmp_path.resolve())
    assert rules.get(folder) == READ
    assert rules.get(str(config.resolve())) == HIDE
    assert rules.get(str(task.resolve())) == HIDE


def test_the_default_user_config_folder_is_hidden_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("BATON_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    (tmp_path / "config" / "baton").mkdir(parents=True)
    checkout, task = tmp_path / "checkout", tmp_path / "task"
    checkout.mkdir()
    task.mkdir()
    policy = sandbox.policy_for(Launch(argv=["true"], cwd=str(checkout)), task, {})
    rules = {m.path: m.access for m in policy.mounts}
    assert rules.get(str((tmp_path / "config" / "baton").resolve())) == HIDE


def test_a_read_only_tasks_checkout_is_protected(tmp_path: Path) -> None:
    """``baton ask``: the checkout is mounted read-only (protect beats write on one path)."""
    checkout, task = tmp_path / "checkout", tmp_path / "task"
    checkout.mkdir()
    task.mkdir()
    launch = Launch(argv=["true"], cwd=str(checkout))
    where = str(checkout.resolve())
    writable = sandbox.policy_for(launch, task, {})
    assert {m.path: m.access for m in writable.mounts}[where] == WRITE
    policy = sandbox.policy_for(launch, task, {}, protect=(str(checkout),))
    assert {m.path: m.access for m in policy.mounts}[where] == PROTECT
    argv = sandbox.bwrap_argv(policy)
    at = argv.index(where)
    assert argv[at - 1] == "--ro-bind" and ["--bind", where, where] != argv[at - 1 : at + 2]
