"""The dashboard page end to end in real headless Chromium (playwright-core, Debian's
chromium) against a real broker running 20 fake-agent tasks of three workers: the page opens
from the one-time URL, the timeline has a lane per worker with a row of bars per task, the
live transcript of a streaming task grows over the live socket (no snapshot fetched again),
the per-worker table's numbers are the broker's own records summed, the diff shows hunk by
hunk, the CSV export lists every task, and (the broker's actions turned on) a hunk is
accepted from the page into the user's file; all of it under a Content-Security-Policy that
allows only the page's own scripts, styles, API and socket (no inline script or style).
Screenshots go to artifacts/dashboard/. The clicking and reading is
clients/dashboard/test/e2e/page.mjs.

Framed by another site, as an editor's webview frames it (clients/dashboard/test/e2e/framed.mjs,
screenshots in artifacts/dashboard-framed/): the page holds a framed session — no cookie, its
id sent as a header and never as a Referer — shows the tasks live, downloads its CSV and
accepts a hunk; the framing page, given the id, can use it neither by fetch nor by WebSocket;
the link framed again is refused, and the frame reloaded has no session.

Set-up as the VS Code e2e (scripts/install-vscode-test: Chromium, Node 24, playwright-core);
if it cannot, this test FAILS saying what is missing.
"""

from __future__ import annotations

import csv
import io
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from baton.surfaces.ws.blocking import BlockingClient, connect_for
from tests.conftest import fake_script, user_config
from tests.e2e.vscode_support.workbench import ROOT, Tools

pytestmark = pytest.mark.slow

ARTIFACTS = ROOT / "artifacts" / "dashboard"
DRIVER = ROOT / "clients" / "dashboard" / "test" / "e2e" / "page.mjs"
FRAMED_DRIVER = DRIVER.with_name("framed.mjs")
FRAMED_ARTIFACTS = ROOT / "artifacts" / "dashboard-framed"
PLAYWRIGHT = ROOT / "clients" / "vscode" / "node_modules" / "playwright-core"
WORKERS = ("fake-a", "fake-b", "fake-c")
TASKS = 20
STREAM_LINES = 40  # a line a second: it still streams on a loaded machine when the page looks

CONFIG = "".join(
    f'[profiles.{w}]\nprovider = "fake"\nmodel = "fake-model"\nconcurrency = 2\n' for w in WORKERS
) + (
    '[prices."fake-model"]\ninput = 2.0\ncached_input = 0.5\noutput = 8.0\n'
    "[dashboard]\nactions = true\n"  # the page may accept: one hunk is accepted from it
    # a check on every result: the tasks go through verifying, the page shows its verdict
    '[[verify]]\nname = "tests"\nargv = ["sh", "-c", "echo checked; grep -q return app.py"]\n'
)


