"""Token usage and cost in one shape for every agent CLI, and the price table that estimates
the cost where the CLI says none.

:class:`Usage` counts tokens the way they are billed: ``input`` is the input read at the full
price (cache writes included), ``cached_input`` the input read from the provider's prompt cache
(cheaper), ``output`` everything the model wrote, its reasoning included; ``reasoning`` is the
part of ``output`` the CLI says was reasoning (``None`` where it does not say). Each adapter maps
its CLI's own fields onto these (Codex and Gemini count cached input inside their input; Claude,
OpenCode and Pi count it apart; OpenCode counts reasoning apart from output).

``cost`` is in :data:`CURRENCY`. Its ``cost_source`` is ``"reported"`` when the CLI said it
(Claude Code's ``total_cost_usd``; OpenCode's and Pi's own cost when it is above zero) and
``"estimated"`` when Baton computed it from a :class:`Price`: the shipped
:data:`DEFAULT_PRICES` (list prices as of :data:`PRICES_AS_OF`, which go stale) or the
``[prices."MODEL"]`` tables of the config. A reported cost wins over an estimate.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

REPORTED = "reported"
ESTIMATED = "estimated"
CURRENCY = "USD"
#: When the shipped prices were taken from the vendors' public price lists.
PRICES_AS_OF = "2025-11"


def _count(v: object) -> int:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) and v > 0 else 0


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one attempt (or a whole task) used, and what they cost."""

    input: int = 0
    cached_input: int = 0
    output: int = 0
    reasoning: int | None = None
    cost: float | None = None
    cost_source: str | None = None  # REPORTED | ESTIMATED; None while there is no cost

    @classmethod
    def of(
        cls,
        input: object = 0,
        cached_input: object = 0,
        output: object = 0,
        reasoning: object = None,
        cost: object = None,
    ) -> Usage:
        """A usage from a CLI's own numbers; a number ``cost`` is the CLI's (``reported``)."""
        priced = isinstance(cost, int | float) and not isinstance(cost, bool)
        return cls(
            input=_count(input),
            cached_input=_count(cached_input),
            output=_count(output),
            reasoning=_count(reasoning) if reasoning is not None else None,
            cost=float(cost) if priced else None,  # type: ignore[arg-type]
            cost_source=REPORTED if priced else None,
        )

    @property
    def tokens(self) -> int:
        """All tokens: input, cached input and output."""
        return self.input + self.cached_input + self.output

    @property
    def empty(self) -> bool:
        return not self.tokens and self.cost is None

    def __add__(self, other: Usage) -> Usage:
        """The usage of both (two attempts of one task). The cost is the sum of the known
        costs; it is ``reported`` only when every part that has one was."""
        if other.empty:
            return self
        if self.empty:
            return other
        reasoning = (
            None
            if self.reasoning is None and other.reasoning is None
            else (self.reasoning or 0) + (other.reasoning or 0)
        )
        costs = [u for u in (self, other) if u.cost is not None]
        cost = sum(u.cost or 0.0 for u in costs) if costs else None
        source = None
        if costs:
            source = REPORTED if all(u.cost_source == REPORTED for u in costs) else ESTIMATED
        return Usage(
            self.input + other.input,
            self.cached_input + other.cached_input,
            self.output + other.output,
            reasoning,
            cost,
            source,
        )

    def widen(self, later: Usage) -> Usage:
        """This attempt's usage after a later report of it: the CLIs report running totals,
        so each count is the larger of the two, and the later cost, when given, wins."""
        reasoning = self.reasoning
        if later.reasoning is not None:
            reasoning = max(reasoning or 0, later.reasoning)
        keep = later.cost is None
        return Usage(
            max(self.input, later.input),
            max(self.cached_input, later.cached_input),
            max(self.output, later.output),
            reasoning,
            self.cost if keep else later.cost,
            self.cost_source if keep else later.cost_source,
        )

    def since(self, earlier: Usage) -> Usage:
        """What this report adds to ``earlier``, an earlier report of the same running total
        (a CLI that reports a resumed session's totals): each count less the earlier one.
        When a count went down the total started again (a new session, a compacted one):
        then this report is whole."""
        counts = [
            (self.input, earlier.input),
            (self.cached_input, earlier.cached_input),
            (self.output, earlier.output),
            (self.reasoning or 0, earlier.reasoning or 0),
        ]
        if earlier.empty or any(now < before for now, before in counts):
            return self
        cost = self.cost
        if cost is not None and earlier.cost is not None and cost >= earlier.cost:
            cost -= earlier.cost
        reasoning = None if self.reasoning is None else self.reasoning - (earlier.reasoning or 0)
        return replace(
            self,
            input=self.input - earlier.input,
            cached_input=self.cached_input - earlier.cached_input,
            output=self.output - earlier.output,
            reasoning=reasoning,
            cost=cost,
        )

    def priced(self, price: Price | None) -> Usage:
        """With the cost estimated from ``price`` unless the CLI reported one."""
        if self.cost_source == REPORTED or price is None or not self.tokens:
            return self
        return replace(self, cost=price.cost(self), cost_source=ESTIMATED)

    def to_json(self) -> dict[str, Any]:
        """The shape of a ``usage`` event's data, of ``task.options["usage"]`` and of the
        surfaces' payloads."""
        out: dict[str, Any] = {
            "input": self.input,
            "cached": self.cached_input,
            "output": self.output,
            "cost": self.cost,
            "cost_source": self.cost_source,
        }
        if self.reasoning is not None:
            out["reasoning"] = self.reasoning
        return out

    @classmethod
    def from_json(cls, obj: Mapping[str, Any] | None) -> Usage:
        """The inverse of :meth:`to_json`; older records (no ``cost_source``: their cost was
        always the CLI's) read as ``reported``."""
        if not obj:
            return cls()
        u = cls.of(
            obj.get("input"),
            obj.get("cached", obj.get("cached_input")),
            obj.get("output"),
            obj.get("reasoning"),
            obj.get("cost"),
        )
        source = obj.get("cost_source")
        if u.cost is not None and source in (REPORTED, ESTIMATED):
            u = replace(u, cost_source=str(source))
        return u

    def line(self) -> str:
        """One line for people: ``58902 in, 38 out, 1200 cached · $0.1773 (reported)``."""
        parts = [f"{self.input} in", f"{self.output} out"]
        if self.cached_input:
            parts.append(f"{self.cached_input} cached")
        if self.reasoning:
            parts.append(f"{self.reasoning} reasoning")
        text = "tokens " + ", ".join(parts)
        if self.cost is not None:
            text += f" · {money(self.cost)} ({self.cost_source or REPORTED})"
        return text


