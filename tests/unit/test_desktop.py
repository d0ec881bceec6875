"""Desktop notices: which events make one, their texts (masked, cut), the notifier's argv
on Linux and macOS, and the batching of bursts (baton.surfaces.desktop)."""

from __future__ import annotations

import asyncio
import json
import os
import stat
import sys
import time
from pathlib import Path

import pytest

from baton.config.schema import NOTIFY_KINDS
from baton.core.masking import MASK
from baton.surfaces import desktop
from baton.surfaces.desktop import (
    BODY_LIMIT,
    Batcher,
    Desktop,
    Notice,
    classify,
    command,
    masked,
    notice_of,
    summary,
)


def test_the_config_names_the_same_kinds() -> None:
    assert tuple(NOTIFY_KINDS) == desktop.KINDS


@pytest.mark.parametrize(
    ("to", "completion", "expected"),
    [
        ("needs_input", None, ("input", "needs input")),
        ("review", None, ("settled", "ready for review")),
        ("answered", None, ("settled", "answered")),
        ("failed", "worker_error", ("settled", "failed")),
        ("cancelled", "cancelled", ("settled", "cancelled")),
        ("interrupted", None, ("settled", "interrupted")),
        ("failed", "budget", ("budget", "stopped by its budget")),
        ("review", "budget", ("budget", "stopped by its budget")),
        ("running", None, None),
        ("applied", None, None),  # the user's own decision
        ("rejected", None, None),
        ("rate_limited", "rate_limit", None),  # it runs again by itself
    ],
)
def test_state_events_by_their_new_state_and_completion(
    to: str, completion: str | None, expected: tuple[str, str] | None
) -> None:
    data = {"from": "running", "to": to, "reason": "why"}
    if completion:
        data["completion"] = completion
    assert classify("state", data) == expected


@pytest.mark.parametrize("before", ["applied", "failed", "cancelled", "interrupted"])
def test_a_move_the_user_made_out_of_a_settled_state_is_no_notice(before: str) -> None:
    assert classify("state", {"from": before, "to": "review", "reason": "completed"}) is None
    assert classify("state", {"from": "needs_input", "to": "review"}) is not None


def test_other_events_are_notices_by_their_type_name() -> None:
    assert classify("text", {"text": "hi"}) is None
    assert classify("permission", {"tool": "Bash"}) is None  # its needs_input move is one
    # The budget event (websocket.md, Budget events): its alert is a notice, its stop not
    # (the state event with completion budget that follows it is).
    alert = {
        "kind": "alert",
        "scope": "project",
        "name": "/home/me/app",
        "day": "2026-12-01",
        "measure": "tokens",
        "used": 80412,
        "limit": 100000,
        "percent": 80,
    }
    assert classify("budget", alert) == ("budget", "budget alert")
    assert classify("budget", {"kind": "stop", "scope": "task", "message": "cap"}) is None
    n = notice_of("budget", alert, "t1", "Refactor")
    assert n is not None and n.title == "Baton: budget alert"
    assert (
        n.body
        == "Refactor: 80 % of today's tokens budget (80,412 of 100,000), project /home/me/app"
    )
    cost = {**alert, "measure": "cost", "used": 9.1, "limit": 10, "percent": 90}
    assert notice_of("budget", cost) == Notice(
        "budget",
        "budget alert",
        detail="90 % of today's cost budget ($9.10 of $10.00), project /home/me/app",
    )


def test_a_kind_plugs_in_by_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """A new kind of event (another engineer's) is one table entry away."""
    monkeypatch.setitem(desktop.ALERTS, "quota.warning", ("budget", "quota low"))
    n = notice_of("quota.warning", {"message": "80 % of today's tokens"}, "t1", "Fix it")
    assert n == Notice("budget", "quota low", "t1", "Fix it", "80 % of today's tokens")
    assert (n.title, n.body) == ("Baton: quota low", "Fix it: 80 % of today's tokens")


def test_texts_are_masked_and_cut_to_one_line() -> None:
    secret = "sk-live-0123456789abcdef"
    n = notice_of(
        "state",
        {"to": "failed", "reason": f"auth failed with {secret}\nsee log " + "x" * 400},
        "t1",
        f"Deploy with {secret}",
    )
    assert n is not None
    shown = masked(n, [secret])
    assert secret not in shown.body and secret not in shown.title
    assert shown.body.startswith(f"Deploy with {MASK}: auth failed with {MASK} see log xx")
    assert len(shown.body) == BODY_LIMIT and shown.body.endswith("…")
    assert "\n" not in shown.body


