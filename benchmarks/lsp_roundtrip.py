"""Round trips of ``baton lsp`` while the broker inside it is busy.

20 fake agents each stream 100 events/s (``stream`` step) through the server's broker —
every event committed to SQLite, fanned out to the server's listener and folded into a
work-done progress. Meanwhile a client measures, over stdio like an editor:

* ``textDocument/codeAction`` round trips (every ~10 ms), and
* ``workspace/executeCommand baton.delegate`` round trips (every ~100 ms; each one really
  delegates a small task: snapshot, worktree and agent start in the background).

Beside each, its floor, measured in the same loop (the order alternating every time): a bare
pygls server on stdio answering the same codeAction with the same actions, and
``workspace/executeCommand baton.delegate`` with an answer of the same shape — what an LSP
round trip costs on this machine at that moment, under the same 20 agents. Measured in
``--rounds`` rounds of ``--seconds`` each (the agents stream through all of them); prints
each round's median, p99 and max in ms, then the figures: the medians over the rounds of
each round's median and p99, beside the floor's, and the machine's load average. Goal: p99
≤ 1.5x the bare server's p99 (and ≤ 20 ms each).
Run: .venv/bin/python benchmarks/lsp_roundtrip.py [--seconds 5] [--rounds 5] [--agents 20]
[--rate 100] [--quick] [--loop-probe] [--server-path DIR]  (another checkout's Baton:
``benchmarks/figures.py``; ``--loop-probe``: what held the server's event loop, from
``benchmarks/loop_probe.py``)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import signal
import statistics
import sys
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pytest_lsp import client_capabilities

import loop_probe
from baton.surfaces.lsp.documents import path_to_uri
from figures import add_server_path, fake_workspace, figure, measure, median, pct, use_server

APP = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"


#: A bare pygls server: the same codeAction answer (the actions given as JSON), and a
#: ``baton.delegate`` command answering like Baton's.
BARE_SERVER = r"""
import json, sys
from lsprotocol import types
from pygls.lsp.server import LanguageServer

ACTIONS = json.loads(sys.argv[1])
server = LanguageServer("bare", "0")

@server.feature(types.TEXT_DOCUMENT_CODE_ACTION)
def actions(ls, params):
    return ACTIONS  # the JSON Baton's server answered, as it is

@server.command("baton.delegate")
def delegate(ls, *args):
    return {"taskId": "0abc123defg", "state": "queued"}

server.start_io()
"""


def script(*steps: dict[str, Any]) -> str:
    return "Scripted\n\n```baton-fake\n" + json.dumps({"steps": list(steps)}) + "\n```\n"


def server_command() -> list[str]:
    """``baton lsp`` as an editor starts it: the installed script, while the interpreter its
    first line names is there (a shared environment may have been installed from a checkout
    since removed); else the same entry point through this interpreter."""
    entry = Path(sys.executable).parent / "baton"
    if entry.exists():
        first = entry.read_text(errors="replace").partition("\n")[0]
        if not first.startswith("#!") or Path(first[2:].strip().split()[0]).exists():
            return [str(entry), "lsp"]
    return [sys.executable, "-c", "import sys; from baton.cli import main; sys.exit(main(['lsp']))"]


def report(name: str, samples: list[float]) -> float:
    samples = sorted(samples)
    p99 = pct(samples, 99)
    print(
        f"{name:>10}: {len(samples):4d} round trips  median {statistics.median(samples):.2f} ms  "
        f"p99 {p99:.2f} ms  max {samples[-1]:.2f} ms"
    )
    return p99


class Client:
    """A minimal editor: answers the server's requests and counts its notifications."""

    def __init__(self) -> None:
        self.lsp = LanguageClient("bench", "0")
        self.notes: dict[str, int] = {}
        for method in ("baton/tasks", "baton/status", "baton/diff", types.PROGRESS):
            self.lsp.feature(method)(self._counter(method))
        self.lsp.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)(lambda params: None)
        self.lsp.feature(types.WORKSPACE_CODE_LENS_REFRESH)(lambda params: None)
        self.lsp.feature(types.WINDOW_SHOW_MESSAGE)(lambda params: None)
        self.lsp.feature(types.WINDOW_SHOW_DOCUMENT)(
            lambda params: types.ShowDocumentResult(success=True)
        )

    def _counter(self, method: str) -> Any:
        def count(params: Any) -> None:
            self.notes[method] = self.notes.get(method, 0) + 1

        return count

    async def command(self, name: str, arg: dict[str, Any] | None = None) -> Any:
        return await self.lsp.workspace_execute_command_async(
            types.ExecuteCommandParams(command=name, arguments=[arg] if arg else [])
        )


