"""Run every benchmark and print one table: each figure, its floor and their ratio.

Each benchmark runs as its own process (as a user runs it), one after the other; the table
is built from the ``FIGURE`` lines they print (``benchmarks/figures.py``). A benchmark that
prints no figure is a failure (exit 1): its answer changed shape, or it broke.

Run: .venv/bin/python benchmarks/all.py [--quick] [--only startup,lsp_roundtrip] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from figures import load, num, parse

HERE = Path(__file__).resolve().parent

#: Every benchmark with a figure beside a floor, in the order they run.
BENCHMARKS = (
    "startup",
    "checkout_isolated",
    "workspace_diff",
    "task_overhead",
    "fleet",
    "sandbox_start",
    "store_events",
    "lsp_roundtrip",
    "ws_fanout",
    "dashboard_live",
    "broker",
    "tail_latency",
    "store_search",
    "mcp_answers",
)


def run(name: str, quick: bool, timeout: float) -> tuple[list[dict[str, Any]], str, float]:
    """The figures one benchmark printed, what went wrong (or ""), and its wall time."""
    argv = [sys.executable, str(HERE / f"{name}.py"), *(["--quick"] if quick else [])]
    start = time.monotonic()
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return [], f"timed out after {timeout:.0f} s", time.monotonic() - start
    took = time.monotonic() - start
    rows = parse(proc.stdout)
    problem = ""
    if not rows:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-3:]
        problem = f"no figure printed (exit {proc.returncode}): {' | '.join(tail)}"
    return rows, problem, took


def table(results: dict[str, tuple[list[dict[str, Any]], str, float]]) -> str:
    head = ("benchmark", "figure", "stat", "baton", "floor", "ratio", "floor is", "load")
    lines = [head]
    for name, (rows, problem, _) in results.items():
        if problem:
            lines.append((name, problem, "", "", "", "", "", ""))
        for r in rows:
            unit = r["unit"]
            lines.append(
                (
                    name,
                    r["name"],
                    r["stat"],
                    f"{num(r['baton'])} {unit}",
                    f"{num(r['floor'])} {unit}",
                    f"{r['ratio']:.2f}",
                    r["floor_is"],
                    " ".join(f"{x:g}" for x in r["load"]),
                )
            )
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head))]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="each benchmark's quickest mode")
    ap.add_argument("--only", help="these benchmarks, comma separated")
    ap.add_argument("--json", action="store_true", help="print the figures as one JSON list")
    ap.add_argument("--timeout", type=float, default=900, help="seconds per benchmark")
    args = ap.parse_args()
    names = [n.strip() for n in args.only.split(",")] if args.only else list(BENCHMARKS)
    unknown = set(names) - set(BENCHMARKS)
    if unknown:
        ap.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}")
    print(f"cpus {os.cpu_count()}, load before {' '.join(map(str, load()))}", file=sys.stderr)
    results = {}
    for name in names:
        results[name] = run(name, args.quick, args.timeout)
        print(f"{name}: {results[name][2]:.1f} s", file=sys.stderr)
    if args.json:
        doc = [{"benchmark": n, **r} for n, (rows, _, _) in results.items() for r in rows]
        print(json.dumps(doc, indent=2, ensure_ascii=False))
    else:
        print(table(results))
    return 1 if any(problem for _, problem, _ in results.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
