"""How long a process's asyncio event loop is held, callback by callback (a measure only).

Installed in a server process through a ``sitecustomize`` that ``lsp_roundtrip.py
--loop-probe`` puts first on that process's ``PYTHONPATH``: every ``Handle._run`` (a ready
callback, a task step) is timed, and so is each loop iteration's run of ready callbacks. A
request that arrives waits for the rest of the callback running then and for every callback
ready before its own, so the figures are: how many callbacks held the loop more than 2 ms
and 5 ms, the busy share of the wall time, and per iteration the time spent in callbacks
and how many ran (percentiles). The slowest callbacks are named by the task they stepped
(its coroutine) or by their function. Written as JSON to the file named by
``BATON_LOOP_PROBE`` when the process exits (the variable is removed, so the processes it
starts are not probed); a ``SIGUSR1`` starts the measure again from then on.
"""

from __future__ import annotations

import atexit
import json
import os
import signal
import time
from collections import Counter, defaultdict
from typing import Any

#: Callbacks held longer than this (s) are named in the report.
SLOW = 0.002


def _coro_of(handle: Any) -> Any:
    """The coroutine a task step runs, or None for another callback."""
    owner = getattr(getattr(handle, "_callback", None), "__self__", None)
    get_coro = getattr(owner, "get_coro", None)
    return get_coro() if get_coro is not None else None


def _where(coro: Any, depth: int = 3) -> str:
    """Where a suspended coroutine waits: the lines of its innermost ``depth`` awaiting
    coroutines (outer < inner)."""
    places: list[str] = []
    while coro is not None:
        frame = getattr(coro, "cr_frame", None) or getattr(coro, "gi_frame", None)
        if frame is None:
            break
        places.append(f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}")
        coro = getattr(coro, "cr_await", None) or getattr(coro, "gi_yieldfrom", None)
    return "<".join(places[-depth:]) or "start"


def _kind(handle: Any, coro: Any) -> str:
    if coro is not None:
        return "task " + str(getattr(coro, "__qualname__", "?"))
    cb = getattr(handle, "_callback", None)
    return str(getattr(cb, "__qualname__", None) or type(cb).__name__)


def _name(handle: Any, coro: Any, before: str) -> str:
    if coro is not None:
        name = str(getattr(coro, "__qualname__", coro))
        return f"task {name}: {before} -> {_where(coro) if coro.cr_frame else 'end'}"
    cb = getattr(handle, "_callback", None)
    return str(getattr(cb, "__qualname__", None) or repr(cb))[:120]


def _pct(values: list[float], p: float) -> float:
    if not values:
        return 0.0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def _runqueue_wait() -> float:
    """Seconds this thread has waited for a CPU while runnable (Linux schedstat)."""
    try:
        with open("/proc/thread-self/schedstat", encoding="ascii") as f:
            return int(f.read().split()[1]) / 1e9
    except (OSError, ValueError, IndexError):
        return 0.0


