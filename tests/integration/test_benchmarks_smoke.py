"""Every benchmark still runs, in its quickest mode, and prints its figure beside its floor.

Benchmarks broke silently before, when an answer they read changed shape; this runs each as
a user does (its own process, ``--quick``) and reads the ``FIGURE`` lines it prints. The
figures themselves are not judged here (a loaded machine moves them): only that each is
there, with a floor measured in the same run.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import user_config

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

from all import BENCHMARKS  # noqa: E402  (benchmarks/ is not a package)
from figures import MEASURE, parse  # noqa: E402

#: Benchmarks run side by side: most of a quick run is waiting (servers starting, agents
#: pausing, timed rounds), and the figures are not judged here.
AT_ONCE = 2


def test_every_benchmark_is_run_by_all() -> None:
    """A benchmark script that all.py does not run is one nobody notices breaking."""
    # Run by the benchmarks, not run alone (loop_probe: lsp_roundtrip.py --loop-probe).
    helpers = {"all", "figures", "compare", "ws_clients", "loop_probe"}
    scripts = {p.stem for p in BENCH.glob("*.py")} - helpers
    assert set(BENCHMARKS) <= scripts
    assert scripts == set(BENCHMARKS), sorted(scripts ^ set(BENCHMARKS))


def _quick(name: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
        env=env,
    )


def _isolated(folder: Path) -> dict[str, str]:
    """What ``baton_home`` and the autouse fixtures give a test, for one benchmark alone."""
    folder.mkdir(parents=True)
    gitconfig = folder / "gitconfig"
    gitconfig.write_text("[user]\n\tname = Test\n\temail = test@localhost\n")
    env = {k: v for k, v in os.environ.items() if k != "GIT_DIR"}
    return env | {
        "BATON_HOME": str(folder / "state"),
        "BATON_CONFIG": str(user_config(folder)),
        "XDG_RUNTIME_DIR": str(folder / "run"),
        "CLAUDE_CONFIG_DIR": str(folder / "claude-config"),
        "GIT_CONFIG_GLOBAL": str(gitconfig),
        "GIT_CONFIG_NOSYSTEM": "1",
    }


@pytest.fixture(scope="module")
def quick_runs(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[subprocess.CompletedProcess[str]]]]:
    """The quick run of each benchmark this session's tests ask for, started at once,
    ``AT_ONCE`` at a time, each in its own state, runtime and config folders."""
    test = test_benchmark_prints_its_figure_and_floor.__name__
    names = [
        item.callspec.params["name"]
        for item in request.session.items
        if getattr(item, "originalname", None) == test and item.path == request.path
    ]
    if importlib.util.find_spec("ray") is None:  # the extra, baton-lsp[ray]: its test skips
        names = [n for n in names if n != "ray_runner"]
    base = tmp_path_factory.mktemp("benchmarks")
    pool = ThreadPoolExecutor(AT_ONCE, thread_name_prefix="benchmark")
    try:
        yield {n: pool.submit(_quick, n, _isolated(base / n)) for n in dict.fromkeys(names)}
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.slow
@pytest.mark.parametrize("name", BENCHMARKS)
def test_benchmark_prints_its_figure_and_floor(
    name: str, quick_runs: dict[str, Future[subprocess.CompletedProcess[str]]]
) -> None:
    if name == "ray_runner":
        pytest.importorskip("ray")  # the extra, baton-lsp[ray]
    proc = quick_runs[name].result()
    rows = parse(proc.stdout)
    assert rows, f"{name} printed no figure (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
    for row in rows:
        assert row["name"] and row["floor_is"], row
        assert row["baton"] > 0 and row["floor"] > 0, row
        assert row["ratio"] == pytest.approx(row["baton"] / row["floor"], rel=0.05, abs=0.01)
        assert len(row["load"]) == 3 and row["runs"], row
        human = next(line for line in proc.stdout.splitlines() if line.startswith(row["name"]))
        assert " floor " in human and " ratio " in human, human


@pytest.mark.slow
def test_the_loop_probe_says_what_held_the_language_server(tmp_path: Path) -> None:
    """lsp_roundtrip.py --loop-probe: the server's loop timed callback by callback, the
    report printed and its measures given to compare.py."""
    proc = subprocess.run(
        [sys.executable, str(BENCH / "lsp_roundtrip.py"), "--quick", "--loop-probe"],
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
        env=_isolated(tmp_path / "probe"),
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    measures = {m["name"]: m["value"] for m in parse(proc.stdout, MEASURE)}
    assert measures["LSP server loop callbacks per s"] > 0, proc.stdout
    assert 0 < measures["LSP server loop busy share"] <= 100
    assert measures["LSP server CPU during the rounds, event loop's thread"] > 0
    assert "most frequent callbacks" in proc.stdout


def test_all_prints_one_table(baton_home: Path) -> None:
    proc = subprocess.run(
        [sys.executable, str(BENCH / "all.py"), "--quick", "--only", "store_events"],
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    head, *rows = proc.stdout.splitlines()
    assert head.split()[:6] == ["benchmark", "figure", "stat", "baton", "floor", "ratio"]
    assert len(rows) == 2 and all(r.startswith("store_events") for r in rows), rows


def test_compare_runs_a_benchmark_against_another_checkout(baton_home: Path) -> None:
    """compare.py runs the same harness against a checkout named by its folder (here this
    one, through --server-path) and prints each figure's before beside its after."""
    checkout = BENCH.parent
    proc = subprocess.run(
        [
            sys.executable,
            str(BENCH / "compare.py"),
            "store_events",
            "--before",
            str(checkout),
            "--pairs",
            "1",
            "--quick",
        ],
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    title, head, *rows = proc.stdout.splitlines()
    assert title.startswith("store_events: medians of 1")
    assert head.split()[:4] == ["figure", "stat", "before", "after"]
    assert len(rows) == 2, rows
    assert f"--server-path {checkout / 'server'}" in proc.stderr, proc.stderr
