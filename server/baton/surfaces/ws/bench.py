"""The broker's ``bench``: run a suite's cases on several workers, or read (or stop) a run.

Part of the method table of :class:`baton.surfaces.ws.methods.Methods`. The suite's format
and its checks are :mod:`baton.core.bench`'s; the run is the Supervisor's (``sup.bench``,
:mod:`baton.runtime.bench`). docs/reference/bench.md says what a bench does with its tasks.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import baton.surfaces.ws.protocol as p
from baton.core.bench import MAX_RUNS, SuiteError, parse_suite, read_toml
from baton.errors import InvalidInput
from baton.runtime import Supervisor

#: A suite file larger than this is refused (a suite is instructions and argv lists).
MAX_SUITE_BYTES = 1 << 20


class Benches:
    """``bench``, for one broker (the folders it serves: the default ``cwd``)."""

    def __init__(self, sup: Supervisor, roots: list[str]) -> None:
        self.sup = sup
        self.roots = roots

    async def bench(self, params: dict[str, Any]) -> dict[str, Any]:
        """Start a run: ``suite`` (a TOML file's path, relative to ``cwd``) or ``cases``
        (inline, with ``name`` and ``repairRounds``), ``workers``, ``runs``, ``cwd``;
        answers ``{run, suite, tasks: [{id, case, worker, n}]}`` at once. With ``run``:
        that run's results as they stand (``stop``: its unfinished tasks cancelled first)."""
        p.known(
            params, "suite", "cases", "name", "repairRounds", "workers", "runs", "cwd", "run",
            "stop",
        )  # fmt: skip
        run = p.opt_text(params, "run", 200)
        if run is not None:
            return await self._read(run, p.flag(params, "stop"), params)
        root = await self._root(params)
        suite_path = p.opt_text(params, "suite")
        if (suite_path is None) == (params.get("cases") is None):
            raise p.RpcError(p.INVALID_PARAMS, "give suite (a file) or cases (inline), one")
        try:
            if suite_path is not None:
                path = Path(root, suite_path).expanduser()
                text = await asyncio.to_thread(_read_suite, path)
                suite = read_toml(text, path.stem)
                shown: str | None = str(path.resolve())
            else:
                inline = {"case": params.get("cases"), "name": params.get("name", "inline")}
                if "repairRounds" in params:
                    inline["repair_rounds"] = params["repairRounds"]
                suite, shown = parse_suite(inline, "inline"), None
        except SuiteError as exc:
            where = suite_path or "cases"
            raise p.RpcError(p.INVALID_PARAMS, f"suite {where}: {exc}") from None
        workers = [w.strip() for w in p.texts(params, "workers", limit=20) or [] if w.strip()]
        runs = p.integer(params, "runs", lo=1, hi=MAX_RUNS) or 1
        try:
            started = await self.sup.bench.start(suite, workers, root, runs=runs, path=shown)
        except InvalidInput as exc:
            raise p.RpcError(p.INVALID_PARAMS, str(exc)) from None
        return {
            "run": started.run,
            "suite": suite.name,
            "tasks": [
                {"id": t.id, "case": case, "worker": worker, "n": n}
                for t, case, worker, n in started.tasks
            ],
        }

    async def _read(self, run: str, stop: bool, params: dict[str, Any]) -> dict[str, Any]:
        others = {"suite", "cases", "name", "repairRounds", "workers", "runs"} & set(params)
        if others:
            raise p.RpcError(p.INVALID_PARAMS, f"run: reads a run; {sorted(others)[0]} starts one")
        stopped = await self.sup.bench.stop(run) if stop else []
        return {**await self.sup.bench.results(run), **({"stopped": stopped} if stop else {})}

    async def _root(self, params: dict[str, Any]) -> str:
        cwd = p.opt_text(params, "cwd") or (self.roots[0] if self.roots else None)
        if cwd is None:
            raise p.RpcError(p.INVALID_PARAMS, "cwd: required (this broker serves no folder)")
        root = Path(cwd).expanduser()
        if not root.is_absolute():
            raise p.RpcError(p.INVALID_PARAMS, f"cwd: {cwd} is not an absolute path")
        if not await asyncio.to_thread(root.is_dir):
            raise p.RpcError(p.INVALID_PARAMS, f"cwd: {cwd} is not a folder")
        return str(root.resolve())


def _read_suite(path: Path) -> str:
    try:
        with path.open("rb") as f:
            data = f.read(MAX_SUITE_BYTES + 1)
    except OSError as exc:
        raise SuiteError(f"cannot read it ({exc.strerror or exc})") from None
    if len(data) > MAX_SUITE_BYTES:
        raise SuiteError(f"larger than {MAX_SUITE_BYTES} bytes")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        raise SuiteError("not UTF-8 text") from None