def install(path: str) -> None:
    """Time every callback of every asyncio loop in this process; report to ``path``."""
    import asyncio.base_events
    import asyncio.events

    started = time.perf_counter()
    state = {"busy": 0.0, "n": 0, "cpu": 0.0, "runq": _runqueue_wait()}
    holds: list[float] = []  # every callback's duration (s)
    iterations: list[tuple[float, int]] = []  # per iteration: (busy s, callbacks)
    slow: dict[str, list[float]] = defaultdict(list)
    kinds: Counter[str] = Counter()  # callbacks by task coroutine or function
    slow_cpu = [0.0, 0.0]  # callbacks over SLOW: their wall time, the CPU time of the loop's thread
    original_run = asyncio.events.Handle._run
    original_once = asyncio.base_events.BaseEventLoop._run_once  # type: ignore[attr-defined]

    def timed_run(self: Any) -> None:
        coro = _coro_of(self)
        before = _where(coro) if coro is not None else ""
        t0, c0 = time.perf_counter(), time.thread_time()
        try:
            original_run(self)
        finally:
            took = time.perf_counter() - t0
            holds.append(took)
            state["busy"] += took
            state["n"] += 1
            cpu = time.thread_time() - c0
            state["cpu"] += cpu
            kinds[_kind(self, coro)] += 1
            if took > SLOW:
                slow[_name(self, coro, before)].append(took)
                slow_cpu[0] += took
                slow_cpu[1] += cpu

    def timed_once(self: Any) -> None:
        state["busy"], state["n"] = 0.0, 0
        try:
            original_once(self)
        finally:
            if state["n"]:
                iterations.append((state["busy"], int(state["n"])))

    def restart(*_: Any) -> None:  # SIGUSR1: measure from now on (the run's warm-up left out)
        nonlocal started
        started = time.perf_counter()
        holds.clear()
        iterations.clear()
        slow.clear()
        slow_cpu[:] = [0.0, 0.0]
        kinds.clear()
        state["cpu"], state["runq"] = 0.0, _runqueue_wait()

    signal.signal(signal.SIGUSR1, restart)
    asyncio.events.Handle._run = timed_run  # type: ignore[method-assign]
    asyncio.base_events.BaseEventLoop._run_once = timed_once  # type: ignore[attr-defined]

    def report() -> None:
        wall = time.perf_counter() - started
        busy = [b for b, _ in iterations]
        counts = [float(n) for _, n in iterations]
        top = sorted(slow.items(), key=lambda kv: -sum(kv[1]))[:40]
        out = {
            "wall_s": round(wall, 3),
            "callbacks": len(holds),
            "busy_share": round(sum(holds) / wall, 4) if wall else 0.0,
            # Of the callbacks' wall time: the loop thread's CPU time, and the time it
            # waited for a CPU (the kernel's run-queue wait of that thread over the whole
            # run, in or out of callbacks): what is left of the callbacks' time is mostly
            # waiting for the interpreter lock another thread of the process held.
            "callbacks_cpu_s": round(state["cpu"], 3),
            "callbacks_wall_s": round(sum(holds), 3),
            "runqueue_wait_s": round(_runqueue_wait() - state["runq"], 3),
            "over_2ms": sum(1 for h in holds if h > 0.002),
            "over_5ms": sum(1 for h in holds if h > 0.005),
            "over_10ms": sum(1 for h in holds if h > 0.010),
            "hold_p99_ms": round(_pct(holds, 99) * 1000, 3),
            "hold_max_ms": round(max(holds, default=0.0) * 1000, 3),
            # How much of the slow callbacks' time the loop's thread ran (the rest it
            # waited: for the interpreter lock, another thread holding it, or for a CPU).
            "slow_cpu_share": round(slow_cpu[1] / slow_cpu[0], 3) if slow_cpu[0] else 0.0,
            "iterations": len(iterations),
            "iteration_busy_ms": {
                p: round(_pct(busy, float(p)) * 1000, 3) for p in ("50", "90", "99", "99.9")
            },
            "iteration_callbacks": {p: _pct(counts, float(p)) for p in ("50", "90", "99")},
            "most_frequent": [
                {"name": name, "per_s": round(n / wall, 1)} for name, n in kinds.most_common(15)
            ],
            "slowest": [
                {
                    "name": name,
                    "count": len(v),
                    "total_ms": round(sum(v) * 1000, 1),
                    "max_ms": round(max(v) * 1000, 2),
                }
                for name, v in top
            ],
        }
        with open(path, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)

    atexit.register(report)


#: The ``sitecustomize`` that installs the probe in a process started with
#: ``BATON_LOOP_PROBE`` set (and this folder in ``BATON_LOOP_PROBE_FROM``).
SITECUSTOMIZE = """\
import os, sys
_out = os.environ.pop("BATON_LOOP_PROBE", None)
_from = os.environ.pop("BATON_LOOP_PROBE_FROM", None)
if _out and _from:
    sys.path.append(_from)
    import loop_probe
    sys.path.remove(_from)
    loop_probe.install(_out)
"""


def summary(report: dict[str, Any]) -> str:
    """The report in a few lines for people."""
    it = report["iteration_busy_ms"]
    lines = [
        f"loop: {report['callbacks']} callbacks in {report['wall_s']} s, busy "
        f"{report['busy_share'] * 100:.1f} %; held > 2 ms {report['over_2ms']}, > 5 ms "
        f"{report['over_5ms']}, > 10 ms {report['over_10ms']}; hold p99 "
        f"{report['hold_p99_ms']} ms, max {report['hold_max_ms']} ms; the loop's thread ran "
        f"{report.get('slow_cpu_share', 0) * 100:.0f} % of the > 2 ms ones' time",
        f"callbacks' time {report.get('callbacks_wall_s')} s: the loop thread's CPU "
        f"{report.get('callbacks_cpu_s')} s; it waited for a CPU {report.get('runqueue_wait_s')}"
        " s in all (in or out of callbacks); the rest: waiting for the interpreter lock",
        f"loop iterations: {report['iterations']}; callbacks' time per iteration p50 {it['50']}"
        f" p90 {it['90']} p99 {it['99']} p99.9 {it['99.9']} ms; callbacks per iteration "
        + " ".join(f"p{k} {v:g}" for k, v in report["iteration_callbacks"].items()),
    ]
    lines.append(
        "most frequent callbacks (/s): "
        + ", ".join(f"{k['name']} {k['per_s']:g}" for k in report.get("most_frequent", []))
    )
    for s in report["slowest"]:
        lines.append(
            f"  > 2 ms: {s['count']:5d}x  total {s['total_ms']:8.1f} ms  max {s['max_ms']:6.2f}"
            f" ms  {s['name']}"
        )
    return "\n".join(lines)


def environment(folder: str, out: str) -> dict[str, str]:
    """Variables that make a Python process started with them probe its loop to ``out``
    (``folder``: where the probe's ``sitecustomize.py`` is written)."""
    with open(os.path.join(folder, "sitecustomize.py"), "w", encoding="utf-8") as f:
        f.write(SITECUSTOMIZE)
    return {
        "BATON_LOOP_PROBE": out,
        "BATON_LOOP_PROBE_FROM": os.path.dirname(os.path.abspath(__file__)),
        "BATON_LOOP_PROBE_SITE": folder,
    }
