"""Routing: the policy that picks a worker for a task of a kind (:mod:`baton.core.kinds`).

Pure: no I/O. The runtime gathers what routing needs — the accounts (profiles) a project
allows, the cool-downs recorded in the store, the evidence ledger — and calls :func:`route`.
Every decision carries a ``reason`` in plain words, which the task records.

The order of authority: a worker or model named by the request always wins; otherwise the
project's per-kind allow list (best first, filtered by minimum quality, ordered by the
kind's preference, ties broken by evidence); otherwise the default worker — together with
the other accounts of its provider, which can take over when it is rate limited.
"""

from __future__ import annotations

import re
import time
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

# The kinds and the classifier are also named here: routing is where callers meet them.
from baton.core.kinds import KINDS as KINDS
from baton.core.kinds import LARGE_SELECTION as LARGE_SELECTION
from baton.core.kinds import MANY_FILES as MANY_FILES
from baton.core.kinds import MECHANICAL_MAX_WORDS as MECHANICAL_MAX_WORDS
from baton.core.kinds import Classification as Classification
from baton.core.kinds import Kind as Kind
from baton.core.kinds import classify as classify
from baton.errors import InvalidInput


class Quality(StrEnum):
    """How capable a model is, coarsely; a kind may require a minimum."""

    FAST = "fast"
    STANDARD = "standard"
    FRONTIER = "frontier"


QUALITY_RANK: dict[str, int] = {"fast": 1, "standard": 2, "frontier": 3}

#: How a kind orders its allowed workers: the list's order (best first), cheapest
#: (lowest quality that meets the minimum) first, or best evidence first.
PREFERENCES: tuple[str, ...] = ("order", "cheap", "evidence")

#: What happens when the chosen account is rate limited: take the next allowed one, or wait.
ON_RATE_LIMIT: tuple[str, ...] = ("handoff", "hold")


# -- quality ----------------------------------------------------------------------------------

_FAST = re.compile(r"\b(?:haiku|mini|nano|flash|lite|small|fast)", re.I)
_FRONTIER = re.compile(r"opus|\bo[13]\b|o[13]-|gpt-5(?!-?(?:mini|nano))|-pro\b|pro-|\bmax\b", re.I)


def model_quality(model: str | None, overrides: Mapping[str, str] | None = None) -> str:
    """The quality of ``model``: the project's word for it, else a guess from its name."""
    if not model:
        return Quality.STANDARD
    if overrides and model in overrides:
        return overrides[model]
    if _FAST.search(model):
        return Quality.FAST
    if _FRONTIER.search(model):
        return Quality.FRONTIER
    return Quality.STANDARD


# -- the policy -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Account:
    """What routing needs to know of a profile."""

    name: str
    provider: str
    model: str | None = None
    models: tuple[str, ...] = ()  # enabled models; empty = any
    enabled: bool = True

    def runs(self, model: str | None) -> bool:
        return model is None or not self.models or model in self.models or model == self.model


@dataclass(frozen=True, slots=True)
class KindRule:
    """A kind's allow list of ``provider/model`` or ``profile/model`` (best first)."""

    allow: tuple[str, ...] = ()
    prefer: str = "order"
    min_quality: str | None = None


@dataclass(frozen=True, slots=True)
class Policy:
    default_worker: str
    default_model: str | None = None
    kinds: Mapping[str, KindRule] = field(default_factory=dict)
    only: tuple[str, ...] | None = None  # the accounts this project may use
    on_rate_limit: str = "handoff"
    qualities: Mapping[str, str] = field(default_factory=dict)  # model → quality


@dataclass(frozen=True, slots=True)
class Evidence:
    """Settled outcomes of one worker and model on one kind."""

    tasks: int = 0
    ok: int = 0
    hunks_decided: int = 0
    hunks_accepted: int = 0

    @property
    def score(self) -> float:
        """Share settled ok times share of hunks accepted, both smoothed (no data → 0.5 · 0.5)."""
        settled = (self.ok + 1) / (self.tasks + 2)
        accepted = (self.hunks_accepted + 1) / (self.hunks_decided + 2)
        return settled * accepted


@dataclass(frozen=True, slots=True)
class Choice:
    worker: str
    model: str | None
    why: str = ""  # how this candidate came to be allowed


