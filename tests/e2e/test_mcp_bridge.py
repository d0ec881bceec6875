"""`baton mcp` as an MCP client sees it: a real subprocess speaking MCP (JSON-RPC lines) on
stdio, a broker started on demand behind it, the real fake agent doing the work — and what a
lead agent pays for it, in characters read."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from baton.surfaces.mcp.schemas import OUTPUT
from baton.surfaces.mcp.tools import INSTRUCTIONS, TOOLS, chosen, size, wire_size
from tests.conftest import fake_script
from tests.e2e.test_cli import as_json, baton, stop_brokers

EDIT = fake_script(
    {"say": "editing", "chunks": 2},
    {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    summary="Changed a() to return 10.",
)
FIVE = "delegate,watch,inspect,diff,accept"
DOC = Path(__file__).parents[2] / "docs" / "reference" / "mcp.md"
#: What Claude Code adds to each definition it hands the model: ``mcp__baton__`` before the
#: name, and ``input_schema`` for ``inputSchema`` (``test_mcp_claude`` checks it).
CLAUDE_RENAMING = len("mcp__baton__") + len("input_schema") - len("inputSchema")
#: The rows of the doc's Sizes table, by what each one measures.
ROWS = {
    "list": f"the tool list ({len(TOOLS)} tools, each parameter described), with every request",
    "five": f"the tool list with `--tools {FIVE}`",
    "instructions": "the instructions, with every request",
    "delegate": "`delegate` answer",
    "watch": "`watch` answer once the task settles",
    "inspect": "`inspect` answer",
    "diff": "`diff` answer",
    "three": "delegate + watch + inspect",
    "claude": "Baton's tool definitions in each request of a real Claude Code session",
}


def doc_section(heading: str) -> str:
    """The text of one ``## heading`` section of docs/reference/mcp.md."""
    return DOC.read_text().split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]


def doc_sizes() -> dict[str, int]:
    """The "now" column of the doc's Sizes table, by the row's first cell."""
    rows = {}
    for line in doc_section("Sizes").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 3 and cells[2].replace(",", "").isdigit():
            rows[cells[0]] = int(cells[2].replace(",", ""))
    return rows


class McpProcess:
    def __init__(self, cwd: Path, *args: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "baton.cli", "mcp", "--cwd", str(cwd), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=dict(os.environ),
        )
        self.n = 0
        self.instructions = ""

    def send(self, msg: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        self.n += 1
        self.send({"jsonrpc": "2.0", "id": self.n, "method": method, "params": params or {}})
        assert self.proc.stdout is not None
        while True:
            line = self.proc.stdout.readline()
            assert line, f"baton mcp exited: {self.proc.stderr.read() if self.proc.stderr else ''}"
            msg = json.loads(line)
            if msg.get("id") == self.n:
                return dict(msg)

    def tool(self, name: str, **arguments: Any) -> tuple[str, bool]:
        res = self.request("tools/call", {"name": name, "arguments": arguments})
        assert "result" in res, res
        content = res["result"]["content"]
        error = bool(res["result"].get("isError"))
        if not error:  # what the client checks: the answer fits the tool's output schema
            jsonschema.validate(res["result"]["structuredContent"], OUTPUT[name])
        return content[0]["text"], error

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def initialize(proc: McpProcess) -> None:
    init = proc.request(
        "initialize",
        {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "test", "version": "1"},
        },
    )
    assert init["result"]["serverInfo"]["name"] == "baton"
    proc.instructions = init["result"]["instructions"]
    proc.send({"jsonrpc": "2.0", "method": "notifications/initialized"})


@pytest.fixture
def mcp(baton_home: Path, repo: Path, tmp_path: Path) -> Iterator[McpProcess]:
    proc = McpProcess(repo)
    initialize(proc)
    try:
        yield proc
    finally:
        proc.close()
        stop_brokers(tmp_path / "run" / "baton")


