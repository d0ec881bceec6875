"""Profiles: one account of one agent CLI (provider, binary, model, env, config folder, cap)."""

from __future__ import annotations

import sys
from dataclasses import dataclass, field
from typing import Any


@dataclass(slots=True)
class Profile:
    name: str
    provider: str  # claude | codex | opencode | gemini | pi | command | fake
    binary: str | None = None  # the CLI to run; None = the provider's default on PATH
    model: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    config_dir: str | None = None
    concurrency: int = 4
    enabled: bool = True
    label: str = ""
    options: dict[str, Any] = field(default_factory=dict)


def default_profiles() -> dict[str, Profile]:
    """Profiles that exist on every machine: the fake agent (Baton's own, for demos and tests)."""
    return {
        "fake": Profile(
            name="fake", provider="fake", binary=sys.executable, concurrency=64, label="fake agent"
        ),
    }
