"""Run benchmarks against two checkouts of Baton, interleaved, and print before beside after.

The same harness (these scripts) runs against this checkout's Baton ("after", or another
checkout named with ``--after``) and against the Baton of another checkout ("before",
``--before DIR``: that checkout's top or its ``server/`` folder, passed to each script as
``--server-path``). Each pair runs both, the order alternating every pair (B A, A B, …), so
a busy machine weighs on both alike. For every figure the table has the medians over the
runs of Baton's value on each side, after / before, the medians of the floor each run
measured beside it (a floor that moved between the sides says the machine did), and the
1-minute load average over the runs; measures without a floor (``MEASURE`` lines) follow.

Run: .venv/bin/python benchmarks/compare.py broker ws_fanout --before DIR [--pairs 5]
[--quick] [--json] [--record FILE] [-- extra arguments for every script]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

from figures import MARK, MEASURE, load, median, num, parse, server_folder

HERE = Path(__file__).resolve().parent
SIDES = ("before", "after")


def run(
    name: str, server: Path | None, quick: bool, extra: list[str], timeout: float
) -> tuple[str, list[str]]:
    """One benchmark's output against the Baton of ``server`` (None: the harness's own)."""
    argv = [sys.executable, str(HERE / f"{name}.py"), *(["--quick"] if quick else [])]
    if server is not None:
        argv += ["--server-path", str(server)]
    argv += extra
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    if proc.returncode != 0 or not parse(proc.stdout):
        tail = " | ".join((proc.stderr or proc.stdout).strip().splitlines()[-5:])
        raise SystemExit(f"{' '.join(argv)} failed (exit {proc.returncode}): {tail}")
    return proc.stdout, argv


def collect(outputs: dict[str, list[str]]) -> list[dict[str, Any]]:
    """Rows of the table: each figure and measure, its values on each side."""
    got: dict[tuple[str, str, str], dict[str, dict[str, list[Any]]]] = defaultdict(
        lambda: {s: defaultdict(list) for s in SIDES}
    )
    for side, texts in outputs.items():
        for text in texts:
            for r in parse(text):
                d = got[("figure", r["name"], r["stat"])][side]
                d["baton"].append(r["baton"])
                d["floor"].append(r["floor"])
                d["ratio"].append(r["ratio"])
                d["load"].append(r["load"][0])
                d["unit"].append(r["unit"])
                d["floor_is"].append(r["floor_is"])
            for r in parse(text, MEASURE):
                d = got[("measure", r["name"], "")][side]
                d["baton"].append(r["value"])
                d["load"].append(r["load"][0])
                d["unit"].append(r["unit"])
    rows = []
    for (kind, name, stat), sides in got.items():
        b, a = sides["before"], sides["after"]
        if not b["baton"] or not a["baton"]:
            rows.append({"kind": kind, "name": name, "stat": stat, "missing": True})
            continue
        row: dict[str, Any] = {
            "kind": kind,
            "name": name,
            "stat": stat,
            "unit": a["unit"][0],
            "runs": min(len(b["baton"]), len(a["baton"])),
            "before": median(b["baton"]),
            "after": median(a["baton"]),
            "load": [min(b["load"] + a["load"]), max(b["load"] + a["load"])],
        }
        if row["before"]:
            row["after/before"] = row["after"] / row["before"]
        else:  # a count that was 0 before: 1 when it still is
            row["after/before"] = 1.0 if not row["after"] else float("inf")
        if kind == "figure":
            row |= {
                "floor before": median(b["floor"]),
                "floor after": median(a["floor"]),
                "ratio to floor before": median(b["ratio"]),
                "ratio to floor after": median(a["ratio"]),
                "floor_is": a["floor_is"][0],
            }
        rows.append(row)
    return rows


def table(rows: list[dict[str, Any]]) -> str:
    head = (
        "figure",
        "stat",
        "before",
        "after",
        "after/before",
        "floor (before runs)",
        "floor (after runs)",
        "÷floor before",
        "÷floor after",
        "load 1 min",
    )
    lines = [head]
    for r in rows:
        if r.get("missing"):
            lines.append((r["name"], r["stat"], "printed by one side only", *[""] * 7))
            continue
        u = r["unit"]
        fig = r["kind"] == "figure"
        lines.append(
            (
                r["name"],
                r["stat"],
                f"{num(r['before'])} {u}",
                f"{num(r['after'])} {u}",
                f"{r['after/before']:.2f}",
                f"{num(r['floor before'])} {u}" if fig else "",
                f"{num(r['floor after'])} {u}" if fig else "",
                f"{r['ratio to floor before']:.2f}" if fig else "",
                f"{r['ratio to floor after']:.2f}" if fig else "",
                f"{r['load'][0]:g}-{r['load'][1]:g}",
            )
        )
    widths = [max(len(str(line[i])) for line in lines) for i in range(len(head))]
    return "\n".join(
        "  ".join(str(c).ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("benchmarks", nargs="+", help="benchmark names (broker, ws_fanout, …)")
    ap.add_argument("--before", type=Path, required=True, help="the older checkout")
    ap.add_argument("--after", type=Path, help="the newer checkout (default: this one)")
    ap.add_argument("--pairs", type=int, default=5, help="runs of each side")
    ap.add_argument("--quick", action="store_true", help="each benchmark's quickest mode")
    ap.add_argument("--json", action="store_true", help="print the rows as JSON")
    ap.add_argument("--timeout", type=float, default=1200, help="seconds per run")
    ap.add_argument(
        "--record", type=Path, help="append every run's figures and measures here (JSON lines)"
    )
    args, extra = ap.parse_known_args()
    extra = [a for a in extra if a != "--"]
    for name in args.benchmarks:
        if not (HERE / f"{name}.py").is_file():
            ap.error(f"no benchmark {name}")
    servers = {
        "before": server_folder(args.before),
        "after": server_folder(args.after) if args.after else None,
    }
    print(
        f"cpus {os.cpu_count()}; load before {' '.join(map(str, load()))}; "
        f"before = {servers['before']}, after = {servers['after'] or 'this checkout'}",
        file=sys.stderr,
    )
    all_rows: dict[str, list[dict[str, Any]]] = {}
    for name in args.benchmarks:
        outputs: dict[str, list[str]] = {s: [] for s in SIDES}
        for i in range(args.pairs):
            for side in SIDES if i % 2 == 0 else reversed(SIDES):
                t0 = time.monotonic()
                text, argv = run(name, servers[side], args.quick, extra, args.timeout)
                outputs[side].append(text)
                if args.record:
                    with args.record.open("a") as fh:
                        for mark in (MARK, MEASURE):
                            for row in parse(text, mark):
                                done = {"benchmark": name, "pair": i + 1, "side": side}
                                fh.write(json.dumps(done | row, ensure_ascii=False) + "\n")
                print(
                    f"{name} pair {i + 1} {side}: {time.monotonic() - t0:.0f} s, load "
                    f"{' '.join(map(str, load()))}: {' '.join(argv[1:])}",
                    file=sys.stderr,
                    flush=True,
                )
        all_rows[name] = collect(outputs)
    if args.json:
        print(json.dumps(all_rows, indent=2, ensure_ascii=False))
    else:
        for name, rows in all_rows.items():
            print(f"{name}: medians of {args.pairs} interleaved runs of each side")
            print(table(rows))
    print(f"load after {' '.join(map(str, load()))}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
