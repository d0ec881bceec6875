"""Budgets at work: a task's caps and the daily budgets, counted while its agents run.

Before an attempt starts, :meth:`BudgetWatch.admit` counts what the task used in its earlier
attempts (tokens and cost from ``task.options["usage_attempts"]``, tool calls from its stored
``tool`` events, seconds from its attempt rows) and what its project and its profile used
today (the attempts started since local midnight, and this broker's running ones), and
refuses the start when a cap is reached. While the attempt runs, the attempts' event hook
(:meth:`seen`) adds its own usage and tool calls as they come, and a timer watches its
seconds; a cap reached stops the attempt as a cancel does, with completion ``budget``.

The stop is recorded before it is done: a ``budget`` event of kind ``stop`` is committed,
then the process tree is ended (crash point ``budget_stop`` between). A broker that adopts
the attempt finds that event among the attempt's stored events and ends the process
itself if it still runs, so the attempt settles as stopped by its budget — once.

At 80 % and 90 % of a daily budget a ``budget`` event of kind ``alert`` goes to the task
whose usage passed it, once per threshold, scope and day: a marker file made with
``O_EXCL`` under ``$BATON_HOME/budget-alerts/<day>/`` decides which broker says it.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import json
import logging
import os
import shutil
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from baton.config.budgets import Budgets
from baton.config.watch import SettingsCache
from baton.core import budget, usage
from baton.core.budget import PROFILE, PROJECT, TASK, Breach, Caps, Spent
from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion
from baton.core.settle import Stop
from baton.core.task import Task
from baton.core.usage import Price
from baton.faults import crash_point
from baton.runtime.attempts import Live
from baton.runtime.book import Book
from baton.store import Store

log = logging.getLogger(__name__)


@dataclasses.dataclass
class Plan:
    """One attempt's budgets: the caps, and what was used before it started."""

    caps: Caps  # the task's
    base: Spent  # the task's earlier attempts
    price: Price | None
    day: str
    project: tuple[str, Caps, Spent]  # root, its day caps, its day's use by the others
    profile: tuple[str, Caps, Spent]
    steps: int = 0  # this attempt's tool calls
    stopping: bool = False
    timer: asyncio.TimerHandle | None = None

    def attempt(self, live: Live) -> Spent:
        """What the attempt used so far (of a resumed session's report, its own part)."""
        own = live.outcome.own_usage(live.task.options, live.attempt.n, live.attempt.session_id)
        used = own.priced(self.price)
        seconds = max(0.0, time.monotonic() - live.started)
        return Spent(used.tokens, used.cost or 0.0, self.steps, seconds)


