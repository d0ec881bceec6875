"""The runtime: the supervisor that owns tasks, and the parts it is built from.

The surfaces and the CLI use only the names below (loaded on first use, so importing
``baton.runtime`` for a client's :class:`DelegateRequest` does not import the supervisor):
the :class:`Supervisor` and its requests (:class:`TaskEdit` too) and errors, and three
readers of what a task records that the language server shows — :func:`redone_of` (the
user's text a hunk was redone against), :func:`since_last_review` (a revised task's
interdiff), :func:`rewrites` (a revision's hunks over lines accepted before it),
:class:`Redecided` (an undo or redo decided once) and :func:`read_current` (a file's text
as a proposal is merged into it); and :class:`Planning` (a planner's graph proposed,
checked and approved: its :class:`Proposal` and :class:`PlanRefused`).
``baton stats`` reads the ledger of outcomes and cool-downs offline through
:mod:`baton.runtime.accounts`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from baton.runtime import accounts
    from baton.runtime.broker import Limits, TaskError, broker_alive
    from baton.runtime.editing import TaskEdit
    from baton.runtime.planning import Planning, PlanRefused, Proposal
    from baton.runtime.proposals import read_current
    from baton.runtime.redo import redone_of
    from baton.runtime.reopen import Redecided
    from baton.runtime.requests import DelegateRequest, GraphNode
    from baton.runtime.revision import rewrites, since_last_review
    from baton.runtime.supervisor import Supervisor

_HOME = {
    "Limits": "broker",
    "TaskError": "broker",
    "broker_alive": "broker",
    "DelegateRequest": "requests",
    "GraphNode": "requests",
    "Supervisor": "supervisor",
    "TaskEdit": "editing",
    "Planning": "planning",
    "PlanRefused": "planning",
    "Proposal": "planning",
    "read_current": "proposals",
    "redone_of": "redo",
    "since_last_review": "revision",
    "rewrites": "revision",
    "Redecided": "reopen",
}


def __getattr__(name: str) -> Any:
    if name == "accounts":
        return importlib.import_module("baton.runtime.accounts")
    module = _HOME.get(name)
    if module is None:
        raise AttributeError(f"module 'baton.runtime' has no attribute {name!r}")
    return getattr(importlib.import_module(f"baton.runtime.{module}"), name)


__all__ = [
    "DelegateRequest",
    "GraphNode",
    "Limits",
    "PlanRefused",
    "Planning",
    "Proposal",
    "Redecided",
    "Supervisor",
    "TaskEdit",
    "TaskError",
    "accounts",
    "broker_alive",
    "read_current",
    "redone_of",
    "rewrites",
    "since_last_review",
]
