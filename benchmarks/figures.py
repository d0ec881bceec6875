"""What every benchmark shares: interleaved runs, medians and percentiles, and the one way a
figure is printed beside its floor.

A floor is the same operation done by the simplest thing that could do it on this machine at
that moment (a bare pygls or websockets server, a raw ``git worktree add``, ``python -c
'import json'``, a raw fork/exec of the same agent). Measured in the same run, interleaved
with Baton's figure (the order alternates every round), it makes the figure a ratio that
says what Baton adds, whatever else loads the machine. A p99 measured alone on a shared
machine says little.

Each figure is printed twice: a line for people, and a ``FIGURE {json}`` line that
``benchmarks/all.py`` (and the smoke test) read::

    delegate → id  baton 61.2 ms  floor 40.3 ms (bare websocket round trip)  ratio 1.52
    FIGURE {"name": "delegate → id", "baton": 61.2, "floor": 40.3, "ratio": 1.52, ...}

A benchmark that takes ``--server-path DIR`` (:func:`add_server_path`, :func:`use_server`)
runs the same harness against the broker of another checkout: the script runs again with
that checkout's ``server/`` first on ``PYTHONPATH``, so Baton's modules, the brokers it
starts and the fake agent they spawn all come from there (``benchmarks/compare.py`` runs a
benchmark against two checkouts, interleaved).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

#: The prefix of the machine-readable line of a figure.
MARK = "FIGURE "
#: The prefix of the machine-readable line of a measure without a floor (:func:`measure`).
MEASURE = "MEASURE "

#: The ``baton`` command as the installed script runs it (``python -c BATON args…``).
BATON = "import sys; from baton.cli import main; sys.exit(main())"

#: The ``server/`` folder a benchmark runs against when it is not this checkout's (set by
#: :func:`use_server` for the run it starts again; printed in every figure as ``server``).
SERVER_ENV = "BATON_BENCH_SERVER"


def add_server_path(parser: argparse.ArgumentParser) -> None:
    """The ``--server-path DIR`` option: run against another checkout's broker."""
    parser.add_argument(
        "--server-path",
        type=Path,
        metavar="DIR",
        help="run the same harness against another checkout's Baton: DIR is that "
        "checkout (holding server/) or its server/ folder",
    )


def server_folder(path: Path) -> Path:
    """The folder holding the ``baton`` package of a checkout given by its top or
    ``server/`` folder."""
    for folder in (path / "server", path):
        if (folder / "baton" / "__init__.py").is_file():
            return folder.resolve()
    raise SystemExit(f"no baton package in {path} or {path / 'server'}")


def use_server(path: Path | None) -> None:
    """Make this run use the Baton of the checkout at ``path`` (nothing when None).

    Called once the options are parsed and before Baton's modules matter: the script is
    executed again, the same arguments, with that checkout's ``server/`` first on
    ``PYTHONPATH`` (so the modules this process imports, the brokers it starts and the
    agents they spawn come from there). In that run it checks ``baton`` is imported from
    there and says so.
    """
    if path is None:
        return
    folder = str(server_folder(path))
    if os.environ.get(SERVER_ENV) != folder:
        rest = os.environ.get("PYTHONPATH")
        env = os.environ | {
            SERVER_ENV: folder,
            "PYTHONPATH": folder + (os.pathsep + rest if rest else ""),
        }
        sys.stdout.flush()
        os.execve(sys.executable, [sys.executable, *sys.argv], env)
    import baton

    found = Path(baton.__file__).resolve()
    if not found.is_relative_to(folder):
        raise SystemExit(f"baton was imported from {found}, not from {folder}")
    print(f"baton from {folder}", flush=True)


def pct(values: Sequence[float], p: float) -> float:
    """The ``p``-th percentile (nearest rank) of ``values``."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def num(x: float) -> str:
    """A figure as people read it: whole above 100, else three significant digits."""
    return f"{x:.0f}" if abs(x) >= 100 else f"{x:.3g}"


def median(values: Sequence[float]) -> float:
    return statistics.median(values)


def load() -> list[float]:
    """The machine's load average (1, 5 and 15 minutes), rounded."""
    return [round(x, 2) for x in os.getloadavg()]


def interleaved(cases: dict[str, Callable[[], float]], rounds: int) -> dict[str, list[float]]:
    """Run each case once per round, the order alternating every round (A B, B A, …), so a
    busy machine weighs on each alike. A case returns its own measure (seconds)."""
    names = list(cases)
    got: dict[str, list[float]] = {n: [] for n in names}
    for i in range(rounds):
        for name in names if i % 2 == 0 else reversed(names):
            got[name].append(cases[name]())
    return got


def timed(fn: Callable[[], object]) -> Callable[[], float]:
    """A case measuring the wall time of ``fn()``."""

    def case() -> float:
        start = time.perf_counter()
        fn()
        return time.perf_counter() - start

    return case


