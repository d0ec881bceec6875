"""Groups of accounts, pure parts: who is in a group, shifts in a time zone (crossing
midnight, with a grace), the refusals naming the group, and shared quotas."""

from __future__ import annotations

from datetime import datetime
from zoneinfo import ZoneInfo

import pytest

from baton.config.layers import ConfigError
from baton.config.settings import load_settings
from baton.core.groups import Group, closed, shared_cooling

SH = ZoneInfo("Asia/Shanghai")


def at(hour: int, minute: int = 0, day: int = 2) -> float:
    return datetime(2026, 12, day, hour, minute, tzinfo=SH).timestamp()


NIGHT = Group("alibaba", provider="opencode", model="qwen", max=4, shift_from="22:00",
              shift_to="06:00", timezone="Asia/Shanghai", grace=600)  # fmt: skip


def test_who_is_in_a_group() -> None:
    assert NIGHT.takes("opencode", "alibaba/Qwen3-coder")
    assert not NIGHT.takes("opencode", "gpt-5") and not NIGHT.takes("claude", "qwen")
    assert Group("g", model="qwen").takes("pi", "qwen-max")
    assert not Group("g").takes("pi", "qwen")  # matches nothing without provider or model


def test_a_shift_crosses_midnight_in_its_own_time_zone() -> None:
    assert NIGHT.on_shift(at(23)) and NIGHT.on_shift(at(5, 59)) and NIGHT.on_shift(at(22))
    assert not NIGHT.on_shift(at(6)) and not NIGHT.on_shift(at(12))
    assert NIGHT.last_end(at(12)) == at(6)
    assert NIGHT.last_end(at(5)) == at(6, day=1)
    assert not NIGHT.stops_work(at(6, 5))  # within the 10-minute grace
    assert NIGHT.stops_work(at(6, 10)) and not NIGHT.stops_work(at(23))
    day = Group("d", provider="x", shift_from="09:00", shift_to="17:00", timezone="UTC")
    utc = datetime(2026, 12, 2, 12, tzinfo=ZoneInfo("UTC")).timestamp()
    assert day.on_shift(utc) and not day.on_shift(utc + 6 * 3600)


def test_refusals_name_the_group() -> None:
    assert closed([NIGHT], "opencode", "qwen3", {"alibaba": 4}, at(23)) == (
        "group alibaba is full (4/4 live)"
    )
    assert closed([NIGHT], "opencode", "qwen3", {"alibaba": 3}, at(23)) is None
    assert closed([NIGHT], "opencode", "qwen3", {}, at(12)) == (
        "group alibaba is off shift (its shift is 22:00 to 06:00 Asia/Shanghai)"
    )
    assert closed([NIGHT], "claude", "sonnet", {"alibaba": 9}, at(12)) is None


def test_a_shared_quota_cools_the_whole_group() -> None:
    g = Group("fakes", provider="fake", shared_quota=True)
    members = {"fa": ("fake", None), "fb": ("fake", None), "cl": ("claude", None)}
    assert shared_cooling([g], members, {"fa": 100.0}) == {"fa": 100.0, "fb": 100.0}
    alone = Group("fakes", provider="fake")
    assert shared_cooling([alone], members, {"fa": 100.0}) == {"fa": 100.0}


def test_groups_in_the_config(tmp_path: pytest.TempPathFactory) -> None:
    user = tmp_path / "u.toml"  # type: ignore[operator]
    user.write_text(
        '[groups.alibaba]\nprovider = "opencode"\nmodel = "qwen"\nmax = 4\n'
        'from = "22:00"\nto = "06:00"\ntimezone = "Asia/Shanghai"\ngrace = 600\n'
    )
    (g,) = load_settings(None, user_config=user).groups
    assert (g.name, g.max, g.shift_from, g.timezone, g.grace) == (
        "alibaba", 4, "22:00", "Asia/Shanghai", 600.0,
    )  # fmt: skip
    for bad, said in (
        ("[groups.g]\nmax = 2\n", "needs provider or model"),
        ('[groups.g]\nmodel = "q"\nfrom = "22:00"\n', "needs both from and to"),
        ('[groups.g]\nmodel = "q"\nfrom = "25:00"\nto = "01:00"\n', 'a time of day, "HH:MM"'),
        ('[groups.g]\nmodel = "q"\ntimezone = "Mars/Olympus"\n', "an IANA time zone name"),
        ('[groups.g]\nmodel = "q"\nsize = 3\n', "unknown group field"),
    ):
        user.write_text(bad)
        with pytest.raises(ConfigError, match=said):
            load_settings(None, user_config=user)
