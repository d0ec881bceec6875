"""The keys of the broker-wide sections of the config: ``[pool]``, ``[retention]``,
``[notify]``, ``[groups.NAME]``, ``[budget]`` (with a profile's and a model's budget) and
``[dashboard]``. They are rows of the one table of keys, :data:`baton.config.schema.FIELDS`,
written here to keep that module readable.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from baton.config.checks import (
    amount,
    boolean,
    clock,
    count,
    nonempty,
    positive,
    seconds,
    some_of,
    timezone_name,
)
from baton.config.field import Field
from baton.config.field import choices_text as _choices
from baton.config.field import either_text as _either
from baton.config.layers import Key
from baton.core.usage import CURRENCY

#: The warm pool (``[pool]``): ready checkouts per repository, and bytes on disk for all.
DEFAULT_POOL_SIZE = 2
DEFAULT_POOL_MAX_BYTES = 1 << 30
#: ``[retention]``: days events of settled tasks, and checkouts of failed ones, are kept.
DEFAULT_KEEP_DAYS = 30
DEFAULT_CHECKOUT_DAYS = 7
#: What a desktop notification is sent for (``[notify] on``; baton.surfaces.desktop.KINDS).
NOTIFY_KINDS = ("input", "settled", "budget")

POOL_SIZE: Field[int] = Field(
    ("pool", "size"), "integer ≥ 0", f"`{DEFAULT_POOL_SIZE}`",
    "checkouts of each repository kept ready ahead of need, so a task takes one and git writes"
    " only the files its snapshot changes (`0`: none). Made in the background at the lowest"
    " priority after a task started; only for repositories of at least 1,000 tracked files"
    " (below that a fresh checkout is as quick); `baton clean` removes them",
    count, "a whole number ≥ 0", DEFAULT_POOL_SIZE, user_only=True,
)  # fmt: skip
POOL_MAX_BYTES: Field[int] = Field(
    ("pool", "max_bytes"), "integer ≥ 0", "`1073741824` (1 GiB)",
    "the most the ready checkouts of every repository take on disk together; the oldest of"
    " other repositories make room",
    count, "a whole number of bytes ≥ 0", DEFAULT_POOL_MAX_BYTES, user_only=True,
)  # fmt: skip

RETENTION_KEEP_DAYS: Field[int] = Field(
    ("retention", "keep_days"), "integer", "`30`",
    "days the events of a settled task are kept; then all but its last are pruned (the"
    " task, its diff, its decisions and the ledger stay); `0` keeps them for ever",
    count, "a whole number of days ≥ 0", DEFAULT_KEEP_DAYS, user_only=True,
)  # fmt: skip
RETENTION_CHECKOUT_DAYS: Field[int] = Field(
    ("retention", "checkout_days"), "integer", "`7`",
    "days a failed, cancelled or interrupted task keeps its checkout for a retry in it;"
    " then it is removed with its snapshot (a retry starts from a new snapshot of your"
    " files); `0` keeps it",
    count, "a whole number of days ≥ 0", DEFAULT_CHECKOUT_DAYS, user_only=True,
)  # fmt: skip
NOTIFY_DESKTOP: Field[bool] = Field(
    ("notify", "desktop"), "boolean", "`false`",
    "the broker sends a desktop notification (`notify-send` on Linux, `osascript` on macOS)"
    " when a task needs input, settles or meets its budget, with no editor open; bursts"
    " become one summary (see [cli.md](cli.md#notifications))",
    boolean, "true or false", False, user_only=True,
)  # fmt: skip
NOTIFY_ON: Field[list[str]] = Field(
    ("notify", "on"), f"list of {_choices(NOTIFY_KINDS)}", '`["input", "settled", "budget"]`',
    "what is notified: a question or permission waiting (`input`); review ready, answered,"
    " failed, cancelled, interrupted (`settled`); a budget's stop or alert (`budget`)",
    some_of(NOTIFY_KINDS), f"a list of {_either(NOTIFY_KINDS)}", list(NOTIFY_KINDS),
    user_only=True,
)  # fmt: skip

_GROUP = ("groups", "NAME")
GROUP_PROVIDER: Field[str | None] = Field(
    (*_GROUP, "provider"), "provider name", "any",
    "the accounts of this provider are in the group (with `model`: those running it)"
    " ([Groups and shifts](#groups-and-shifts))",
    nonempty, "a provider", None,
)  # fmt: skip
GROUP_MODEL: Field[str | None] = Field(
    (*_GROUP, "model"), "string", "any",
    "the accounts running a model whose name contains this (case-insensitive) are in it",
    nonempty, "a part of a model's name", None,
)  # fmt: skip
GROUP_MAX: Field[int | None] = Field(
    (*_GROUP, "max"), "integer > 0", "no cap",
    "tasks live at once (queued to verifying) across all of the group's accounts; a task"
    " for a full group goes to another allowed worker, or is refused naming the group",
    positive, "a whole number > 0", None,
)  # fmt: skip
GROUP_FROM: Field[str | None] = Field(
    (*_GROUP, "from"), '`"HH:MM"`', "no shift",
    "when the group's shift starts (with `to`): off shift its accounts take no task",
    clock, 'a time of day, "HH:MM"', None,
)  # fmt: skip
GROUP_TO: Field[str | None] = Field(
    (*_GROUP, "to"), '`"HH:MM"`', "no shift",
    "when it ends (earlier than `from`: the shift crosses midnight)",
    clock, 'a time of day, "HH:MM"', None,
)  # fmt: skip
GROUP_TIMEZONE: Field[str] = Field(
    (*_GROUP, "timezone"), "IANA time zone", '`"UTC"`',
    "the time zone of `from` and `to` (`Asia/Shanghai`, `Europe/Paris`)",
    timezone_name, "an IANA time zone name", "UTC",
)  # fmt: skip
GROUP_GRACE: Field[float] = Field(
    (*_GROUP, "grace"), "seconds", "`0`",
    "how long after the shift's end work still running may go on; then it is interrupted,"
    " its work kept (`baton retry` resumes it)",
    amount, "a number of seconds ≥ 0", 0.0,
)  # fmt: skip
GROUP_SHARED_QUOTA: Field[bool] = Field(
    (*_GROUP, "shared_quota"), "boolean", "`false`",
    "a rate limit on one of its accounts cools all of them down until the same time",
    boolean, "true or false", False,
)  # fmt: skip

#: The keys of a budget (``[budget]``, ``[profiles.NAME.budget]``, ``[budget.models."MODEL"]``):
#: name → type, meaning, check, the error's "must be …". See baton.core.budget.
_BUDGET: dict[str, tuple[str, str, Callable[[Any], Any], str]] = {
    "task_tokens": (
        "integer ≥ 1",
        "tokens a task may use over all its attempts (input, cached and"
        " output); reaching it stops the attempt with completion `budget` (see"
        " [Budgets](#budgets))",
        positive,
        "a whole number ≥ 1",
    ),
    "task_cost": (
        CURRENCY,
        "what a task may cost over all its attempts (the reported or estimated cost)",
        amount,
        "a number ≥ 0",
    ),
    "task_steps": (
        "integer ≥ 1",
        "tool calls a task's agent may make over all its attempts; the call"
        " after the last is stopped",
        positive,
        "a whole number ≥ 1",
    ),
    "task_seconds": (
        "seconds",
        "how long a task's agent may run over all its attempts (waiting for the user not counted)",
        seconds,
        "a positive number of seconds",
    ),
    "day_tokens": (
        "integer ≥ 1",
        "tokens the project's attempts started today (local time) may use"
        " together; at 80 % and 90 % an alert, at 100 % no attempt starts and the running"
        " ones stop",
        positive,
        "a whole number ≥ 1",
    ),
    "day_cost": (CURRENCY, "the same for their cost", amount, "a number ≥ 0"),
}
_TASK_BUDGET = ("task_tokens", "task_cost", "task_steps", "task_seconds")


def _budget_fields(
    prefix: Key, names: Sequence[str], says: Callable[[str], str] | None = None
) -> tuple[Field[Any], ...]:
    out: list[Field[Any]] = []
    for name in names:
        kind, meaning, check, want = _BUDGET[name]
        text = says(name) if says else meaning
        safe = prefix[0] == "profiles"  # a budget changes what it spends, not where or as whom
        out.append(Field((*prefix, name), kind, "none", text, check, want, None, account_safe=safe))
    return tuple(out)


def _profile_says(name: str) -> str:
    if name.startswith("task_"):
        return f"`budget.{name}` for this profile's tasks, over it"
    return f"`budget.{name}` for this profile's attempts in every project"


BUDGET_FIELDS = _budget_fields(("budget",), tuple(_BUDGET))
PROFILE_BUDGET_FIELDS = _budget_fields(
    ("profiles", "NAME", "budget"), tuple(_BUDGET), _profile_says
)
MODEL_BUDGET_FIELDS = _budget_fields(
    ("budget", "models", "MODEL"), _TASK_BUDGET,
    lambda name: f"`budget.{name}` for the tasks that run this model, over the profile's",
)  # fmt: skip
DASHBOARD_ACTIONS: Field[bool] = Field(
    ("dashboard", "actions"), "boolean", "`false`",
    "whether the dashboard page (`baton dashboard`) may accept, reject and cancel; off, it"
    " only shows. Each action also needs the page's session cookie and CSRF token",
    boolean, "true or false", False, user_only=True,
)  # fmt: skip
