"""``baton bench`` against a real broker started on demand and two fake workers (issue 21,
"Agents compared on a suite"): one worker's answer passes a case's check, the other's fails
it; the table's numbers are exact, nothing reaches the user's files, a second run
accumulates in ``baton stats``, and bad input is refused with the reason."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from baton.runtime import accounts
from baton.store import Store
from baton.store.paths import db_path
from tests.e2e.test_cli import as_json, baton, stop_brokers

RIGHT = "import sys; sys.exit(open('answer.txt').read().strip() != '42')"
SUITE = f"""
name = "smoke"

[[case]]
key = "right"
title = "the answer is 42"
instruction = "Write the answer to answer.txt"
checks = [["python3", "-c", "{RIGHT}"]]

[[case]]
key = "exists"
instruction = "Write answer.txt"
files = ["app.py:1-2"]
checks = [{{ name = "present", argv = ["test", "-f", "answer.txt"], timeout = 30 }}]

[[case]]
key = "missing"
instruction = "Write answer.txt; the check does not exist"
checks = [["no-such-check-command-here"]]
"""


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def workers(repo: Path, tmp_path: Path, **extra: dict[str, Any]) -> None:
    """``good`` writes the right answer, ``bad`` a wrong one; each reports its usage."""
    scripts = {
        "good": {"steps": [{"write": "answer.txt", "content": "42\n"},
                           {"usage": {"input": 100, "output": 20, "cost": 0.01}}]},
        "bad": {"steps": [{"write": "answer.txt", "content": "41\n"},
                          {"usage": {"input": 50, "output": 10, "cost": 0.005}}]},
        **extra,
    }  # fmt: skip
    lines = ['default_worker = "good"']
    for name, body in scripts.items():
        script = tmp_path / f"{name}.json"
        script.write_text(json.dumps({**body, "summary": "done"}))
        lines += [f"[profiles.{name}]", 'provider = "fake"', f'options = {{ script = "{script}" }}']
    (repo / ".baton.toml").write_text("\n".join(lines) + "\n")


def suite(tmp_path: Path, text: str = SUITE) -> Path:
    path = tmp_path / "smoke.toml"
    path.write_text(text)
    return path


def bench(repo: Path, *args: str, timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return baton("bench", "--json", "--cwd", str(repo), *args, timeout=timeout)


def by_worker(doc: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {line["worker"]: line for line in doc["table"]}


def test_a_suite_on_two_workers_gives_exact_numbers_and_accumulates(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    workers(repo, tmp_path)
    ran = bench(repo, str(suite(tmp_path)), "--workers", "good,bad")
    assert ran.returncode == 0, ran.stdout + ran.stderr
    doc = as_json(ran)
    assert doc["done"] and doc["suite"] == "smoke" and len(doc["tasks"]) == 6
    table = by_worker(doc)
    assert [line["worker"] for line in doc["table"]] == ["good", "bad"]
    good, bad = table["good"], table["bad"]
    assert (good["passed"], good["run"], good["rate"]) == (2, 3, 0.667)
    assert (bad["passed"], bad["run"], bad["rate"]) == (1, 3, 0.333)
    assert (good["tokens"], good["cost"]) == (360, 0.03)
    assert (bad["tokens"], bad["cost"]) == (180, 0.015)
    assert good["medianSeconds"] is not None and good["medianSeconds"] > 0
    reasons = {(t["worker"], t["case"]): t["reason"] for t in doc["tasks"]}
    assert reasons[("good", "right")] == "checks passed"
    assert reasons[("bad", "right")].startswith("checks failed: python3 -c")
    assert "could not start" in reasons[("bad", "missing")]
    assert "no-such-check-command-here" in reasons[("good", "missing")]

    # Nothing reached the user's files; each task is rejected, then archived.
    assert not (repo / "answer.txt").exists()
    deadline = time.monotonic() + 30
    while True:
        listed = as_json(baton("tasks", "--json", "--archived"))
        if sorted(t["state"] for t in listed) == ["rejected"] * 6 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert sorted(t["state"] for t in listed) == ["rejected"] * 6
    assert as_json(baton("tasks", "--json")) == []

    human = baton("bench", "--cwd", str(repo), "--run", doc["run"])
    assert human.returncode == 0, human.stderr
    assert "good" in human.stdout and "2/3" in human.stdout and "1/3" in human.stdout

    again = bench(repo, str(suite(tmp_path)), "--workers", "good,bad")
    assert again.returncode == 0, again.stdout + again.stderr
    stats = as_json(baton("stats", "--json", "--cwd", str(repo)))
    rows = {r["worker"]: r for r in stats["bench"]}
    assert (rows["good"]["suite"], rows["good"]["benches"]) == ("smoke", 2)
    assert (rows["good"]["passed"], rows["good"]["run"], rows["good"]["tokens"]) == (4, 6, 720)
    assert (rows["bad"]["passed"], rows["bad"]["run"], rows["bad"]["cost"]) == (2, 6, 0.03)
    assert stats["stats"] == []  # bench tasks stay out of the per-worker table…
    with Store(db_path(baton_home)) as store:  # …and of the evidence routing breaks ties with
        assert accounts.evidence(store) == {}
        assert store.db.execute("SELECT COUNT(*) FROM ledger").fetchone() == (12,)
    said = baton("stats", "--cwd", str(repo))
    assert "bench (every run" in said.stdout and "smoke" in said.stdout


def test_bad_suites_and_workers_are_refused_with_the_reason(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    workers(repo, tmp_path)
    missing = bench(repo, str(tmp_path / "nope.toml"), "--workers", "good")
    assert missing.returncode == 2 and "cannot read it" in as_json(missing)["error"]

    no_instruction = suite(tmp_path, '[[case]]\nkey = "x"\nchecks = [["true"]]\n')
    said = bench(repo, str(no_instruction), "--workers", "good")
    assert said.returncode == 2, said.stdout
    assert "case x: no instruction" in as_json(said)["error"]

    unknown = bench(repo, str(suite(tmp_path)), "--workers", "good,nobody")
    assert unknown.returncode == 2 and "unknown worker 'nobody'" in as_json(unknown)["error"]

    no_workers = bench(repo, str(suite(tmp_path)))
    assert no_workers.returncode == 2 and "--workers" in as_json(no_workers)["error"]
    assert as_json(baton("tasks", "--json", "--archived")) == []  # nothing was started


def test_a_question_fails_the_case_and_the_project_checks_serve_a_case_without_any(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    workers(repo, tmp_path, asker={"steps": [{"ask": "Which answer?"}]})
    with (repo / ".baton.toml").open("a") as f:
        f.write('[[verify]]\nname = "present"\nargv = ["test", "-f", "answer.txt"]\n')
    plain = suite(tmp_path, '[[case]]\nkey = "plain"\ninstruction = "Write answer.txt"\n')
    # A relative suite path is the shell's: here, relative to tmp_path, not to --cwd.
    args = ("bench", "--json", "--cwd", str(repo), plain.name, "--workers", "good,asker")
    ran = baton(*args, cwd=tmp_path, timeout=120)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    doc = as_json(ran)
    table = by_worker(doc)
    assert (table["good"]["passed"], table["good"]["run"]) == (1, 1)
    assert (table["asker"]["passed"], table["asker"]["run"]) == (0, 1)
    reasons = {t["worker"]: t["reason"] for t in doc["tasks"]}
    assert reasons["good"] == "checks passed"  # the project's verify step ran
    assert (
        reasons["asker"].startswith("the worker asked a question")
        and "Which answer?" in reasons["asker"]
    )


def test_ctrl_c_cancels_the_unfinished_tasks_and_counts_none_of_them(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    workers(repo, tmp_path, slow={"steps": [{"sleep": 60}]})
    proc = subprocess.Popen(
        [sys.executable, "-m", "baton.cli", "bench", "--json", "--cwd", str(repo),
         str(suite(tmp_path)), "--workers", "good,slow"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # once the slow worker runs
            listed = as_json(baton("tasks", "--json", "--worker", "slow", "--state", "running"))
            if listed:
                break
            time.sleep(0.2)
        assert listed, "the slow worker never ran"
        os.kill(proc.pid, signal.SIGINT)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out + err
    doc = json.loads(out)
    assert doc["interrupted"] is True and doc["stopped"]
    slow = by_worker(doc)["slow"]
    assert slow["passed"] == 0 and slow["run"] == 0  # stopped tasks are not counted
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        again = as_json(bench(repo, "--run", doc["run"]))
        if all(t["state"] in ("cancelled", "rejected") for t in again["tasks"]):
            break
        time.sleep(0.2)
    states = {t["state"] for t in again["tasks"] if t["worker"] == "slow"}
    assert states == {"cancelled"}
    assert by_worker(again)["slow"]["stopped"] == 3 and by_worker(again)["slow"]["run"] == 0


def test_a_broker_killed_mid_bench_loses_nothing_and_counts_each_task_once(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    from baton.surfaces.ws import discovery

    workers(
        repo, tmp_path, slow={"steps": [{"sleep": 3}, {"write": "answer.txt", "content": "42\n"}]}
    )
    one = suite(
        tmp_path,
        '[[case]]\nkey = "right"\ninstruction = "Answer"\n'
        f'checks = [["python3", "-c", "{RIGHT}"]]\n',
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "baton.cli", "bench", "--json", "--cwd", str(repo), str(one),
         "--workers", "good,slow"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    run_dir = tmp_path / "run" / "baton"
    try:
        deadline = time.monotonic() + 60
        listed: list[Any] = []
        while time.monotonic() < deadline and not listed:
            listed = as_json(baton("tasks", "--json", "--worker", "slow", "--state", "running"))
            time.sleep(0.1)
        assert listed, "the slow worker never ran"
        for broker in discovery.live_brokers(run_dir):  # the bench's (and any other)
            os.kill(broker.pid, signal.SIGKILL)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 1, out + err
    said = json.loads(out)["error"]
    assert "baton bench --run b" in said, said
    run = said.rsplit("--run ", 1)[1].split()[0]

    # The next broker (started on demand) adopts the slow task; the run finishes.
    done = bench(repo, "--run", run)
    assert done.returncode == 0, done.stdout + done.stderr
    doc = as_json(done)
    table = by_worker(doc)
    assert (table["good"]["passed"], table["good"]["run"]) == (1, 1)
    assert (table["slow"]["passed"], table["slow"]["run"]) == (1, 1)
    again = as_json(bench(repo, "--run", run))  # read twice: counted once
    assert by_worker(again) == table
    stats = as_json(baton("stats", "--json"))
    assert {(r["worker"], r["run"], r["benches"]) for r in stats["bench"]} == {
        ("good", 1, 1),
        ("slow", 1, 1),
    }
