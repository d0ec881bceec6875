"""The four ACP agents, real, through ``baton lsp``, against Baton's scripted model servers.

One task per agent, four turns in one ACP session (Claude: a new session after the cancel):

1. the model writes a plan, asks to run ``touch ran.txt`` → the LSP client gets the prompt
   (``window/showMessageRequest`` and ``baton/permission``) → Allow → the command runs → the
   model writes hello.txt → the diff reaches review;
2. reply: the model asks to run ``touch no.txt`` → Reject → the agent is told, the model
   answers, the task is back in review with nothing more;
3. reply: the model runs ``sleep 30`` → cancelled mid-turn (``session/cancel``) → cancelled;
4. retry: a follow-up prompt in the same session (Claude: a new one carrying the context) →
   review → accept: ran.txt and hello.txt reach the repository.

The CLIs and adapters come from ``scripts/install-agents``; missing ones skip LOUDLY.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.lsp_support import Session, start, stop, wait_for
from tests.e2e.test_acp_lsp import record_permissions, user_profile
from tests.support.modelserver import (
    Answer,
    CallContext,
    DenyAllProxy,
    Launch,
    ModelServer,
    Script,
    ToolCall,
    Turn,
    agent_bin,
    env_for_claude,
    env_for_codex,
    env_for_gemini,
    env_for_opencode,
    write_file,
)

pytestmark = pytest.mark.agents

SHELL = ("Bash", "bash", "run_shell_command", "exec_command", "shell")
PLAN = ("TodoWrite", "update_plan", "todowrite", "write_todos")
#: Calls home the agents make that Baton cannot switch off (refused by the proxy, harmless).
KNOWN_CALLS = ("raw.githubusercontent.com", "registry.npmjs.org")


def shell(command: str) -> ToolCall:
    def args(ctx: CallContext) -> dict[str, Any]:
        if ctx.tool.name == "exec_command":
            return {"cmd": command}
        if ctx.tool.name == "shell":
            return {"command": ["bash", "-lc", command]}
        return {"command": command, "description": f"run {command}"}

    args.command = command  # type: ignore[attr-defined]
    return ToolCall(SHELL, args)


def plan(ctx: CallContext) -> dict[str, Any]:
    steps = [("write code", "completed"), ("write tests", "in_progress"), ("run tests", "pending")]
    match ctx.tool.name:
        case "TodoWrite":
            return {"todos": [{"content": t, "status": s, "activeForm": t} for t, s in steps]}
        case "update_plan":
            return {"plan": [{"step": t, "status": s} for t, s in steps]}
        case "todowrite":
            return {
                "todos": [
                    {"id": str(i), "content": t, "status": s, "priority": "high"}
                    for i, (t, s) in enumerate(steps)
                ]
            }
        case _:
            return {"todos": [{"description": t, "status": s} for t, s in steps]}


def script_for(agent: Agent) -> Script:
    """The model's side of the scenario (an agent that ends its turn on a rejection gets no
    answer turn after it; Gemini gets no plan turn: its write_todos is not always offered)."""
    turns: list[Turn] = [ToolCall(PLAN, plan)] if agent.plans else []
    turns += [
        shell("touch ran.txt"),
        write_file("hello.txt", "hello from the model\n"),
        Answer("Wrote hello.txt."),
        shell("touch no.txt"),
    ]
    if agent.answers_after_reject:
        turns.append(Answer("Skipped it."))
    turns += [shell("sleep 30"), Answer("Continued.")]
    return Script.of(*turns)


@dataclass(frozen=True)
class Agent:
    name: str
    provider: str
    binary: str  # the CLI (also the ACP command for opencode and gemini)
    acp: str  # the ACP command
    env: Callable[[ModelServer, Path, str], Launch]
    allow: int  # index of the allow-once option in the agent's permission options
    reject: int
    plans: bool = True  # sends a plan (Gemini's write_todos reaches the client as no plan)
    same_session_after_cancel: bool = True
    answers_after_reject: bool = True  # the model is asked again after a rejection


AGENTS = {
    "claude": Agent(
        "claude",
        "claude",
        "claude",
        "claude-agent-acp",
        lambda srv, home, proxy: env_for_claude(srv, home, proxy=proxy, max_retries=0),
        allow=1,
        reject=2,
        same_session_after_cancel=False,
    ),
    "codex": Agent(
        "codex",
        "codex",
        "codex",
        "codex-acp",
        lambda srv, home, proxy: env_for_codex(srv, home, proxy=proxy),
        allow=0,
        reject=2,
        answers_after_reject=False,  # "abort" ends the turn
    ),
    "opencode": Agent(
        "opencode",
        "opencode",
        "opencode",
        "opencode",
        lambda srv, home, proxy: env_for_opencode(srv, home, proxy=proxy),
        allow=0,
        reject=2,
        answers_after_reject=False,  # the rejection is the tool's result; the turn ends
    ),
    "gemini": Agent(
        "gemini",
        "gemini",
        "gemini",
        "gemini",
        lambda srv, home, proxy: env_for_gemini(srv, home, proxy=proxy),
        allow=1,
        reject=2,
        plans=False,
    ),
}


def require(name: str) -> Path:
    binary = agent_bin(name)
    if not binary.exists():
        pytest.skip(
            f"!!! AGENT CLI '{name}' IS NOT INSTALLED ({binary} missing): "
            "run scripts/install-agents before the agent tests !!!"
        )
    return binary


async def events_of(lsp: Session, tid: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = (await lsp.command("baton.inspect", {"taskId": tid}))["events"]
    return found


async def inspect(lsp: Session, tid: str) -> dict[str, Any]:
    result: dict[str, Any] = await lsp.command("baton.inspect", {"taskId": tid, "events": 10_000})
    return result


@pytest.mark.parametrize("name", list(AGENTS))
async def test_permission_plan_reject_cancel_follow_up_accept(
    name: str, repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    agent = AGENTS[name]
    binary = require(agent.binary)
    require(agent.acp)
    agent_home = tmp_path / "agent-home"
    agent_home.mkdir()
    t0 = time.monotonic()
    with DenyAllProxy() as proxy, ModelServer(script_for(agent)) as srv:
        launch = agent.env(srv, agent_home, proxy.url)
        config_dir = {
            "claude": agent_home / ".claude",
            "codex": agent_home / ".codex",
        }.get(name)
        profile: dict[str, Any] = {
            "binary": str(binary),
            "env": launch.env,
            "options": {
                "transport": "acp",
                "acp_binary": str(agent_bin(agent.acp)),
                "acp_idle_exit": 20,
            },
        }
        if config_dir is not None:
            profile["config_dir"] = str(config_dir)
        user_profile(tmp_path, f"{name}-acp", agent.provider, **profile)
        options = {"worker": f"{name}-acp", "progressInterval": 0.0}
        lsp = await start("visual-studio-code", repo, baton_home, options=options)
        try:
            await scenario(lsp, agent, srv)
        finally:
            await stop(lsp)
        calls = [c for c in proxy.attempts if not any(k in c for k in KNOWN_CALLS)]
        assert calls == [], f"unexpected calls home: {calls}"
        assert srv.errors == []
    print(f"{name} over ACP: {time.monotonic() - t0:.1f} s")


async def scenario(lsp: Session, agent: Agent, srv: ModelServer) -> None:
    seen = record_permissions(lsp)
    lsp.rec.pick = agent.allow
    args = {
        "uri": lsp.uri("app.py"),
        "kind": "delegate",
        "instruction": "Run touch ran.txt, then create hello.txt with a greeting.",
    }
    tid = (await lsp.command("baton.delegate", args))["taskId"]

    # 1. Allow: the command runs, the change reaches review.
    assert await lsp.settle(tid, "review", "failed", "answered", timeout=90) == "review", (
        await inspect(lsp, tid)
    )["task"]["message"]
    asked = [q for q in lsp.rec.questions if "touch ran.txt" in q.message]
    assert asked, [q.message for q in lsp.rec.questions]
    first = next(p for p in seen if p["status"] == "pending" and "touch ran.txt" in str(p))
    assert first["kind"] == "execute" and first["taskId"] == tid
    info = await inspect(lsp, tid)
    task = info["task"]
    assert task["summary"].endswith("Wrote hello.txt.")
    worktree = Path(task["worktree"])
    steps = [  # what the agent did, should the command not have run (seen once under load)
        (e["type"], e.get("data"))
        for e in info.get("events", [])
        if e["type"] in ("permission", "tool", "tool_result", "error")
    ]
    assert (worktree / "ran.txt").exists(), steps  # the allowed command ran, in the worktree
    perms = [e["data"] for e in info["events"] if e["type"] == "permission"]
    answered = next(p for p in perms if p["status"] == "answered" and p.get("by") == "user")
    chosen = {o["id"]: o["kind"] for o in answered["options"]}[answered["answer"]]
    assert chosen == "allow_once"
    if agent.plans:
        reports = [getattr(v, "message", None) for v in lsp.progress_of(tid)]
        assert "1/3: write tests" in reports, reports
        assert [e["status"] for e in task["options"]["plan"]][:2] == ["completed", "in_progress"]
    shown = await lsp.command("baton.diff", {"taskId": tid})
    assert sorted(f["path"] for f in shown["files"]) == ["hello.txt", "ran.txt"]

    # 2. Reject: the agent is told and carries on.
    lsp.rec.pick = agent.reject
    pending_before = len([p for p in seen if p["status"] == "pending"])
    await lsp.command("baton.reply", {"taskId": tid, "text": "Now also run touch no.txt."})
    await wait_for(
        lambda: len([p for p in seen if p["status"] == "pending"]) > pending_before,
        timeout=60,
        what="the second permission request",
    )
    await wait_for(lambda: len(srv.main_requests) >= turns_to("touch no.txt", srv) + 1, timeout=60)
    assert await lsp.settle(tid, "review", "failed", timeout=60) == "review"
    info = await inspect(lsp, tid)
    assert not (worktree / "no.txt").exists()
    if agent.answers_after_reject:
        assert info["task"]["summary"].endswith("Skipped it.")
    rejected = [
        p for p in (e["data"] for e in info["events"] if e["type"] == "permission")
        if p["status"] == "answered" and "no.txt" in str(p)
    ]  # fmt: skip
    assert (
        rejected
        and {o["id"]: o["kind"] for o in rejected[-1]["options"]}[rejected[-1]["answer"]]
        == "reject_once"
    )

    # 3. Cancel mid-turn.
    lsp.rec.pick = agent.allow
    await lsp.command("baton.reply", {"taskId": tid, "text": "Now run sleep 30."})
    await wait_for(lambda: len(srv.main_requests) > turns_to("sleep 30", srv), timeout=60)
    await wait_for(lambda: sleeping(worktree), timeout=30, what="sleep 30 running")
    before = (await inspect(lsp, tid))["task"]["session_id"]
    t_cancel = time.monotonic()
    await lsp.command("baton.cancel", {"taskId": tid})
    assert await lsp.settle(tid, "cancelled", "failed", timeout=20) == "cancelled"
    assert time.monotonic() - t_cancel < 10

    # 4. Follow-up after the cancel: same session (Claude: a new one, context carried).
    await lsp.command("baton.retry", {"taskId": tid})
    assert await lsp.settle(tid, "review", "failed", "answered", timeout=60) == "review"
    info = await inspect(lsp, tid)
    attempts = info["attempts"]
    assert [a["reason"] for a in attempts] == ["first", "reply", "reply", "retry"]
    assert {a["transport"] for a in attempts} == {"acp"}
    assert len({a["pid"] for a in attempts}) == 1  # one runner held the session throughout
    assert attempts[2]["completion"] == "cancelled"
    after = info["task"]["session_id"]
    if agent.same_session_after_cancel:
        assert after == before
    else:
        assert after != before
        logs = [e["data"]["message"] for e in info["events"] if e["type"] == "log"]
        assert any("continuing in a new session" in m for m in logs)
    assert info["task"]["summary"].endswith("Continued.")
    await lsp.command("baton.accept", {"taskId": tid})
    await wait_for(lambda: (lsp.repo / "hello.txt").exists(), what="hello.txt accepted")
    assert (lsp.repo / "hello.txt").read_text() == "hello from the model\n"
    assert (lsp.repo / "ran.txt").exists() and not (lsp.repo / "no.txt").exists()


def turns_to(command: str, srv: ModelServer) -> int:
    """How many model turns come before the one that runs ``command``."""
    for i, turn in enumerate(srv.script.turns):
        if isinstance(turn, ToolCall) and getattr(turn.args, "command", None) == command:
            return i
    raise LookupError(command)


def sleeping(worktree: Path) -> bool:
    """Whether a ``sleep 30`` runs in the worktree (started by the agent's tool)."""
    import psutil

    for proc in psutil.process_iter(["cmdline", "cwd"]):
        cmd = [str(c) for c in proc.info.get("cmdline") or []]
        is_sleep = ("30" in cmd and any(c.endswith("sleep") for c in cmd)) or any(
            c.endswith("sleep 30") for c in cmd
        )
        if is_sleep and str(proc.info.get("cwd") or "").startswith(str(worktree)):
            return True
    return False


async def test_broker_killed_while_claude_asks_then_a_new_editor_finishes_it(
    repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    """kill -9 the editor's broker while a permission waits; the next ``baton lsp`` re-attaches
    to the task's runner, asks again, and the task finishes."""
    agent = AGENTS["claude"]
    binary = require(agent.binary)
    require(agent.acp)
    agent_home = tmp_path / "agent-home"
    agent_home.mkdir()
    script = Script.of(
        shell("touch ran.txt"),
        write_file("hello.txt", "hello after the restart\n"),
        Answer("Done after the restart."),
    )
    with DenyAllProxy() as proxy, ModelServer(script) as srv:
        launch = agent.env(srv, agent_home, proxy.url)
        user_profile(
            tmp_path,
            "claude-acp",
            "claude",
            binary=str(binary),
            env=launch.env,
            config_dir=str(agent_home / ".claude"),
            options={
                "transport": "acp",
                "acp_binary": str(agent_bin(agent.acp)),
                "acp_idle_exit": 20,
            },
        )
        options = {"worker": "claude-acp", "permissionPrompts": "inline"}
        first = await start("visual-studio-code", repo, baton_home, options=options)
        seen = record_permissions(first)
        args = {"uri": first.uri("app.py"), "kind": "delegate", "instruction": "Do it."}
        tid = (await first.command("baton.delegate", args))["taskId"]
        await wait_for(lambda: seen, timeout=60, what="the permission request")
        server = first.client._server
        assert server is not None
        server.kill()  # the broker dies; the runner and Claude live on
        await server.wait()
        await first.client.stop()

        second = await start(
            "visual-studio-code", repo, baton_home, options={"worker": "claude-acp"}
        )
        try:
            second.rec.pick = agent.allow
            # The new editor is asked again (window/showMessageRequest) and the answer goes
            # to the runner that held the request all along.
            await wait_for(lambda: second.rec.questions, timeout=30, what="the prompt again")
            assert "touch ran.txt" in second.rec.questions[0].message
            assert await second.settle(tid, "review", "failed", timeout=60) == "review"
            info = await inspect(second, tid)
            assert info["task"]["summary"].endswith("Done after the restart.")
            assert len({a["pid"] for a in info["attempts"]}) == 1
            logs = [e["data"]["message"] for e in info["events"] if e["type"] == "log"]
            assert any("adopted by broker" in m for m in logs)
            await second.command("baton.accept", {"taskId": tid})
            await wait_for(lambda: (repo / "hello.txt").exists(), what="accepted")
        finally:
            await stop(second)


@pytest.mark.parametrize("name", ["opencode", "gemini"])
async def test_a_cut_model_stream_ends_in_a_network_error(
    name: str, repo: Path, baton_home: Path, tmp_path: Path
) -> None:
    """OpenCode retries a cut stream forever, re-sending the same text: the repeat guard stops
    the turn. Gemini gives up after its attempts ("terminated", code 500). Both: network."""
    from baton.config.profiles import Profile, default_profiles
    from baton.runtime.requests import DelegateRequest
    from baton.runtime.supervisor import Limits, Supervisor
    from tests.support.modelserver import CutStream

    agent = AGENTS[name]
    binary = require(agent.binary)
    agent_home = tmp_path / "agent-home"
    agent_home.mkdir()
    with DenyAllProxy() as proxy, ModelServer(Script.of(CutStream(times=None))) as srv:
        launch = agent.env(srv, agent_home, proxy.url)
        options = {"transport": "acp", "acp_idle_exit": 20}
        profile = Profile(
            name=name, provider=name, binary=str(binary), env=launch.env, options=options
        )
        sup = Supervisor(
            baton_home,
            profiles={**default_profiles(), name: profile},
            limits=Limits(stall_after=60),
        )
        await sup.start()
        try:
            t0 = time.monotonic()
            req = DelegateRequest(instruction="Say something.", root=str(repo), worker=name)
            tid = (await sup.delegate(req)).id
            while (task := await sup.get(tid)).state not in ("failed", "review", "answered"):
                assert time.monotonic() - t0 < 45, f"{name} still {task.state}"
                await asyncio.sleep(0.1)
            assert task.state == "failed" and task.completion == "network", task.message
            print(f"{name}: cut stream → {task.message!r} in {time.monotonic() - t0:.1f} s")
        finally:
            await sup.close()