def money(cost: float | None) -> str:
    """``$0.1773``, or ``-`` for no cost."""
    return "-" if cost is None else f"${cost:.4f}"


def short_cost(usage: Usage) -> str:
    """A table cell: ``$0.1773`` for a reported cost, ``~$0.0012`` for an estimate, ``-``."""
    if usage.cost is None:
        return "-"
    return ("~" if usage.cost_source == ESTIMATED else "") + money(usage.cost)


def short_tokens(count: int) -> str:
    """``58.9k``, ``1.2M``, ``412``: a token count in a table cell (``-`` for none)."""
    if not count:
        return "-"
    if count >= 1_000_000:
        return f"{count / 1_000_000:.1f}M"
    return f"{count / 1000:.1f}k" if count >= 1000 else str(count)


@dataclass(frozen=True, slots=True)
class Price:
    """What a model's tokens cost, in :data:`CURRENCY` per million tokens."""

    input: float
    cached_input: float
    output: float

    def cost(self, usage: Usage) -> float:
        return (
            usage.input * self.input
            + usage.cached_input * self.cached_input
            + usage.output * self.output
        ) / 1_000_000


#: List prices (USD per million tokens) of the models the CLIs run by default, as of
#: :data:`PRICES_AS_OF`. They are estimates: plans, discounts, long-context rates and cache
#: writes are not in them, and vendors change them; override them with ``[prices."MODEL"]``.
DEFAULT_PRICES: dict[str, Price] = {
    "claude-opus-4-5": Price(5.0, 0.5, 25.0),
    "claude-opus-4-1": Price(15.0, 1.5, 75.0),
    "claude-opus-4": Price(15.0, 1.5, 75.0),
    "claude-sonnet-4-5": Price(3.0, 0.3, 15.0),
    "claude-sonnet-4": Price(3.0, 0.3, 15.0),
    "claude-haiku-4-5": Price(1.0, 0.1, 5.0),
    "gpt-5.1-codex-mini": Price(0.25, 0.025, 2.0),
    "gpt-5.1-codex": Price(1.25, 0.125, 10.0),
    "gpt-5.1": Price(1.25, 0.125, 10.0),
    "gpt-5-codex": Price(1.25, 0.125, 10.0),
    "gpt-5-mini": Price(0.25, 0.025, 2.0),
    "gpt-5-nano": Price(0.05, 0.005, 0.4),
    "gpt-5": Price(1.25, 0.125, 10.0),
    "gemini-2.5-pro": Price(1.25, 0.125, 10.0),
    "gemini-2.5-flash-lite": Price(0.1, 0.01, 0.4),
    "gemini-2.5-flash": Price(0.3, 0.03, 2.5),
}