def test_tools_delegate_watch_inspect_diff_accept(mcp: McpProcess, repo: Path) -> None:
    tools = {t["name"]: t for t in mcp.request("tools/list")["result"]["tools"]}
    assert list(tools) == list(TOOLS)
    assert tools["delegate"]["inputSchema"]["required"] == ["instruction"]

    text, err = mcp.tool("delegate", instruction=EDIT)
    task = json.loads(text)
    assert not err and task["state"] == "queued" and task["next"] == ["watch", "cancel"]
    assert task["worker"] == "fake" and "title" not in task and "message" not in task

    text, err = mcp.tool("watch", ids=[task["id"]], timeout=30)
    watched = json.loads(text)
    assert not err and watched == {
        "id": task["id"],
        "state": "review",
        "summary": "Changed a() to return 10.",
        "next": ["diff", "accept", "reject", "reply"],
    }

    info = json.loads(mcp.tool("inspect", id=task["id"])[0])
    assert info == {
        "state": "review",
        "completion": "completed",
        "summary": "Changed a() to return 10.",
        "attempts": 1,
        "diff": "app.py +1 -1, 1 hunk pending",
        "next": ["diff", "accept", "reject", "reply"],
    }
    more = json.loads(mcp.tool("inspect", id=task["id"], detail="attempts")[0])
    assert set(more["detail"]) == {"attempts"}
    (attempt,) = more["detail"]["attempts"]
    assert attempt["completion"] == "completed" and attempt["exit_code"] == 0
    assert "out_path" not in attempt and None not in attempt.values()
    every = json.loads(mcp.tool("inspect", id=task["id"], detail="all")[0])["detail"]
    assert set(every) >= {"attempts", "events", "brief", "summary", "task"}
    assert "Do the scripted work" in every["brief"] and every["task"]["id"] == task["id"]
    assert None not in every["task"].values() and "instruction" not in every["task"]

    diff, _ = mcp.tool("diff", id=task["id"])
    assert "+    return 10" in diff and "@@ hunk " in diff and "cut at" not in diff

    steer, err = mcp.tool("task", id=task["id"], action="steer", text="go faster")
    assert err and "use reply" in steer and "next: diff, accept, reject, reply" in steer

    accepted = json.loads(mcp.tool("accept", id=task["id"])[0])
    assert accepted["task"] == {"id": task["id"], "state": "applied", "next": ["inspect"]}
    assert len(accepted["applied"]) == 1 and "conflicts" not in accepted
    assert "return 10" in (repo / "app.py").read_text()

    unknown, err = mcp.tool("inspect", id="nosuchtask")
    assert err and "no task" in unknown
    wrong, err = mcp.tool("inspect", id=task["id"], detail="everything")
    assert err and "detail" in wrong and "attempts" in wrong


def test_what_a_lead_agent_reads_fits_in_a_few_hundred_characters(
    mcp: McpProcess, repo: Path
) -> None:
    """The characters a lead agent pays for one small task (delegate, watch until it
    settles, the short inspect) and for the tool list sent with each of its requests — the
    figures docs/reference/mcp.md states."""
    tools = mcp.request("tools/list")["result"]["tools"]
    listed = size(tools)
    assert listed <= 3000, listed
    assert listed == size(t.definition() for t in TOOLS.values())  # what --print-tools says
    assert mcp.instructions == INSTRUCTIONS

    delegated, _ = mcp.tool("delegate", instruction=EDIT)
    tid = json.loads(delegated)["id"]
    watched, _ = mcp.tool("watch", ids=[tid], timeout=60)
    inspected, _ = mcp.tool("inspect", id=tid)
    assert json.loads(watched)["state"] == "review", watched
    read = len(delegated) + len(watched) + len(inspected)
    assert read <= 400, (read, delegated, watched, inspected)

    diffed, _ = mcp.tool("diff", id=tid)
    assert doc_sizes() == {
        ROWS["list"]: listed,
        ROWS["five"]: size(t.definition() for t in chosen(FIVE)),
        ROWS["instructions"]: len(mcp.instructions),
        ROWS["delegate"]: len(delegated),
        ROWS["watch"]: len(watched),
        ROWS["inspect"]: len(inspected),
        ROWS["diff"]: len(diffed),
        ROWS["three"]: read,
        ROWS["claude"]: listed + len(TOOLS) * CLAUDE_RENAMING,
    }
    wire = wire_size(tools)
    assert f"`tools/list` answer, output schemas and hints included, is {wire:,} char" in (
        " ".join(doc_section("Sizes").split())
    )


