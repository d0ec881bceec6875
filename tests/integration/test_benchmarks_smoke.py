"""Every benchmark still runs, in its quickest mode, and prints its figure beside its floor.

Benchmarks broke silently before, when an answer they read changed shape; this runs each as
a user does (its own process, ``--quick``) and reads the ``FIGURE`` lines it prints. The
figures themselves are not judged here (a loaded machine moves them): only that each is
there, with a floor measured in the same run.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[2] / "benchmarks"
sys.path.insert(0, str(BENCH))

from all import BENCHMARKS  # noqa: E402  (benchmarks/ is not a package)
from figures import parse  # noqa: E402


def test_every_benchmark_is_run_by_all() -> None:
    """A benchmark script that all.py does not run is one nobody notices breaking."""
    helpers = {"all", "figures", "compare", "ws_clients"}  # run by the benchmarks, not run alone
    scripts = {p.stem for p in BENCH.glob("*.py")} - helpers
    assert set(BENCHMARKS) <= scripts
    assert scripts == set(BENCHMARKS), sorted(scripts ^ set(BENCHMARKS))


@pytest.mark.slow
@pytest.mark.parametrize("name", BENCHMARKS)
def test_benchmark_prints_its_figure_and_floor(name: str, baton_home: Path) -> None:
    if name == "ray_runner":
        pytest.importorskip("ray")  # the extra, baton-lsp[ray]
    proc = subprocess.run(
        [sys.executable, str(BENCH / f"{name}.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=110,
        check=False,
    )
    rows = parse(proc.stdout)
    assert rows, f"{name} printed no figure (exit {proc.returncode}):\n{proc.stderr[-2000:]}"
    for row in rows:
        assert row["name"] and row["floor_is"], row
        assert row["baton"] > 0 and row["floor"] > 0, row
        assert row["ratio"] == pytest.approx(row["baton"] / row["floor"], rel=0.05, abs=0.01)
        assert len(row["load"]) == 3 and row["runs"], row
        human = next(line for line in proc.stdout.splitlines() if line.startswith(row["name"]))
        assert " floor " in human and " ratio " in human, human


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