def test_a_burst_is_one_summary() -> None:
    batch = [Notice("settled", "ready for review", f"t{i}", f"Task {i}") for i in range(18)]
    batch += [Notice("settled", "failed", "f1", "Broken"), Notice("input", "needs input", "q")]
    title, body = summary(batch)
    assert title == "Baton: 20 tasks"
    assert body == "18 ready for review, 1 failed, 1 needs input. Task 0; Task 1; Task 2; …"
    one = Notice("settled", "answered", "t1", "Explain x", "no changes")
    assert summary([one]) == ("Baton: answered", "Explain x: no changes")


def _recorder(folder: Path, name: str) -> Path:
    """A stand-in notifier program: it appends its argv as one JSON line to ``calls``."""
    folder.mkdir(exist_ok=True)
    prog = folder / name
    prog.write_text(
        f"#!{sys.executable}\nimport json, sys\n"
        f"with open({str(folder / 'calls')!r}, 'a') as f:\n"
        "    f.write(json.dumps(sys.argv) + '\\n')\n"
    )
    prog.chmod(prog.stat().st_mode | stat.S_IXUSR)
    return prog


def _calls(folder: Path) -> list[list[str]]:
    path = folder / "calls"
    return [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []


def test_linux_argv_ends_the_options_before_the_texts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prog = _recorder(tmp_path / "bin", "notify-send")
    monkeypatch.setenv("PATH", str(prog.parent))
    argv = command(
        "Baton: failed", "-u critical: a title that looks like an option", platform="linux"
    )
    assert argv == [
        str(prog),
        "--app-name=Baton",
        "--",
        "Baton: failed",
        "-u critical: a title that looks like an option",
    ]
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert command("a", "b", platform="linux") is None


def test_macos_argv_passes_the_texts_as_arguments_never_as_script(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prog = _recorder(tmp_path / "bin", "osascript")
    monkeypatch.setenv("PATH", str(prog.parent))
    hostile = 'say "hi" \\ & do shell script "rm -rf ~"'
    argv = command("Baton: needs input", hostile, platform="darwin")
    assert argv == [
        str(prog),
        "-e",
        "on run argv",
        "-e",
        "display notification (item 2 of argv) with title (item 1 of argv)",
        "-e",
        "end run",
        "Baton: needs input",
        hostile,
    ]


async def test_desktop_runs_the_notifier_with_that_argv(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prog = _recorder(tmp_path / "bin", "notify-send")
    monkeypatch.setenv("PATH", f"{prog.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setattr(sys, "platform", "linux")
    assert await Desktop().show("Baton: answered", "Explain x: no changes")
    assert _calls(prog.parent) == [
        [str(prog), "--app-name=Baton", "--", "Baton: answered", "Explain x: no changes"]
    ]
    monkeypatch.setenv("PATH", str(tmp_path / "nowhere"))
    assert not await Desktop().show("a", "b")  # no notifier: nothing, and no error


async def test_batcher_sends_a_burst_as_one_and_keeps_its_rate() -> None:
    shown: list[tuple[float, str, str]] = []
    arrived = asyncio.Event()

    async def show(title: str, body: str) -> None:
        shown.append((time.monotonic(), title, body))
        arrived.set()

    b = Batcher(show, quiet=0.3, hold=3.0, gap=1.0)
    for i in range(20):  # a burst, 10 ms apart
        b.add(Notice("settled", "ready for review", f"t{i}", f"T{i}"))
        await asyncio.sleep(0.01)
    await asyncio.wait_for(arrived.wait(), 10)
    arrived.clear()
    assert [s[1] for s in shown] == ["Baton: 20 tasks"]
    first = shown[0][0]
    b.add(Notice("settled", "failed", "t21", "Late"))  # inside the gap: waits for it to pass
    b.add(Notice("settled", "failed", "t22", "Later"))
    await asyncio.wait_for(arrived.wait(), 10)
    assert [s[1:] for s in shown[1:]] == [("Baton: 2 tasks", "2 failed. Late; Later")]
    assert shown[1][0] - first >= 1.0
    await b.close()


async def test_batcher_hold_bounds_a_steady_stream() -> None:
    shown: list[str] = []

    async def show(title: str, body: str) -> None:
        shown.append(title)

    b = Batcher(show, quiet=0.5, hold=1.0, gap=0.1)
    start = time.monotonic()
    i = 0
    while not shown and time.monotonic() - start < 10:  # one every 0.2 s: never quiet
        b.add(Notice("settled", "answered", f"t{i}", f"T{i}"))
        i += 1
        await asyncio.sleep(0.2)
    assert shown and shown[0].startswith("Baton: ") and time.monotonic() - start < 3
    await b.close()


async def test_flush_sends_what_waits_at_once() -> None:
    shown: list[str] = []

    async def show(title: str, body: str) -> None:
        shown.append(body)

    b = Batcher(show, quiet=30.0)
    b.add(Notice("input", "needs input", "t1", "Ask", "which file?"))
    await b.flush()
    assert shown == ["Ask: which file?"]