class BudgetWatch:
    def __init__(
        self,
        home: Path,
        book: Book,
        settings: SettingsCache,
        stop: Callable[[Live, Stop], Awaitable[None]],
    ) -> None:
        self.home = home
        self.book = book
        self.settings = settings
        self._stop = stop  # Attempts.stop
        self.plans: dict[str, Plan] = {}  # task id → the plan of its next or running attempt
        self.live: dict[str, Live] = {}
        self._alerted: set[str] = set()
        self._background: set[asyncio.Task[Any]] = set()

    # ------------------------------------------------------------------ before a start

    def budgets_of(self, task: Task) -> Budgets | None:
        settings = self.settings.last_good(task.root)
        if settings is None:
            return None
        return settings.budgets

    async def admit(self, task: Task, now: float | None = None) -> Breach | None:
        """Plan the task's next attempt; the cap it has reached already, if any (then it
        must not start; the ``budget`` stop event is emitted here)."""
        found = await self.check(task, now, alert=True)
        if found is not None:
            await self.book.emit(task, EventType.BUDGET, found.to_json())
        return found

    async def check(
        self, task: Task, now: float | None = None, *, alert: bool = False
    ) -> Breach | None:
        """The cap the task has reached already (for its next attempt), if any."""
        plan = await self.plan(task, now)
        if plan is None:
            return None
        root, pcaps, pused = plan.project
        name, fcaps, fused = plan.profile
        found = (
            budget.breach(plan.caps, plan.base, TASK, task.id, starting=True)
            or budget.breach(pcaps, pused, PROJECT, root, starting=True, day=plan.day)
            or budget.breach(fcaps, fused, PROFILE, name, starting=True, day=plan.day)
        )
        if alert:
            self._alert(task, plan, Spent())
        if found is not None or not alert:
            self.plans.pop(task.id, None)
        return found

    async def plan(self, task: Task, now: float | None = None) -> Plan | None:
        """The plan of the task's next attempt (None when no budget applies)."""
        budgets = self.budgets_of(task) or Budgets()
        self.plans.pop(task.id, None)
        own = budget.task_caps(task.options)
        if not budgets.any and own.empty:
            return None
        now = time.time() if now is None else now
        caps = budgets.task_caps(task.worker, task.model, own)
        settings = self.settings.last_good(task.root)
        price = settings.price_for(task.model) if settings else usage.price_for(task.model)
        start = budget.day_start(now)
        used = usage.of_task(task.options)  # its recorded attempts (as this broker knows it)
        base, project, profile = await self.book.store.call(
            _spent, task.id, task.root, task.worker, start
        )
        base = dataclasses.replace(base, tokens=used.tokens, cost=used.cost or 0.0)
        for other, live in self.live.items():  # running here, not recorded yet
            p = self.plans.get(other)
            if p is None or other == task.id:
                continue
            running = p.attempt(live)
            if live.task.root == task.root:
                project = project + running
            if live.task.worker == task.worker:
                profile = profile + running
        plan = Plan(
            caps,
            base,
            price,
            budget.day_of(now),
            (task.root, budgets.day, project),
            (task.worker, budgets.profile_day(task.worker), profile),
        )
        self.plans[task.id] = plan
        return plan

    # ------------------------------------------------------------------ while it runs

    def following(self, live: Live, past: Sequence[Event]) -> None:
        """The attempts' hook: ``live`` is followed (``past``: its stored events when
        another broker followed it before)."""
        task = live.task
        self.live[task.id] = live
        stopped = next(
            (e for e in past if e.type == EventType.BUDGET and e.data.get("kind") == "stop"),
            None,
        )
        if stopped is not None:  # the stop was recorded, maybe not done: do it (again)
            message = str(stopped.data.get("message") or "budget: a cap was reached")
            self._spawn(self._stop(live, Stop(Completion.BUDGET, message)))
            return
        plan = self.plans.get(task.id)
        if plan is None:  # another broker started it: plan it now, if a budget applies
            found = self.budgets_of(task)
            if (found is not None and found.any) or not budget.task_caps(task.options).empty:
                self._spawn(self._plan_adopted(live, past))
            return
        self._arm(live, plan)

    async def _plan_adopted(self, live: Live, past: Sequence[Event]) -> None:
        plan = await self.plan(live.task)
        if plan is None or self.live.get(live.task.id) is not live:
            return
        plan.steps = sum(1 for e in past if _is_step(e))  # stored: counted in base too
        plan.base = dataclasses.replace(plan.base, steps=max(0, plan.base.steps - plan.steps))
        self._arm(live, plan)
        self._check(live)

    def _arm(self, live: Live, plan: Plan) -> None:
        """A timer for the task's seconds cap, if it has one."""
        limit = plan.caps.limit("seconds")
        if limit is None:
            return
        left = limit - plan.base.seconds - max(0.0, time.monotonic() - live.started)
        loop = asyncio.get_running_loop()
        plan.timer = loop.call_later(max(0.0, left) + 0.05, self._tick, live, plan)

    def _tick(self, live: Live, plan: Plan) -> None:
        """The seconds timer: look again (it is set anew while the cap is not reached: the
        time waiting for the user does not count)."""
        plan.timer = None
        self._check(live)

    def seen(self, live: Live, events: Sequence[Event]) -> None:
        """The attempts' hook: ``events`` of ``live`` were observed (cheap when no plan)."""
        plan = self.plans.get(live.task.id)
        if plan is None or plan.stopping:
            return
        counts = False
        for e in events:
            if _is_step(e):
                plan.steps += 1
                counts = True
            elif e.type == EventType.USAGE:
                counts = True
        if counts:
            self._check(live)

    def _check(self, live: Live) -> None:
        task = live.task
        plan = self.plans.get(task.id)
        if plan is None or plan.stopping or self.live.get(task.id) is not live:
            return
        if live.stop is not None:
            return
        now = plan.attempt(live)
        root, pcaps, pused = plan.project
        name, fcaps, fused = plan.profile
        found = (
            budget.breach(plan.caps, plan.base + now, TASK, task.id)
            or budget.breach(pcaps, pused + now, PROJECT, root, day=plan.day)
            or budget.breach(fcaps, fused + now, PROFILE, name, day=plan.day)
        )
        self._alert(task, plan, now)
        if found is not None:
            plan.stopping = True
            self._spawn(self._stop_for(live, found))
        elif plan.timer is None and plan.caps.seconds is not None:
            self._arm(live, plan)

    async def _stop_for(self, live: Live, found: Breach) -> None:
        """Record the stop, then do it."""
        try:
            await self.book.bus.emit(
                [
                    Event(
                        EventType.BUDGET,
                        found.to_json(),
                        task_id=live.task.id,
                        attempt=live.attempt.n,
                    )
                ]
            )
        except Exception as exc:
            log.warning("task %s: could not record its budget stop: %s", live.task.id, exc)
        crash_point("budget_stop")
        if live.stop is None:
            await self._stop(live, Stop(Completion.BUDGET, found.message))

    def ended(self, live: Live) -> None:
        """The attempts' hook: ``live`` ended."""
        task_id = live.task.id
        if self.live.get(task_id) is live:
            del self.live[task_id]
        plan = self.plans.pop(task_id, None)
        if plan is not None and plan.timer is not None:
            plan.timer.cancel()

    # ------------------------------------------------------------------ alerts

    def _alert(self, task: Task, plan: Plan, now: Spent) -> None:
        for scope, (name, caps, used) in ((PROJECT, plan.project), (PROFILE, plan.profile)):
            if caps.empty:
                continue
            spent = used + now
            for measure, percent in budget.alerts(caps, spent):
                key = f"{plan.day}/{scope}/{name}/{measure}/{percent}"
                if key in self._alerted:
                    continue
                self._alerted.add(key)
                data = budget.alert_data(
                    scope, name, plan.day, measure, percent, spent.used(measure),
                    caps.limit(measure) or 0.0,
                )  # fmt: skip
                self._spawn(self._say_alert(task, key, data))

    async def _say_alert(self, task: Task, key: str, data: dict[str, Any]) -> None:
        if await asyncio.to_thread(_first_to_alert, self.home, key):
            await self.book.emit(task, EventType.BUDGET, data)

    # ------------------------------------------------------------------

    def _spawn(self, coro: Any) -> None:
        t = asyncio.get_running_loop().create_task(coro)
        self._background.add(t)
        t.add_done_callback(self._background.discard)

    async def close(self) -> None:
        for plan in self.plans.values():
            if plan.timer is not None:
                plan.timer.cancel()
        for t in list(self._background):
            t.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)