def figure(
    name: str,
    baton: float,
    floor: float,
    floor_is: str,
    *,
    unit: str = "ms",
    runs: int | None = None,
    stat: str = "median",
    of: str = "interleaved runs",
    **extra: Any,
) -> dict[str, Any]:
    """Print one figure beside its floor (and the ratio, and the load average); return it.

    ``runs`` counts the samples each side's ``stat`` is taken over; ``of`` says what they are.
    """
    ratio = baton / floor if floor > 0 else float("inf")
    row: dict[str, Any] = {
        "name": name,
        "baton": round(baton, 3),
        "floor": round(floor, 3),
        "ratio": round(ratio, 2),
        "unit": unit,
        "stat": stat,
        "floor_is": floor_is,
        "runs": runs,
        "load": load(),
        "server": os.environ.get(SERVER_ENV),
        **extra,
    }
    of = f"{stat} of {runs} {of}" if runs else stat
    print(
        f"{name}  baton {num(baton)} {unit}  floor {num(floor)} {unit} ({floor_is})  "
        f"ratio {ratio:.2f}  ({of}; load {' '.join(map(str, row['load']))})",
        flush=True,
    )
    print(MARK + json.dumps(row, ensure_ascii=False), flush=True)
    return row


def measure(name: str, value: float, unit: str) -> dict[str, Any]:
    """Print a measure that has no floor of its own (a count, a rate, a memory size) as a
    ``MEASURE {json}`` line, for ``benchmarks/compare.py`` to set beside another
    checkout's; return it."""
    row = {"name": name, "value": round(value, 3), "unit": unit, "load": load()}
    print(MEASURE + json.dumps(row, ensure_ascii=False), flush=True)
    return row


def parse(output: str, mark: str = MARK) -> list[dict[str, Any]]:
    """The figures a benchmark printed (with ``mark=MEASURE``, its measures)."""
    return [json.loads(line[len(mark) :]) for line in output.splitlines() if line.startswith(mark)]


#: The commit identity of every throwaway repository (and of the brokers working in them).
GIT_IDENTITY = {
    "GIT_AUTHOR_NAME": "b",
    "GIT_AUTHOR_EMAIL": "b@x",
    "GIT_COMMITTER_NAME": "b",
    "GIT_COMMITTER_EMAIL": "b@x",
}
#: The fake agent named as the default worker (Baton never picks it alone).
FAKE_CONFIG = 'default_worker = "fake"\n\n[profiles.fake]\nprovider = "fake"\n'


def fake_env(
    base: Path, name: str = "", *, concurrency: int | None = None, bytecode: bool = False
) -> dict[str, str]:
    """The environment of a broker of its own under ``base`` (under ``base/name`` when
    named): Baton's home and runtime folder there, and a user config naming the fake agent
    (``concurrency`` of them at once, when given). With ``bytecode``, Baton's modules are
    loaded from cached bytecode as in an installed package (``PYTHONDONTWRITEBYTECODE``
    dropped)."""
    folder = base / name if name else base
    folder.mkdir(parents=True, exist_ok=True)
    config = folder / "user.toml"
    extra = f"concurrency = {concurrency}\n" if concurrency is not None else ""
    config.write_text(FAKE_CONFIG + extra)
    env = dict(os.environ)
    if bytecode:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    return (
        env
        | GIT_IDENTITY
        | {
            "BATON_HOME": str(folder / "state"),
            "XDG_RUNTIME_DIR": str(folder / "run"),
            "BATON_CONFIG": str(config),
        }
    )


def fake_repo(repo: Path, files: dict[str, str] | None = None) -> Path:
    """A git repository at ``repo`` with ``files`` (path → text; one small file when
    None), committed once on ``main``."""
    repo.mkdir(parents=True)
    for name, text in (files or {"f.txt": "x\n"}).items():
        (repo / name).write_text(text)
    env = os.environ | GIT_IDENTITY
    for cmd in (["init", "-q", "-b", "main"], ["add", "."], ["commit", "-qm", "init"]):
        subprocess.run(["git", *cmd], cwd=repo, env=env, check=True, capture_output=True)
    return repo


def fake_workspace(
    prefix: str, files: dict[str, str] | None = None, *, concurrency: int | None = None
) -> tuple[Path, dict[str, str]]:
    """A throwaway folder with a git repository (:func:`fake_repo`) and a broker's
    environment (:func:`fake_env`): ``(repo, env)``."""
    base = Path(tempfile.mkdtemp(prefix=prefix))
    return fake_repo(base / "repo", files), fake_env(base, concurrency=concurrency)


def serve_broker(repo: Path, env: dict[str, str], *, quiet: bool = False) -> subprocess.Popen[str]:
    """``baton serve --root repo --json`` started as the installed script runs it; read its
    ready line with :func:`broker_ready` (``quiet``: its log not shown)."""
    return subprocess.Popen(
        [sys.executable, "-c", BATON, "serve", "--root", str(repo), "--json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL if quiet else None,
        env=env,
        text=True,
    )


def broker_ready(server: subprocess.Popen[str]) -> tuple[str, str]:
    """The broker's websocket URL and token, once its ready line is printed."""
    assert server.stdout is not None
    line = server.stdout.readline()
    if not line:
        raise SystemExit(f"baton serve exited before listening ({server.wait(10)})")
    info = json.loads(line)
    return info["url"], json.loads(Path(info["discovery"]).read_text())["token"]
