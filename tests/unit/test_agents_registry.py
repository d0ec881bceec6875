"""The provider registry."""

from __future__ import annotations

import pytest

from baton.agents.command import CommandAdapter
from baton.agents.fake import FakeAdapter
from baton.agents.registry import ADAPTERS, UnknownProvider, adapter_for, providers
from baton.config.profiles import PROVIDERS


def test_known_providers_have_their_adapters() -> None:
    assert isinstance(adapter_for("fake"), FakeAdapter)
    assert isinstance(adapter_for("command"), CommandAdapter)
    assert {"fake", "command"} <= set(providers())
    for name in providers():
        assert adapter_for(name).provider == name


def test_unknown_provider_names_the_known_ones() -> None:
    with pytest.raises(KeyError) as info:
        adapter_for("clippy")
    assert isinstance(info.value, UnknownProvider)
    message = str(info.value)
    assert "'clippy'" in message and "command" in message and "fake" in message
    assert not message.startswith('"')


def test_the_config_knows_the_same_providers_as_the_adapters() -> None:
    # config sits below the agents and keeps its own list of the names a profile may use
    assert tuple(sorted(ADAPTERS)) == PROVIDERS
    assert providers() == list(PROVIDERS)