def test_a_trimmed_tool_list(baton_home: Path, repo: Path, tmp_path: Path) -> None:
    five = FIVE
    proc = McpProcess(repo, "--tools", five)
    try:
        initialize(proc)
        tools = proc.request("tools/list")["result"]["tools"]
        assert [t["name"] for t in tools] == five.split(",")
        assert size(tools) <= 1200, size(tools)
        res = proc.request("tools/call", {"name": "tasks", "arguments": {}})
        assert "error" in res or res["result"].get("isError"), res
    finally:
        proc.close()
        stop_brokers(tmp_path / "run" / "baton")
    shown = baton("mcp", "--print-tools", "--tools", five)
    assert shown.returncode == 0, shown.stderr
    assert f"5 tools, {size(tools):,} characters" in shown.stdout
    assert f"({size(tools):,} characters)" in doc_section("Trimming the list")
    doc = as_json(baton("mcp", "--print-tools", "--json"))
    assert [t["name"] for t in doc["tools"]] == list(TOOLS) and doc["characters"] <= 3000
    # The doc's excerpt of --print-tools is what it prints.
    full = baton("mcp", "--print-tools").stdout.splitlines()
    excerpt = doc_section("Sizes").split("`baton mcp --print-tools` shows", 1)[1]
    lines = [x for x in excerpt.split("```")[1].strip().splitlines() if x != "…"]
    assert lines and [x for x in lines if x not in full] == []
    bad = baton("mcp", "--tools", "delegate,nope")
    assert bad.returncode == 2 and "unknown tool 'nope'" in bad.stderr and "watch" in bad.stderr


def test_watch_answers_with_the_first_task_to_settle(mcp: McpProcess) -> None:
    slow = json.loads(mcp.tool("delegate", instruction=fake_script({"sleep": 60}))[0])["id"]
    fast = json.loads(mcp.tool("delegate", instruction=fake_script(summary="done fast"))[0])
    text, err = mcp.tool("watch", ids=[slow, fast["id"]], timeout=60)
    assert not err and json.loads(text) == {
        "id": fast["id"],
        "state": "answered",
        "summary": "done fast",
        "next": ["inspect", "retry"],
    }
    t0 = time.monotonic()
    text, _ = mcp.tool("watch", ids=[slow], timeout="0.5")  # a number's type goes unsaid
    late = json.loads(text)
    (line,) = late.pop("tasks")
    assert late == {"timeout": 0.5} and line["id"] == slow and set(line) == {"id", "state", "next"}
    assert line["state"] in ("queued", "preparing", "running") and "watch" in line["next"]
    assert time.monotonic() - t0 < 10
    refused, err = mcp.tool("watch", ids=[slow], timeout="soon")
    assert err and "timeout" in refused, refused
    cancelled = json.loads(mcp.tool("task", id=slow, action="cancel")[0])
    assert cancelled["id"] == slow


def test_watch_reports_a_rate_limit(mcp: McpProcess) -> None:
    """A task that hits a rate limit wakes the watch (it runs again by itself once the limit
    resets); the next watch waits for it to settle."""
    script = fake_script(
        {"sleep": 2},
        {"rate_limit": {"retry_after": 2}},
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
    )
    tid = json.loads(mcp.tool("delegate", instruction=script)[0])["id"]
    held = json.loads(mcp.tool("watch", ids=[tid], timeout=60)[0])
    assert held["state"] == "rate_limited" and held["completion"] == "rate_limit", held
    assert "retry after 2 s" in held["message"] and 0 <= held["retryIn"] <= 2
    assert held["next"] == ["watch", "cancel"]
    settled = json.loads(mcp.tool("watch", ids=[tid], timeout=60)[0])
    assert settled["state"] == "review", settled


