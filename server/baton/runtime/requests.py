"""What a surface (CLI, LSP, websocket) asks the supervisor to do."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from baton.core.brief import Diagnostic
from baton.core.task import Target


@dataclass(frozen=True, slots=True)
class DelegateRequest:
    instruction: str
    root: str
    action: str = "delegate"  # delegate | fix | explain | tests | run
    kind: str | None = None  # routing kind; None = decided by Baton
    targets: Sequence[Target] = ()
    diagnostics: Sequence[Diagnostic] = ()
    overlays: Mapping[str, str] = field(default_factory=dict)  # path → unsaved buffer text
    rules: Sequence[str] = ()  # the editor's brief rules, added to the project's
    scope: Sequence[str] = ()
    worker: str | None = None
    model: str | None = None
    title: str | None = None
    group: str | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    depends_on: Sequence[str] = ()  # task ids that must be accepted before this one starts
    # The task's id, chosen ahead by a step that must find its task again after a crash (a
    # plan's approval); None: a new one.
    task_id: str | None = None


@dataclass(frozen=True, slots=True)
class GraphNode:
    """One task of a small graph delegated in one call; ``after`` names other nodes' keys."""

    key: str
    request: DelegateRequest
    after: Sequence[str] = ()