def price_for(model: str | None, prices: Mapping[str, Price] | None = None) -> Price | None:
    """The price of ``model``: from ``prices`` (the config's, over the defaults) by its exact
    name, then without a ``provider/`` prefix, then the longest known name it starts with
    (``claude-sonnet-4-5-20250929`` → ``claude-sonnet-4-5``). None when none is known."""
    if not model:
        return None
    table = {**DEFAULT_PRICES, **(prices or {})}
    for name in (model, model.rsplit("/", 1)[-1]):
        if name in table:
            return table[name]
    bare = model.rsplit("/", 1)[-1]
    known = [k for k in table if bare.startswith(k + "-") or bare.startswith(k + "@")]
    return table[max(known, key=len)] if known else None


def of_task(options: Mapping[str, Any]) -> Usage:
    """A task's usage, from its options (``usage``: the sum over its attempts)."""
    found = options.get("usage")
    return Usage.from_json(found if isinstance(found, Mapping) else None)


def own_part(
    options: dict[str, Any],
    n: int,
    session: str | None,
    reported: Usage,
    *,
    seen_input: int | None = None,
) -> Usage:
    """Attempt ``n``'s own usage when its CLI may report the running totals of the session it
    resumed: ``reported`` less the last report of the same session by an earlier attempt.

    Codex's ``turn.completed`` always counts the whole thread, earlier turns included. Claude
    Code's ``result`` counts its process (2.1.197 checked; later versions are said to
    restore a resumed session's totals): with ``seen_input``, the input tokens of the
    attempt's own model calls, the earlier report is taken off only when what is left still
    holds them — else the report was the process's own.

    The reports are kept under ``usage_reported`` by attempt number, with their session, so
    settling the same attempt twice gives the same part; :func:`counted` gives the same
    without keeping the report (for an attempt still running)."""
    found = options.get("usage_reported")
    kept: dict[str, Any] = dict(found) if isinstance(found, Mapping) else {}
    kept[str(n)] = {**reported.to_json(), "session": session}
    options["usage_reported"] = kept
    return counted(options, n, session, reported, seen_input=seen_input)


def counted(
    options: Mapping[str, Any],
    n: int,
    session: str | None,
    reported: Usage,
    *,
    seen_input: int | None = None,
) -> Usage:
    """What :func:`own_part` counts of attempt ``n``'s ``reported`` usage, from the reports
    of earlier attempts kept in ``options``; nothing is written."""
    found = options.get("usage_reported")
    if not session or not isinstance(found, Mapping):
        return reported
    earlier = [
        (int(k), v)
        for k, v in found.items()
        if k.isdigit() and int(k) < n and isinstance(v, Mapping) and v.get("session") == session
    ]
    if not earlier:
        return reported
    part = reported.since(Usage.from_json(max(earlier, key=lambda kv: kv[0])[1]))
    if seen_input is not None and part.input + part.cached_input < seen_input:
        return reported  # it did not hold the earlier report: this process's own
    return part


def record_attempt(options: dict[str, Any], n: int, usage: Usage) -> Usage:
    """Write attempt ``n``'s usage into a task's options and return the task's new total.

    Each attempt's usage is kept under ``usage_attempts`` by its number, so settling the same
    attempt twice (a broker that restarted in between) counts it once."""
    found = options.get("usage_attempts")
    per: dict[str, Any] = dict(found) if isinstance(found, Mapping) else {}
    if usage.empty:
        per.pop(str(n), None)
    else:
        per[str(n)] = usage.to_json()
    total = Usage()
    for one in per.values():
        total = total + Usage.from_json(one)
    if per:
        options["usage_attempts"] = per
        options["usage"] = total.to_json()
    return total