def _streaming() -> str:
    """The task whose transcript the page watches: a line a second for a while."""
    steps: list[dict[str, Any]] = []
    for n in range(1, STREAM_LINES + 1):
        steps += [{"say": f"line {n} of the stream\n"}, {"sleep": 1.0}]
    steps += [
        {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
        {"usage": {"input": 5000, "cached": 400, "output": 300}},
    ]
    return fake_script(*steps, summary="The stream ended.")


def _task(n: int, worker: str) -> str:
    usage: dict[str, Any] = {"input": 100 * n, "cached": 10 * n, "output": 7 * n}
    if worker == "fake-c":  # this CLI reports its cost; the others' is estimated
        usage["cost"] = round(0.001 * n, 6)
    return fake_script(
        {"say": f"task {n} on {worker}: looking\n"},
        {"sleep": 1.0 + (n % 3) * 0.5},
        {"edit": "app.py", "old": "    return 2\n", "new": f"    return {100 + n}\n"},
        {"usage": usage},
        summary=f"task {n} done",
    )


@pytest.fixture
def broker(repo: Path, baton_home: Path, tmp_path: Path) -> Iterator[BlockingClient]:
    """A headless broker for ``repo`` (started as the CLI starts one), ended after the test."""
    user_config(tmp_path, CONFIG)
    client = connect_for(repo, timeout=60)
    try:
        yield client
    finally:
        pid = client.info.pid
        client.close()
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:  # gone, or a zombie this process has not reaped
            try:
                if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                    break
            except psutil.NoSuchProcess:
                break
            time.sleep(0.05)


def _sums(tasks: list[dict[str, Any]]) -> dict[str, dict[str, float]]:
    """The broker's own records summed per worker, as the page's table should show them."""
    out: dict[str, dict[str, float]] = {}
    for t in tasks:
        row = out.setdefault(
            t["worker"], {"tasks": 0, "input": 0, "cached": 0, "output": 0, "cost": 0.0}
        )
        u = t.get("usage") or {}
        row["tasks"] += 1
        for k in ("input", "cached", "output"):
            row[k] += int(u.get(k) or 0)
        row["cost"] += float(u.get("cost") or 0.0)
    return out


def test_the_dashboard_shows_twenty_streaming_tasks_live(
    tools: Tools,
    broker: BlockingClient,
    repo: Path,
    tmp_path: Path,
) -> None:
    shutil.rmtree(ARTIFACTS, ignore_errors=True)
    ARTIFACTS.mkdir(parents=True)
    assert PLAYWRIGHT.is_dir(), "scripts/install-vscode-test installs playwright-core"
    streaming = broker.call(
        "delegate", instruction=_streaming(), cwd=str(repo), worker="fake-a", title="streaming"
    )["task"]["id"]
    ids = [streaming]
    for n in range(1, TASKS):
        worker = WORKERS[n % len(WORKERS)]
        answer = broker.call(
            "delegate", instruction=_task(n, worker), cwd=str(repo), worker=worker, title=f"t{n}"
        )
        ids.append(answer["task"]["id"])
    url = broker.call("dashboard")["url"]
    assert url.startswith("http://127.0.0.1:") and "/dashboard/?t=" in url

    env = {
        **os.environ,
        "PATH": f"{tools.node24.parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "BATON_E2E_URL": url,
        "BATON_E2E_ARTIFACTS": str(ARTIFACTS),
        "BATON_E2E_PROFILE": str(tmp_path / "chromium"),
        "BATON_E2E_CHROMIUM": str(tools.chromium),
        "BATON_E2E_STREAMING": streaming,
        "BATON_E2E_TASKS": str(TASKS),
        "BATON_E2E_WORKERS": ",".join(WORKERS),
        "BATON_E2E_PLAYWRIGHT": str(PLAYWRIGHT),
    }
    started = time.monotonic()
    proc = subprocess.run(
        [str(tools.node24), str(DRIVER)], capture_output=True, text=True, env=env, timeout=560
    )
    steps = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    (ARTIFACTS / "steps.json").write_text(json.dumps(steps, indent=2))
    print(f"page.mjs: {time.monotonic() - started:.1f} s", file=sys.stderr)
    assert proc.returncode == 0, f"{proc.stderr[-4000:]}\nsteps: {json.dumps(steps)[-4000:]}"
    by = {s["step"]: s for s in steps}
    # A connection of its own for what follows: the first went unread while the page ran
    # (the blocking client answers no keepalive ping).
    broker.close()
    again = connect_for(repo, start=False)

    # The one-time URL became a session: the page is at /dashboard/ and live.
    live = by["page-live"]
    assert live["url"].endswith("/dashboard/") and "?t=" not in live["url"], live["url"]
    assert live["live"] == "live"
    assert sorted(lane["worker"] for lane in live["lanes"]) == sorted(WORKERS)

    # The live transcript grew while the task streamed, pushed over the socket: the page
    # fetched no snapshot meanwhile.
    streamed = by["transcript-streaming"]
    assert "line 2 of the stream" in streamed["first"]
    assert len(streamed["second"]) > len(streamed["first"]) + 12
    assert streamed["second"].startswith(streamed["first"].rstrip()[:40])
    assert streamed["state"].startswith("running"), streamed["state"]
    assert streamed["snapshotsAfter"] == streamed["snapshotsBefore"] == 1

    # Every task settled; the timeline has a row per task in its worker's lane, with bars
    # of the phases each went through.
    settled = by["all-settled"]
    assert sorted(i for i, _ in settled["states"]) == sorted(ids)
    assert {s for _, s in settled["states"]} == {"review"}, settled["states"]
    lanes = {lane["worker"]: lane for lane in settled["lanes"]}
    records = [again.call("get", id=i)["task"] for i in ids]
    sums = _sums(records)
    for w in WORKERS:
        assert lanes[w]["rows"] == sums[w]["tasks"], lanes[w]
        phases = lanes[w]["phases"]
        assert {"preparing", "running", "verifying", "review"} <= set(phases), phases
        assert phases["running"] >= sums[w]["tasks"] and phases["review"] == sums[w]["tasks"]

    # The per-worker table: the broker's records summed, to the token and the cent.
    table = {r["worker"]: r for r in settled["workers"]}
    assert set(table) == set(WORKERS)
    for w in WORKERS:
        row, want = table[w], sums[w]
        for k in ("tasks", "input", "cached", "output"):
            assert int(row[k]) == want[k], (w, k, row, want)
        assert want["cost"] > 0 and abs(float(row["cost"]) - want["cost"]) < 1e-9, (w, row, want)
    assert sum(int(r["tasks"]) for r in table.values()) == TASKS

    # The streaming task's diff, hunk by hunk, and the files its tools touched.
    shown = by["diff-shown"]
    assert len(shown["hunks"]) == 1 and "+    return 10" in shown["hunks"][0], shown["hunks"]
    assert "app.py" in shown["files"]
    assert shown["checks"].startswith("✓ tests"), shown["checks"]
    assert f"line {STREAM_LINES} of the stream" in shown["transcript"]

    # The CSV export: a row per task, the broker's numbers.
    exported = by["csv"]
    assert exported["status"] == 200 and exported["type"].startswith("text/csv")
    assert exported["href"].endswith("export.csv?window=24h")
    rows = list(csv.DictReader(io.StringIO(exported["text"])))
    assert sorted(r["id"] for r in rows) == sorted(ids)
    by_id = {t["id"]: t for t in records}
    for r in rows:
        t = by_id[r["id"]]
        assert r["worker"] == t["worker"] and r["state"] == "review"
        assert int(r["input_tokens"]) == t["usage"]["input"], (r, t["usage"])
        assert int(r["output_tokens"]) == t["usage"]["output"], (r, t["usage"])

    # With the broker's actions on, the page accepted the streaming task's hunk: the file
    # has it, the task is applied.
    accepted = by["hunk-accepted"]
    assert accepted["moves"] == ["Accept all", "Reject all"], accepted
    assert accepted["result"] == "accept: done" and "accepted" in accepted["hunk"], accepted
    assert "    return 10\n" in (repo / "app.py").read_text()
    assert again.call("get", id=streaming)["task"]["state"] == "applied"
    again.close()

    # Another window: a fresh snapshot, the CSV link follows.
    changed = by["window-changed"]
    assert changed["csv"].endswith("window=1h") and len(changed["lanes"]) == len(WORKERS)

    gone = by["session-gone"]["summary"]
    assert gone.startswith("No session") and "baton dashboard" in gone, gone

    done = by["done"]
    assert done["consoleErrors"] == [], done["consoleErrors"]
    assert done["goneErrors"] and all("401" in e for e in done["goneErrors"]), done["goneErrors"]
    # The page ran under the strict policy it asks of the broker (see the driver).
    assert done["violations"] == [] and "style-src 'self';" in done["csp"], done
    assert done["routed"] >= 1, done
    # Snapshots: the first, one per window change (1h, then 6h refused); never polled.
    assert done["requests"].count("/dashboard/api/snapshot") == 3, done["requests"]
    shots = sorted(p.name for p in ARTIFACTS.glob("*.png"))
    assert len(shots) == 8 and not any("FAILED" in s for s in shots), shots


def test_a_framed_page_has_a_session_no_other_origin_can_use(
    tools: Tools,
    broker: BlockingClient,
    repo: Path,
    tmp_path: Path,
) -> None:
    shutil.rmtree(FRAMED_ARTIFACTS, ignore_errors=True)
    FRAMED_ARTIFACTS.mkdir(parents=True)
    ids = [
        broker.call(
            "delegate",
            instruction=_task(n, "fake-a"),
            cwd=str(repo),
            worker="fake-a",
            title=f"t{n}",
        )["task"]["id"]
        for n in (1, 2)
    ]
    deadline = time.monotonic() + 240
    while {broker.call("get", id=i)["task"]["state"] for i in ids} != {"review"}:
        assert time.monotonic() < deadline, [broker.call("get", id=i)["task"] for i in ids]
        time.sleep(0.5)
    url = broker.call("dashboard")["url"]
    env = {
        **os.environ,
        "BATON_E2E_URL": url,
        "BATON_E2E_ARTIFACTS": str(FRAMED_ARTIFACTS),
        "BATON_E2E_PROFILE": str(tmp_path / "chromium"),
        "BATON_E2E_CHROMIUM": str(tools.chromium),
        "BATON_E2E_TASKS": str(len(ids)),
        "BATON_E2E_PLAYWRIGHT": str(PLAYWRIGHT),
    }
    proc = subprocess.run(
        [str(tools.node24), str(FRAMED_DRIVER)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    steps = [json.loads(line) for line in proc.stdout.splitlines() if line.startswith("{")]
    (FRAMED_ARTIFACTS / "steps.json").write_text(json.dumps(steps, indent=2))
    assert proc.returncode == 0, f"{proc.stderr[-4000:]}\nsteps: {json.dumps(steps)[-4000:]}"
    by = {s["step"]: s for s in steps}
    port = url.split(":")[2].split("/")[0]

    live = by["framed-live"]
    assert live["frameUrl"] == f"http://127.0.0.1:{port}/dashboard/", live  # the token gone
    assert live["live"] == "live" and live["rows"] == len(ids)
    assert live["cookies"] == [] and live["sessionInDom"] is False, live
    # Every request of the page carried the session as its header, none a cookie or a Referer.
    sent = by["done"]["sent"]
    api = [r for r in sent if "/api/" in r["path"]]  # (the socket's are not listed)
    assert "/dashboard/api/snapshot" in {r["path"] for r in api}, sent
    assert all(r["session"] for r in api), api
    assert not [r for r in sent if r["cookie"] or r["referer"]], sent

    exported = by["csv-framed"]
    assert exported["name"] == "baton-tasks-24h.csv"
    assert sorted(r["id"] for r in csv.DictReader(io.StringIO(exported["text"]))) == sorted(ids)

    accepted = by["hunk-accepted-framed"]
    assert accepted["result"] == "accept: done", accepted
    assert broker.call("get", id=accepted["id"])["task"]["state"] == "applied"

    refused = by["other-origin-refused"]
    assert refused["sessionLength"] >= 40
    assert refused["fetch"].startswith("failed"), refused  # CORS: refused, never read
    assert refused["noCors"] == "opaque", refused  # sent without the header: nothing to read
    assert refused["socket"] == "refused", refused
    assert refused["contentDocument"] is None and refused["location"] == "SecurityError"

    assert "used already" in (by["replayed-link-refused"]["text"] or ""), by
    reloaded = by["reloaded-has-no-session"]
    assert reloaded["url"].startswith(live["frameUrl"]) and reloaded["status"] == 401, reloaded
    assert "no dashboard session" in reloaded["text"]
