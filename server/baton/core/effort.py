"""Reasoning effort's levels: how hard a task asks the agent's model to think (``--effort``).

The union of what the agent CLIs take; how each CLI spells them is
:mod:`baton.agents.effort`.
"""

from __future__ import annotations

LEVELS: tuple[str, ...] = ("low", "medium", "high", "xhigh", "max")
