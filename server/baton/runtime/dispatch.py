"""Dispatch: which worker takes a task — the pure routing decision, fed from the store.

:mod:`baton.core.routing` decides; this module gives it what it decides on: the request's
kind (:func:`kind_of`), the project's settings, and the workers cooling down after a rate
limit with the outcome ledger's evidence (:class:`Availability`, read from the store through
:mod:`baton.runtime.accounts`). Delegation calls :func:`decide` once, when the task is
recorded; the turn loop calls :func:`handoff_route` when a worker is rate limited (or the
user hands a settled task on).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

import baton.runtime.accounts as accounts
from baton.config.settings import Settings
from baton.core.groups import closed, shared_cooling
from baton.core.routing import (
    KINDS,
    Classification,
    Evidence,
    Kind,
    Route,
    RoutingError,
    classify,
    route,
)
from baton.core.task import Task
from baton.runtime.requests import DelegateRequest
from baton.store import AsyncStore, Store

log = logging.getLogger(__name__)

EvidenceMap = Mapping[tuple[str, str | None, str], Evidence]
#: How long a read of the outcome ledger (which only breaks routing ties) is reused.
EVIDENCE_TTL = 5.0


class Availability:
    """Running cool-downs (worker → until) and the evidence ledger.

    Cool-downs are read every time (a small table); the ledger, an aggregate that only
    breaks ties, at most every :data:`EVIDENCE_TTL` seconds. With the loop's own connection
    (``inline``) and a ledger read before, nothing waits for the store's writer thread:
    the cool-downs are read through that connection, and a ledger read older than the TTL
    is used once more while a fresh one is read on the writer thread in the background.
    Without either (the first routing, or the connection busy), one store call reads both.
    """

    def __init__(
        self, store: AsyncStore, inline: Callable[[], Store | None] = lambda: None
    ) -> None:
        self.store = store
        #: The event loop's own connection (the bus's), once the broker has one: the
        #: cool-downs (one small read) are read through it, on the loop, rather than waiting
        #: a turn of the store's writer thread twice (there and back).
        self.inline = inline
        self._cache: tuple[float, EvidenceMap] | None = None
        self._refresh: asyncio.Task[None] | None = None

    async def __call__(self) -> tuple[dict[str, float], EvidenceMap]:
        now = time.monotonic()
        cached = self._cache
        fresh = cached is not None and now - cached[0] < EVIDENCE_TTL
        inline = self.inline()
        if cached is not None and inline is not None:
            try:
                cooling = {w: c.until for w, c in accounts.cooldowns(inline).items()}
            except Exception as exc:  # busy, say: the writer thread reads it in its turn
                log.debug("reading cool-downs on the loop failed (%s); asking the writer", exc)
            else:
                if not fresh:
                    self._refresh_soon()
                return cooling, cached[1]

        def read(store: Store) -> tuple[dict[str, float], EvidenceMap | None]:
            cooling = {w: c.until for w, c in accounts.cooldowns(store).items()}
            return cooling, None if fresh else accounts.evidence(store)

        cooling, evidence = await self.store.call(read)
        if evidence is None and cached is not None:
            evidence = cached[1]
        else:
            assert evidence is not None
            self._cache = (now, evidence)
        return cooling, evidence

    def _refresh_soon(self) -> None:
        """Read the ledger again on the writer thread, unless a read is under way."""
        if self._refresh is not None and not self._refresh.done():
            return
        self._refresh = asyncio.get_running_loop().create_task(self._reread())

    async def _reread(self) -> None:
        at = time.monotonic()
        try:
            evidence = await self.store.call(accounts.evidence)
        except Exception as exc:  # the last read stays in use; the next routing tries again
            log.debug("could not read the outcome ledger: %s", exc)
            return
        self._cache = (at, evidence)


def kind_of(req: DelegateRequest) -> Classification:
    """The request's kind: named by it, else classified from instruction, selection, action."""
    if req.kind:
        if req.kind not in KINDS:
            raise RoutingError(f"unknown task kind {req.kind!r}; kinds: {', '.join(KINDS)}")
        return Classification(Kind(req.kind), "named by the request")
    lines = None
    if req.targets and req.targets[0].start_line is not None:
        first = req.targets[0]
        lines = (first.end_line or first.start_line or 0) - (first.start_line or 0) + 1
    return classify(
        req.instruction, action=req.action, selection_lines=lines, files=len(req.targets)
    )


