"""A task's own caps from a request's parameters (``maxTokens``, ``maxCost``, ``maxSteps``,
``maxSeconds`` on ``delegate`` and ``retry``; see docs/reference/config.md, Budgets)."""

from __future__ import annotations

from typing import Any

import baton.surfaces.ws.protocol as p
from baton.core.budget import OPTION, Caps


def caps_of(params: dict[str, Any]) -> Caps:
    """The caps the parameters set (none set: empty caps)."""
    seconds = p.number(params, "maxSeconds", lo=0.001)
    return Caps(
        tokens=p.integer(params, "maxTokens", lo=1, hi=1 << 50),
        cost=p.number(params, "maxCost", lo=0.0),
        steps=p.integer(params, "maxSteps", lo=1),
        seconds=seconds,
    )


def options_of(params: dict[str, Any]) -> dict[str, Any]:
    """The task options a delegate's caps become (``{}`` for none)."""
    caps = caps_of(params)
    return {} if caps.empty else {OPTION: caps.to_json()}