def _is_step(e: Event) -> bool:
    """A tool call (an ACP update of a call already counted is not another)."""
    return e.type == EventType.TOOL and not e.data.get("update")


def _first_to_alert(home: Path, key: str) -> bool:
    """Whether this broker is the first to say the alert ``key`` (``day/scope/…``)."""
    day, rest = key.split("/", 1)
    folder = home / "budget-alerts" / day
    if not folder.exists():
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.parent.iterdir():  # earlier days are done
            if old.name != day:
                shutil.rmtree(old, ignore_errors=True)
    name = hashlib.sha256(rest.encode()).hexdigest()[:24]
    try:
        fd = os.open(folder / name, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    except OSError as exc:
        log.warning("budget alert %s: %s", key, exc)
        return True
    with contextlib.closing(os.fdopen(fd, "w")) as f:
        f.write(rest + "\n")
    return True


def _spent(
    store: Store, task_id: str, root: str, worker: str, since: float
) -> tuple[Spent, Spent, Spent]:
    """What the task's recorded attempts took (seconds and tool calls; its tokens and cost
    are the caller's to fill in), and what the attempts of ``root``, and of ``worker``,
    started since ``since`` used (the task's own of today too)."""
    seconds = sum(
        max(0.0, a.ended_at - a.started_at)
        for a in store.attempts(task_id)
        if a.ended_at is not None and a.started_at
    )
    steps = store.db.execute(
        "SELECT COUNT(*) FROM events WHERE task_id = ? AND type = 'tool' "
        "AND json_extract(data, '$.update') IS NULL",
        [task_id],
    ).fetchone()[0]
    base = Spent(steps=int(steps), seconds=seconds)
    project, profile = Spent(), Spent()
    rows = store.db.execute(
        "SELECT a.n, a.worker, t.root, json_extract(t.options, '$.usage_attempts') "
        "FROM attempts a JOIN tasks t ON t.id = a.task_id "
        "WHERE a.started_at >= ? AND (t.root = ? OR a.worker = ?)",
        [since, root, worker],
    ).fetchall()
    for n, who, where, per in rows:
        try:
            one = json.loads(per).get(str(n)) if per else None
        except (ValueError, AttributeError):
            one = None
        if not one:
            continue
        u = usage.Usage.from_json(one)
        spent = Spent(u.tokens, u.cost or 0.0)
        if where == root:
            project = project + spent
        if who == worker:
            profile = profile + spent
    return base, project, profile