async def bare_client(actions: Any, env: dict[str, str], cwd: Path) -> LanguageClient:
    """A client of the bare pygls server, initialized."""
    lsp = LanguageClient("bench-floor", "0")
    dumped = json.dumps(lsp.protocol._converter.unstructure(actions))
    await lsp.start_io(sys.executable, "-c", BARE_SERVER, dumped, env=env, cwd=str(cwd))
    await lsp.initialize_async(
        types.InitializeParams(capabilities=client_capabilities("visual-studio-code"))
    )
    lsp.initialized(types.InitializedParams())
    return lsp


async def run(
    seconds: float, agents: int, rate: float, rounds: int, warm: float = 1.0, probe: bool = False
) -> tuple[float, float]:
    repo, env = fake_workspace("baton-bench-lsp-", {"app.py": APP})
    uri = path_to_uri(repo / "app.py")
    client = Client()
    server_env = env
    probe_out = repo.parent / "loop-probe.json"
    if probe:  # the server's loop is timed, callback by callback (benchmarks/loop_probe.py)
        site = repo.parent / "probe-site"
        site.mkdir()
        probed = loop_probe.environment(str(site), str(probe_out))
        rest = env.get("PYTHONPATH")
        server_env = env | probed | {"PYTHONPATH": str(site) + (os.pathsep + rest if rest else "")}
    await client.lsp.start_io(*server_command(), env=server_env, cwd=str(repo))
    await client.lsp.initialize_async(
        types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"),
            root_uri=path_to_uri(repo),
            workspace_folders=[types.WorkspaceFolder(uri=path_to_uri(repo), name="repo")],
            process_id=os.getpid(),
        )
    )
    client.lsp.initialized(types.InitializedParams())
    client.lsp.text_document_did_open(
        types.DidOpenTextDocumentParams(types.TextDocumentItem(uri, "python", 1, APP))
    )
    selection = {"start": {"line": 0, "character": 0}, "end": {"line": 2, "character": 0}}
    count = int(rate * (seconds * rounds + 3))  # streaming through every round
    streams = []
    for _ in range(agents):
        instruction = script({"stream": count, "rate": rate, "size": 64})
        result = await client.command(
            "baton.delegate", {"uri": uri, "range": selection, "instruction": instruction}
        )
        streams.append(result["taskId"])
    # Let every agent reach full speed before measuring.
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        listed = await client.command("baton.tasks", {"states": ["running"]})
        if len(listed["tasks"]) >= agents:
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(warm)

    action_params = types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri),
        range=types.Range(types.Position(0, 0), types.Position(2, 0)),
        context=types.CodeActionContext(diagnostics=[]),
    )
    answer = await client.lsp.text_document_code_action_async(action_params)
    bare = await bare_client(answer, env, repo)
    # Per round, each side's round trips (ms): the figures are medians over the rounds of
    # each round's median and p99, so one slow moment of the machine moves one round only.
    actions: list[list[float]] = []
    delegations: list[list[float]] = []
    floor_actions: list[list[float]] = []
    floor_delegations: list[list[float]] = []
    small = script({"say": "hello"})
    delegate_args = {"uri": uri, "range": selection, "instruction": small}
    delegate = types.ExecuteCommandParams(command="baton.delegate", arguments=[delegate_args])
    server_pid = client.lsp._server.pid if client.lsp._server is not None else None
    if probe and server_pid is not None:
        os.kill(server_pid, signal.SIGUSR1)  # the probe measures the rounds only
    cpu_before, rounds_start = cpu_seconds(server_pid), time.monotonic()
    i = 0
    for _ in range(rounds):
        for got in (actions, delegations, floor_actions, floor_delegations):
            got.append([])
        end = time.monotonic() + seconds
        j = 0  # a delegation every 10 codeActions, from each round's first
        while time.monotonic() < end:
            for ours in (True, False) if i % 2 == 0 else (False, True):
                lsp = client.lsp if ours else bare
                t0 = time.perf_counter()
                await lsp.text_document_code_action_async(action_params)
                (actions if ours else floor_actions)[-1].append((time.perf_counter() - t0) * 1000)
            if j % 10 == 0:
                for ours in (True, False) if j % 20 == 0 else (False, True):
                    lsp = client.lsp if ours else bare
                    t0 = time.perf_counter()
                    await lsp.workspace_execute_command_async(delegate)
                    took = (time.perf_counter() - t0) * 1000
                    (delegations if ours else floor_delegations)[-1].append(took)
            i += 1
            j += 1
            await asyncio.sleep(0.01)
    rounds_took = time.monotonic() - rounds_start
    cpu_after = cpu_seconds(server_pid)
    await bare.shutdown_async(None)
    bare.exit(None)
    await bare.stop()  # type: ignore[no-untyped-call]  # pygls leaves it untyped

    events = 0
    for task_id in streams:
        inspect = await client.command("baton.inspect", {"taskId": task_id, "events": 0})
        events += inspect["eventCount"]
    for task_id in streams:
        try:
            await client.command("baton.cancel", {"taskId": task_id})
        except Exception:
            pass  # already finished
    print(
        f"{agents} agents streaming {rate:.0f} events/s; {events} events committed by them; "
        f"notifications received: {dict(sorted(client.notes.items()))}"
    )
    for r in range(rounds):
        print(f"round {r + 1}:")
        for name, got in (
            ("codeAction", actions),
            ("delegate", delegations),
            ("bare codeAction", floor_actions),
            ("bare delegate", floor_delegations),
        ):
            report(name, got[r])
    p_action = median([pct(v, 99) for v in actions])
    p_delegate = median([pct(v, 99) for v in delegations])
    for name, baton, floor in (
        ("codeAction", actions, floor_actions),
        ("executeCommand baton.delegate", delegations, floor_delegations),
    ):
        for stat, value in (("median", median), ("p99", lambda v: pct(v, 99))):
            figure(
                f"LSP {name}, {agents} tasks streaming",
                median([value(v) for v in baton]),
                median([value(v) for v in floor]),
                "a bare pygls server answering the same request",
                runs=rounds,
                stat=stat,
                of=f"rounds' {stat}s, round trips interleaved "
                f"({sum(map(len, baton))} of Baton's in all)",
            )
    for what, before, after in zip(
        ("process", "event loop's thread"), cpu_before, cpu_after, strict=True
    ):
        measure(
            f"LSP server CPU during the rounds, {what}", (after - before) / rounds_took * 100, "%"
        )
    await client.lsp.shutdown_async(None)
    client.lsp.exit(None)
    await client.lsp.stop()  # type: ignore[no-untyped-call]  # pygls leaves it untyped
    if probe:
        print_probe(probe_out)
    return p_action, p_delegate


