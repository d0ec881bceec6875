"""Answering permission requests without the user: a policy by tool kind.

A policy maps an ACP tool kind (``read``, ``edit``, ``delete``, ``move``, ``search``,
``execute``, ``think``, ``fetch``, ``switch_mode``, ``other``) to ``allow``, ``ask`` or
``deny``. For kinds that touch files (read, edit, delete, move) ``allow`` holds only when
every path the request names is inside the task's checkout; anything outside is asked.

The default lets the agent read and edit its own checkout, asks before shell commands and
anything unknown, and denies network fetches. A profile overrides kinds with
``options.permissions`` (``{execute = "allow"}``); ``{"*": "ask"}`` asks for everything.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Literal

from baton.errors import InvalidInput

Decision = Literal["allow", "ask", "deny"]
DECISIONS: tuple[Decision, ...] = ("allow", "ask", "deny")

#: Tool kinds whose ``allow`` only covers paths inside the checkout.
FILE_KINDS = frozenset({"read", "edit", "delete", "move"})

DEFAULT_POLICY: dict[str, Decision] = {
    "read": "allow",
    "search": "allow",
    "think": "allow",
    "edit": "allow",
    "delete": "allow",
    "move": "allow",
    "execute": "ask",
    "fetch": "deny",
    "switch_mode": "ask",
    "other": "ask",
}


class PolicyError(InvalidInput, ValueError):
    """A policy names an unknown decision."""


def make_policy(overrides: Mapping[str, object] | None) -> dict[str, Decision]:
    """The default policy with ``overrides`` (kind → decision; ``*`` sets every kind)."""
    policy = dict(DEFAULT_POLICY)
    for kind, value in (overrides or {}).items():
        if value not in DECISIONS:
            raise PolicyError(
                f"permission policy for {kind!r} must be one of {', '.join(DECISIONS)}, "
                f"got {value!r}"
            )
        decision: Decision = value
        if kind == "*":
            policy = dict.fromkeys(policy, decision)
        else:
            policy[str(kind)] = decision
    return policy


def inside(path: str, root: str) -> bool:
    """Whether ``path`` (absolute, or relative to ``root``) lies inside ``root``.

    Symlinks are resolved, so a link in the checkout pointing outside is outside.
    """
    real_root = os.path.realpath(root)
    full = path if os.path.isabs(path) else os.path.join(root, path)
    real = os.path.realpath(full)
    return real == real_root or real.startswith(real_root.rstrip(os.sep) + os.sep)


def decide(
    policy: Mapping[str, Decision], kind: str | None, paths: Iterable[str], root: str
) -> Decision:
    """What the policy says about a request of tool ``kind`` touching ``paths``."""
    name = kind or "other"
    decision = policy.get(name, policy.get("other", "ask"))
    if decision == "allow" and name in FILE_KINDS and not all(inside(p, root) for p in paths):
        return "ask"
    return decision