def test_a_long_diff_is_cut_and_goes_on_at_its_offset(mcp: McpProcess, repo: Path) -> None:
    body = "".join(f"line {i} of a long new file\n" for i in range(3000))
    script = fake_script({"write": "big.txt", "content": body})
    tid = json.loads(mcp.tool("delegate", instruction=script)[0])["id"]
    assert json.loads(mcp.tool("watch", ids=[tid], timeout=60)[0])["state"] == "review"
    pages, offset = [], 0
    while True:
        page, err = mcp.tool("diff", id=tid, offset=str(offset) if pages else offset)
        assert not err and len(page) < 21_000
        marker = re.search(r"\n… \(cut at (\d+) of (\d+) chars: diff id=\w+ offset=(\d+)\)$", page)
        if marker is None:
            pages.append(page)
            break
        pages.append(page[: marker.start()] + "\n")
        offset = int(marker.group(3))
    assert len(pages) >= 4
    text = "".join(pages)
    assert text.count("+line ") == 3000 and "+line 2999 of a long new file" in text
    assert text.endswith("next: diff, accept, reject, reply")


def test_memory_and_workers_tools(mcp: McpProcess, repo: Path) -> None:
    fact = "Run make test before finishing."
    added = json.loads(mcp.tool("project", op="memory", text=fact)[0])
    assert [m["text"] for m in added] == [fact]
    workers = json.loads(mcp.tool("workers")[0])
    assert "fake" in [w["name"] for w in workers["workers"]]
    health = json.loads(mcp.tool("project", op="health")[0])
    assert health["ok"] and health["roots"] == [str(repo)]


def test_tool_definitions_describe_every_parameter_and_hint_their_effects() -> None:
    for spec in TOOLS.values():
        d = spec.definition()
        assert d["inputSchema"]["type"] == "object"
        for name, schema in d["inputSchema"].get("properties", {}).items():
            assert schema.get("description"), f"{spec.name}.{name} has no description"
            # A few words, not prose: every request of the agent carries them.
            assert len(schema["description"]) <= 24, f"{spec.name}.{name}: prose"
        assert d["outputSchema"]["type"] == "object"
        jsonschema.Draft202012Validator.check_schema(d["outputSchema"])
    hints = {t.name: t.definition()["annotations"] for t in TOOLS.values()}
    read_only = {n for n, h in hints.items() if h.get("readOnlyHint")}
    assert read_only == {"watch", "inspect", "diff", "tasks", "workers"}
    for name in ("accept", "reject", "task", "project"):
        assert hints[name] == {"readOnlyHint": False, "destructiveHint": True}
    assert hints["delegate"]["destructiveHint"] is False
    props = {t.name: t.properties for t in TOOLS.values()}
    assert "review" in props["tasks"]["state"]["items"]["enum"]
    assert props["project"]["op"]["enum"][:6] == [
        "plan",
        "approve",
        "bench",
        "love",
        "clean",
        "memory",
    ]
    assert "mechanical" in props["delegate"]["kind"]["enum"]
    assert TOOLS["task"].required == ("id", "action") and TOOLS["ask"].required == ("question",)
    assert (
        "cancel" in props["task"]["action"]["enum"]
        and "ask" not in props["delegate"]["kind"]["enum"]
    )


def test_answer_tool_reaches_the_broker(mcp: McpProcess) -> None:
    """``task`` ``answer`` is the websocket's ``answer``: with no waiting request, it says so."""
    delegated, _ = mcp.tool("delegate", instruction=EDIT)
    tid = json.loads(delegated)["id"]
    mcp.tool("watch", ids=[tid], timeout=60)
    text, error = mcp.tool("task", id=tid, action="answer", text="allow")
    assert error and "permission" in text.lower(), text
    listed, _ = mcp.tool("tasks", state=["review"])
    assert [t["id"] for t in json.loads(listed)] == [tid]