def cpu_seconds(pid: int | None) -> tuple[float, float]:
    """CPU seconds (user + system) of process ``pid`` and of its main thread (the event
    loop's), from /proc; zeros where it cannot be read."""

    def read(stat: str) -> float:
        try:
            fields = Path(stat).read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            return 0.0
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    if pid is None:
        return 0.0, 0.0
    return read(f"/proc/{pid}/stat"), read(f"/proc/{pid}/task/{pid}/stat")


def print_probe(path: Path) -> None:
    """What the loop probe of the server saw during the rounds (and its measures)."""
    for _ in range(50):  # written by the server as it exits
        if path.exists() and path.stat().st_size:
            break
        time.sleep(0.1)
    else:
        print("loop probe: no report (the server did not exit cleanly?)")
        return
    got = json.loads(path.read_text())
    print(loop_probe.summary(got))
    per_s = 1 / got["wall_s"] if got["wall_s"] else 0.0
    measure("LSP server loop callbacks held > 2 ms, per s", got["over_2ms"] * per_s, "/s")
    measure("LSP server loop callbacks held > 5 ms, per s", got["over_5ms"] * per_s, "/s")
    measure("LSP server loop busy share", got["busy_share"] * 100, "%")
    measure("LSP server loop callbacks per s", got["callbacks"] * per_s, "/s")
    measure("LSP server loop iteration busy p99", got["iteration_busy_ms"]["99"], "ms")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--agents", type=int, default=20)
    parser.add_argument("--rate", type=float, default=100.0)
    parser.add_argument("--rounds", type=int, default=5, help="measured rounds of --seconds")
    parser.add_argument("--quick", action="store_true", help="2 agents, 1 s: a smoke run")
    parser.add_argument(
        "--loop-probe",
        action="store_true",
        help="time the server's event loop callback by callback during the rounds "
        "(benchmarks/loop_probe.py) and print what held it",
    )
    add_server_path(parser)
    args = parser.parse_args()
    use_server(args.server_path)
    if args.quick:
        args.seconds, args.agents, args.rounds = 1.0, 2, 1
    print(f"cpus: {os.cpu_count()}  load average before: {os.getloadavg()}")
    p_action, p_delegate = asyncio.run(
        run(
            args.seconds,
            args.agents,
            args.rate,
            args.rounds,
            0.2 if args.quick else 1.0,
            args.loop_probe,
        )
    )
    print(f"load average after: {os.getloadavg()}")
    ok = p_action <= 20 and p_delegate <= 20
    print("target p99 ≤ 20 ms each:", "met" if ok else "NOT met")
    return 0  # the figures say how far; a miss is a result, not a failure to measure


if __name__ == "__main__":
    sys.exit(main())
