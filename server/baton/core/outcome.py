"""How an attempt ended, folded from its normalized events (never from the exit code alone)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion


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
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None

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
                self.input_tokens = max(self.input_tokens, int(d.get("input", 0) or 0))
                self.output_tokens = max(self.output_tokens, int(d.get("output", 0) or 0))
                if d.get("cost") is not None:
                    self.cost = float(d["cost"])
            case _:
                pass

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
