"""The budgets of the config (``[budget]``, ``[profiles.NAME.budget]``,
``[budget.models."MODEL"]``), read through the schema into :class:`Budgets`; what they
mean is :mod:`baton.core.budget`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import baton.config.schema as S
from baton.config.values import Values
from baton.core.budget import Caps


@dataclass(frozen=True, slots=True)
class Budgets:
    """A project's budgets: its tasks' caps and its day's, and those of its profiles and
    models (each ``(task caps, day caps)``; a model has no day)."""

    task: Caps = field(default_factory=Caps)
    day: Caps = field(default_factory=Caps)
    profiles: dict[str, tuple[Caps, Caps]] = field(default_factory=dict)
    models: dict[str, Caps] = field(default_factory=dict)

    def task_caps(self, profile: str, model: str | None, own: Caps | None = None) -> Caps:
        """A task's caps: the project's, its profile's over them, its model's over those,
        then the task's own (``own``)."""
        caps = self.task.over(self.profiles.get(profile, (Caps(), Caps()))[0])
        if model and model in self.models:
            caps = caps.over(self.models[model])
        return caps.over(own) if own is not None else caps

    def profile_day(self, profile: str) -> Caps:
        return self.profiles.get(profile, (Caps(), Caps()))[1]

    @property
    def any(self) -> bool:
        """Whether any budget is set (else nothing needs counting)."""
        return (
            not (self.task.empty and self.day.empty)
            or any(not t.empty or not d.empty for t, d in self.profiles.values())
            or any(not m.empty for m in self.models.values())
        )


def _caps(values: Values, fields: Sequence[S.Field[Any]], *names: str) -> tuple[Caps, Caps]:
    got = {f.path[-1]: values.field(f, *names) for f in fields}
    task = Caps(
        got.get("task_tokens"), got.get("task_cost"), got.get("task_steps"), got.get("task_seconds")
    )
    day = Caps(got.get("day_tokens"), got.get("day_cost"))
    return task, day


def read_budgets(values: Values) -> Budgets:
    task, day = _caps(values, S.BUDGET_FIELDS)
    profiles = {}
    for name in values.children(("profiles",)):
        t, d = _caps(values, S.PROFILE_BUDGET_FIELDS, name)
        if not (t.empty and d.empty):
            profiles[name] = (t, d)
    models = {
        m: _caps(values, S.MODEL_BUDGET_FIELDS, m)[0] for m in values.children(("budget", "models"))
    }
    return Budgets(task, day, profiles, models)