def _within_groups(
    settings: Settings,
    pick: Callable[[Mapping[str, float], Collection[str]], Route],
    cooling: Mapping[str, float],
    live: Mapping[str, int] | None,
    now: float | None,
) -> Route:
    """``pick(cooling, exclude)``'s route, passing over accounts whose group is full or off
    shift (:mod:`baton.core.groups`); a group's shared quota cools all of its accounts. When
    nobody is left, the refusal names the groups."""
    if not settings.groups:
        return pick(cooling, ())
    at = time.time() if now is None else now
    members = {a.name: (a.provider, a.model) for a in settings.accounts()}
    cool = shared_cooling(settings.groups, members, cooling)
    blocked: dict[str, str] = {}
    while True:
        try:
            r = pick(cool, tuple(blocked))
        except RoutingError:
            if not blocked:
                raise
            raise RoutingError("; ".join(dict.fromkeys(blocked.values()))) from None
        provider = members.get(r.worker, ("", None))[0]
        why = closed(settings.groups, provider, r.model, live or {}, at)
        if why is None:
            return r
        if r.explicit or r.worker in blocked:
            raise RoutingError(why if r.worker in blocked else f"{r.worker}: {why}")
        blocked[r.worker] = why


def decide(
    settings: Settings,
    req: DelegateRequest,
    *,
    cooling: Mapping[str, float],
    evidence: EvidenceMap,
    now: float | None = None,
    live: Mapping[str, int] | None = None,
) -> Route:
    """Who runs a new task (raises :class:`RoutingError` when nobody may). ``live``: the
    tasks live now per group of accounts (``[groups]``)."""
    kind = kind_of(req)

    def pick(cool: Mapping[str, float], exclude: Collection[str]) -> Route:
        return route(
            kind.kind,
            settings.policy(),
            settings.accounts(),
            worker=req.worker,
            model=req.model,
            kind_reason=kind.reason,
            cooling=cool,
            evidence=evidence,
            exclude=exclude,
            now=now,
        )

    return _within_groups(settings, pick, cooling, live, now)


def route_record(req: DelegateRequest, r: Route) -> dict[str, Any]:
    """What the task keeps of its routing (in ``task.options["route"]``)."""
    return {
        "explicit": r.explicit,
        "model": req.model,
        "candidates": [c.worker + (f"/{c.model}" if c.model else "") for c in r.candidates],
    }


def handoff_route(
    settings: Settings,
    task: Task,
    *,
    cooling: Mapping[str, float],
    evidence: EvidenceMap,
    worker: str | None = None,
    automatic: bool = True,
    now: float | None = None,
    live: Mapping[str, int] | None = None,
) -> Route | None:
    """The next worker for ``task``, or None when it should wait (hold) instead.

    Automatic handoffs (a rate limit) follow ``on_rate_limit`` and never move a task whose
    worker the request named; a handoff asked for by the user may name the worker. Groups
    (``[groups]``) are kept as for a new task.
    """
    record = task.options.get("route") or {}
    if automatic and (settings.on_rate_limit == "hold" or record.get("explicit")):
        return None

    def pick(cool: Mapping[str, float], exclude: Collection[str]) -> Route:
        return route(
            task.kind,
            settings.policy(),
            settings.accounts(),
            worker=worker,
            model=record.get("model") if not worker else None,
            cooling=cool,
            evidence=evidence,
            exclude=(*exclude, *(() if worker else (task.worker,))),
            now=now,
        )

    try:
        r = _within_groups(settings, pick, cooling, live, now)
    except RoutingError:
        if not automatic:
            raise
        return None
    if r.hold_until is not None and automatic:
        return None
    return r