@dataclass(frozen=True, slots=True)
class Route:
    """The routing decision: who runs the task, or until when it waits."""

    kind: str
    worker: str
    model: str | None
    reason: str
    hold_until: float | None = None  # every allowed account is cooling down until then
    candidates: tuple[Choice, ...] = ()  # every allowed choice, best first
    explicit: bool = False  # named by the request: never handed off


class RoutingError(InvalidInput, ValueError):
    """No worker may run the task (unknown, disabled or not allowed in this project)."""


def allowed_accounts(policy: Policy, accounts: Sequence[Account]) -> list[Account]:
    """The enabled accounts the project's ``only`` list leaves."""
    return [a for a in accounts if a.enabled and (policy.only is None or a.name in policy.only)]


def _check_named(name: str, policy: Policy, accounts: Sequence[Account]) -> Account:
    by_name = {a.name: a for a in accounts}
    account = by_name.get(name)
    if account is None:
        known = ", ".join(sorted(by_name)) or "none"
        raise RoutingError(f"unknown worker {name!r}; configured workers: {known}")
    if not account.enabled:
        raise RoutingError(f"worker {name!r} is disabled")
    if policy.only is not None and name not in policy.only:
        raise RoutingError(
            f"worker {name!r} is not allowed in this project (only: {', '.join(policy.only)})"
        )
    return account


def _model_for(account: Account, policy: Policy) -> str | None:
    if account.name == policy.default_worker and policy.default_model:
        return policy.default_model
    return account.model


def _expand(entry: str, allowed: Sequence[Account]) -> list[Choice]:
    """Accounts and models an allow-list entry names (``profile[/model]``, ``provider[/model]``)."""
    head, _, model = entry.partition("/")
    model_or_none = model or None
    named = [a for a in allowed if a.name == head]
    pool = named or [a for a in allowed if a.provider == head]
    out = []
    for a in pool:
        chosen = model_or_none or a.model
        if a.runs(chosen):
            out.append(Choice(a.name, chosen, f"allowed as {entry!r}"))
    return out


def candidates(
    kind: str,
    policy: Policy,
    accounts: Sequence[Account],
    evidence: Mapping[tuple[str, str | None, str], Evidence] | None = None,
) -> tuple[list[Choice], str]:
    """Every choice the policy allows for ``kind``, best first, and a word on where from."""
    allowed = allowed_accounts(policy, accounts)
    ev = evidence or {}

    def score(c: Choice) -> float:
        return ev.get((c.worker, c.model, kind), Evidence()).score

    rule = policy.kinds.get(kind)
    if rule is not None and rule.allow:
        ranked: list[tuple[tuple[float, ...], Choice]] = []
        seen: set[tuple[str, str | None]] = set()
        floor = QUALITY_RANK.get(rule.min_quality or "", 0)
        for position, entry in enumerate(rule.allow):
            for c in _expand(entry, allowed):
                if (c.worker, c.model) in seen:
                    continue
                seen.add((c.worker, c.model))
                quality = QUALITY_RANK[model_quality(c.model, policy.qualities)]
                if quality < floor:
                    continue
                if rule.prefer == "cheap":
                    key: tuple[float, ...] = (quality, position, -score(c))
                elif rule.prefer == "evidence":
                    key = (-score(c), position)
                else:
                    key = (position, -score(c))
                ranked.append((key, c))
        ranked.sort(key=lambda kc: (kc[0], kc[1].worker))
        if ranked:
            return [c for _, c in ranked], f"{kind} allow list"
    default = next((a for a in allowed if a.name == policy.default_worker), None)
    if default is None:
        return [], "default worker"
    first = Choice(default.name, _model_for(default, policy), "default worker")
    # Other accounts of the same provider can take over a rate-limited default worker.
    siblings = sorted(
        (a for a in allowed if a.provider == default.provider and a.name != default.name),
        key=lambda a: (-score(Choice(a.name, first.model or a.model)), a.name),
    )
    rest = [
        Choice(a.name, first.model if a.runs(first.model) else a.model, f"a {a.provider} account")
        for a in siblings
    ]
    return [first, *rest], "default worker"


def _when(at: float) -> str:
    return time.strftime("%H:%M:%S", time.localtime(at))


