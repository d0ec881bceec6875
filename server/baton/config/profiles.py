"""Profiles: one account of one agent CLI (provider, binary, model, env, config folder, cap,
network)."""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass, field
from typing import Any

#: A profile's ``network`` values: its agent may reach the network (its model API), or not.
NETWORKS = ("allow", "none")


@dataclass(slots=True)
class Profile:
    name: str
    provider: str  # claude | codex | opencode | gemini | pi | command | fake
    binary: str | None = None  # the CLI to run; None = the provider's default on PATH
    model: str | None = None
    models: list[str] = field(default_factory=list)  # enabled models; empty = any
    env: dict[str, str] = field(default_factory=dict)  # values may be ``keyring:service/name``
    config_dir: str | None = None
    concurrency: int = 4
    enabled: bool = True
    label: str = ""
    options: dict[str, Any] = field(default_factory=dict)
    network: str = "allow"  # allow | none: whether its sandbox lets it reach the network


#: Every provider a profile may name, sorted: one per adapter of ``baton.agents.registry``
#: (the config floor sits below the agents, so it keeps its own list;
#: tests/unit/test_agents_registry.py checks that the two agree).
PROVIDERS: tuple[str, ...] = (
    "claude", "codex", "command", "external", "fake", "gemini", "opencode", "pi",
)  # fmt: skip

#: Agent CLIs discovered on PATH: (provider, executable name, label). One line per CLI.
DISCOVERABLE: tuple[tuple[str, str, str], ...] = (
    ("claude", "claude", "Claude Code"),
    ("codex", "codex", "Codex CLI"),
    ("opencode", "opencode", "OpenCode"),
    ("gemini", "gemini", "Gemini CLI"),
    ("pi", "pi", "Pi"),
)


def discover(path: str | None = None) -> dict[str, Profile]:
    """A profile per agent CLI installed on ``path`` (default: $PATH), named after its provider."""
    found: dict[str, Profile] = {}
    for provider, executable, label in DISCOVERABLE:
        binary = shutil.which(executable, path=path)
        if binary:
            found[provider] = Profile(name=provider, provider=provider, binary=binary, label=label)
    return found


def default_profiles(path: str | None = None) -> dict[str, Profile]:
    """The fake agent (Baton's own, for demos and tests) plus every agent CLI found on PATH."""
    profiles = {
        "fake": Profile(
            name="fake", provider="fake", binary=sys.executable, concurrency=64, label="fake agent"
        ),
    }
    profiles.update(discover(path))
    return profiles
