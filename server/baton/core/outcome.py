"""How an attempt ended, folded from its normalized events (never from the exit code alone)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion
from baton.core.usage import Usage, counted


@dataclass(slots=True)
class Outcome:
    """Folds an attempt's events into how it ended."""

    session_id: str | None = None
    final: str | None = None
    texts: list[str] = field(default_factory=list)
    question: str | None = None
    error: Completion | None = None
    error_message: str = ""
    session_lost: bool = False  # a resume named a session the CLI no longer has
    retry_after: float | None = None
    resets_at: float | None = None
    model: str | None = None  # the model the CLI says it runs, when it says
    usage: Usage = field(default_factory=Usage)  # this attempt's, as the CLI reported it
    # The CLI's usage counts the whole session so far (``"of": "session"`` on its usage
    # events), earlier attempts' turns of a resumed session included: see usage.own_part.
    session_totals: bool = False
    # The input tokens the attempt's own model calls read, where the stream says them
    # (``seen_input``): a report of more than the session's earlier report plus these holds
    # that earlier one (see usage.own_part).
    seen_input: int | None = None
    _running: bool = False  # the last usage was a running count (see observe)

    @classmethod
    def fold(cls, events: Iterable[Event]) -> Outcome:
        """The outcome of these events, observed in order."""
        outcome = cls()
        for event in events:
            outcome.observe(event)
        return outcome

    def observe(self, event: Event) -> None:
        d = event.data
        match event.type:
            case EventType.SESSION:
                self.session_id = str(d.get("id")) or self.session_id
                if d.get("model"):
                    self.model = str(d["model"])
            case EventType.FINAL:
                self.final = str(d.get("text", ""))
            case EventType.TEXT:
                self.texts.append(str(d.get("text", "")))
            case EventType.QUESTION:
                self.question = str(d.get("text", ""))
            case EventType.ERROR:
                # The first error wins: later ones are usually consequences.
                if self.error is None:
                    try:
                        self.error = Completion(str(d.get("kind", "worker_error")))
                    except ValueError:
                        self.error = Completion.WORKER_ERROR
                    self.error_message = str(d.get("message", ""))
                    self.session_lost = bool(d.get("session_lost"))
                    ra, ra_at = d.get("retry_after"), d.get("resets_at")
                    self.retry_after = float(ra) if ra is not None else None
                    self.resets_at = float(ra_at) if ra_at is not None else None
            case EventType.USAGE:
                # A running count (``running``: a CLI's figure while its turn goes on) is
                # replaced by the turn's own report that follows it.
                reported = Usage.from_json(d)
                self.usage = (
                    reported
                    if self._running and not d.get("running")
                    else (self.usage.widen(reported))
                )
                self._running = bool(d.get("running"))
                self.session_totals = self.session_totals or d.get("of") == "session"
                seen = d.get("seen_input")
                if isinstance(seen, int) and not isinstance(seen, bool):
                    self.seen_input = max(self.seen_input or 0, seen)
                if d.get("model"):  # a CLI that names its model only with its usage (Pi)
                    self.model = str(d["model"])
            case _:
                pass

    def own_usage(
        self, options: Mapping[str, Any], attempt: int, session: str | None = None
    ) -> Usage:
        """This attempt's usage less what a resumed session's report holds of earlier
        attempts (:func:`baton.core.usage.counted`; ``options``: the task's); nothing is
        written — the turn loop keeps the report when the attempt ends."""
        if not self.session_totals and self.seen_input is None:
            return self.usage
        sid = self.session_id or session
        return counted(options, attempt, sid, self.usage, seen_input=self.seen_input)

    @property
    def input_tokens(self) -> int:
        return self.usage.input + self.usage.cached_input

    @property
    def output_tokens(self) -> int:
        return self.usage.output

    @property
    def cost(self) -> float | None:
        return self.usage.cost

    @property
    def completion(self) -> Completion:
        if self.error is not None:
            return self.error
        if self.final is not None or self.question is not None:
            return Completion.COMPLETED
        return Completion.WORKER_ERROR

    @property
    def answer(self) -> str:
        return self.final if self.final is not None else "".join(self.texts).strip()