def route(
    kind: str,
    policy: Policy,
    accounts: Sequence[Account],
    *,
    worker: str | None = None,
    model: str | None = None,
    kind_reason: str = "",
    cooling: Mapping[str, float] | None = None,
    evidence: Mapping[tuple[str, str | None, str], Evidence] | None = None,
    exclude: Collection[str] = (),
    now: float | None = None,
) -> Route:
    """Pick the worker for a task of ``kind``.

    ``cooling`` maps account names to the end of their cool-down; accounts cooling down
    after ``now`` are passed over (with ``on_rate_limit = "handoff"``) or waited for.
    ``exclude`` leaves accounts out (a handoff excludes the one that failed).
    Raises :class:`RoutingError` when a named worker may not run or nothing is allowed.
    """
    now = time.time() if now is None else now
    cool = {k: v for k, v in (cooling or {}).items() if v > now}
    kind_note = f"kind {kind}" + (f" ({kind_reason})" if kind_reason else "")
    if worker:
        account = _check_named(worker, policy, accounts)
        chosen_model = model or _model_for(account, policy)
        hold = cool.get(account.name)
        reason = "named by the request"
        if hold:
            reason += f"; cooling down until {_when(hold)}"
        return Route(kind, account.name, chosen_model, reason, hold, explicit=True)
    if model:
        allowed = allowed_accounts(policy, accounts)
        able = [a for a in allowed if model in a.models or a.model == model]
        default = next((a for a in allowed if a.name == policy.default_worker), None)
        if not able and default is not None:
            able = [default]
        if not able:
            raise RoutingError(f"no allowed worker runs model {model!r}")
        choices = [Choice(a.name, model, "runs the model named by the request") for a in able]
        picked = _first_available(choices, cool, exclude, policy)
        base = f"model {model} named by the request"
        return _finish(kind, picked, choices, base, cool, explicit=False)
    choices, source = candidates(kind, policy, accounts, evidence)
    if not choices and not policy.default_worker:
        raise RoutingError(
            "no worker to run this task: no default_worker is configured and no agent CLI "
            "is installed and logged in (run `baton doctor`), or name a worker"
        )
    if not choices:
        raise RoutingError(
            f"no worker is allowed for {kind_note}: the default worker "
            f"{policy.default_worker!r} is unknown, disabled or not in this project's only list"
        )
    choices = [c for c in choices if c.worker not in exclude] or []
    if not choices:
        raise RoutingError(f"no other worker is allowed for {kind_note}")
    picked = _first_available(choices, cool, (), policy)
    return _finish(kind, picked, choices, f"{kind_note}; {source}", cool, explicit=False)


def _first_available(
    choices: Sequence[Choice], cool: Mapping[str, float], exclude: Collection[str], policy: Policy
) -> Choice | None:
    usable = [c for c in choices if c.worker not in exclude]
    if policy.on_rate_limit == "hold":
        return usable[0] if usable else None
    return next((c for c in usable if c.worker not in cool), None)


def _finish(
    kind: str,
    picked: Choice | None,
    choices: Sequence[Choice],
    base: str,
    cool: Mapping[str, float],
    *,
    explicit: bool,
) -> Route:
    passed = [c.worker for c in choices if c.worker in cool and c is not picked]
    if picked is not None and picked.worker not in cool:
        reason = f"{base} → {picked.worker}"
        if picked.model:
            reason += f" ({picked.model})"
        if picked.why and picked.why != "default worker":
            reason += f", {picked.why}"
        ahead = choices[: choices.index(picked)]
        skipped = [c.worker for c in ahead if c.worker in passed]
        if skipped:
            reason += "; passed over " + ", ".join(
                f"{w} (cooling down until {_when(cool[w])})" for w in skipped
            )
        return Route(kind, picked.worker, picked.model, reason, None, tuple(choices), explicit)
    # Everyone allowed is cooling down (or the policy holds): wait for the first reset.
    held = picked or min(choices, key=lambda c: cool.get(c.worker, 0.0))
    until = cool.get(held.worker)
    reason = f"{base} → {held.worker}" + (f" ({held.model})" if held.model else "")
    if until:
        reason += f"; held: cooling down until {_when(until)}"
    return Route(kind, held.worker, held.model, reason, until, tuple(choices), explicit)


__all__ = [
    "KINDS",
    "ON_RATE_LIMIT",
    "PREFERENCES",
    "QUALITY_RANK",
    "Account",
    "Choice",
    "Classification",
    "Evidence",
    "Kind",
    "KindRule",
    "Policy",
    "Quality",
    "Route",
    "RoutingError",
    "allowed_accounts",
    "candidates",
    "classify",
    "model_quality",
    "route",
]
