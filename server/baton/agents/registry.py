"""Which adapter speaks for which provider: a plain dict, one entry per agent module."""

from __future__ import annotations

from baton.agents.base import Adapter
from baton.agents.claude import ClaudeAdapter
from baton.agents.codex import CodexAdapter
from baton.agents.command import CommandAdapter
from baton.agents.external import ExternalAdapter
from baton.agents.fake import FakeAdapter
from baton.agents.gemini import GeminiAdapter
from baton.agents.opencode import OpenCodeAdapter
from baton.agents.pi import PiAdapter
from baton.errors import InvalidInput

#: provider name → its adapter (adapters are stateless; parsers carry the per-attempt state).
ADAPTERS: dict[str, Adapter] = {
    "fake": FakeAdapter(),
    "command": CommandAdapter(),
    "external": ExternalAdapter(),
    "opencode": OpenCodeAdapter(),
    "gemini": GeminiAdapter(),
    "pi": PiAdapter(),
    "claude": ClaudeAdapter(),
    "codex": CodexAdapter(),
}


class UnknownProvider(InvalidInput, KeyError):
    """No adapter is registered for a provider."""

    def __init__(self, provider: str) -> None:
        known = ", ".join(sorted(ADAPTERS))
        super().__init__(f"no adapter for provider {provider!r}; known providers: {known}")
        self.provider = provider

    def __str__(self) -> str:  # KeyError would show the message in quotes
        return str(self.args[0])


def adapter_for(provider: str) -> Adapter:
    """The adapter of ``provider``, or :class:`UnknownProvider` naming the known ones."""
    try:
        return ADAPTERS[provider]
    except KeyError:
        raise UnknownProvider(provider) from None


def providers() -> list[str]:
    return sorted(ADAPTERS)
