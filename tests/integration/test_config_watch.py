"""Settings files re-read on change (watchfiles) without a restart; ``baton config`` provenance."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from baton.config.layers import ConfigError
from baton.config.profiles import Profile
from baton.config.watch import SettingsCache
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor, TaskError

TWO = '[profiles.fa]\nprovider = "fake"\n[profiles.fb]\nprovider = "fake"\n'


@pytest.fixture
def user_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "xdg" / "baton" / "config.toml"
    path.parent.mkdir(parents=True)
    monkeypatch.setenv("BATON_CONFIG", str(path))
    return path


async def test_an_edited_project_file_is_re_read_without_a_restart(
    repo: Path, user_file: Path
) -> None:
    base = {"fake": Profile(name="fake", provider="fake")}
    cache = SettingsCache(profiles=base, user_config=user_file)
    cache.start()
    try:
        (repo / ".baton.toml").write_text(f'default_worker = "fa"\n{TWO}')
        assert cache.get(repo).default_worker == "fa"
        gen = cache.generation
        await _settle_watcher()
        (repo / ".baton.toml").write_text(f'default_worker = "fb"\n{TWO}')
        gen = await cache.wait_for_change(gen)
        assert cache.get(repo).default_worker == "fb"
        # A broken file: get() names file and line; the last good settings stay available.
        (repo / ".baton.toml").write_text(f'default_worker = "fb"\n{TWO}[oops\n')
        gen = await cache.wait_for_change(gen)
        with pytest.raises(ConfigError, match=r"\.baton\.toml:6: not valid TOML"):
            cache.get(repo)
        last = cache.last_good(repo)
        assert last is not None and last.default_worker == "fb"
        # The user's file is watched too.
        user_file.write_text('brief_rules = ["from the user"]\n')
        (repo / ".baton.toml").write_text(TWO)
        await cache.wait_for_change(gen)
        await _until(lambda: cache.get(repo).brief_rules == ("from the user",))
    finally:
        await cache.close()


async def test_supervisor_routes_by_the_edited_file(
    baton_home: Path, repo: Path, user_file: Path
) -> None:
    sup = Supervisor(baton_home, limits=Limits(kill_grace=1.0))
    await sup.start()
    try:
        (repo / ".baton.toml").write_text(f'default_worker = "fa"\n{TWO}')
        first = await sup.delegate(DelegateRequest("say hi", root=str(repo)))
        assert first.worker == "fa"
        await _settle_watcher()
        gen = sup.settings.generation
        (repo / ".baton.toml").write_text(f'default_worker = "fb"\n{TWO}')
        await sup.settings.wait_for_change(gen)
        second = await sup.delegate(DelegateRequest("say hi", root=str(repo)))
        assert second.worker == "fb"
        gen = sup.settings.generation
        (repo / ".baton.toml").write_text('only = ["nobody"]\n')
        await sup.settings.wait_for_change(gen)
        with pytest.raises(TaskError, match=r"\.baton\.toml:1: only: names unknown profile"):
            await sup.delegate(DelegateRequest("say hi", root=str(repo)))
    finally:
        await sup.close()


@pytest.mark.parametrize("how", ["folder made later", "symlink edited at its target"])
async def test_a_new_profile_is_seen_within_two_seconds(
    repo: Path, tmp_path: Path, how: str
) -> None:
    """What inotify on the config folders cannot see is caught by comparing the files' stat
    each second: the user's config folder created after the broker started, and a config
    file that is a symlink (dotfiles) edited where it points."""
    user = tmp_path / "later" / "baton" / "config.toml"
    target = user
    if how == "symlink edited at its target":
        target = tmp_path / "dotfiles" / "config.toml"
        target.parent.mkdir()
        target.write_text("")
        user.parent.mkdir(parents=True)
        user.symlink_to(target)
    cache = SettingsCache(
        profiles={"fake": Profile(name="fake", provider="fake")}, user_config=user
    )
    cache.start()
    try:
        assert "fb" not in cache.get(repo).profiles
        await _settle_watcher()
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text('[profiles.fb]\nprovider = "fake"\n')
        written = time.monotonic()
        await _until(lambda: "fb" in cache.get(repo).profiles, timeout=10)
        assert time.monotonic() - written < 2.5  # one comparison a second, and a loaded machine
    finally:
        await cache.close()


async def test_a_write_while_the_watcher_restarts_is_not_lost(repo: Path, user_file: Path) -> None:
    """A new folder makes the watcher restart; a write in that gap has no event to be seen by."""
    cache = SettingsCache(
        profiles={"fake": Profile(name="fake", provider="fake")}, user_config=user_file
    )
    cache.start()
    try:
        cache.get(repo)
        await _settle_watcher()
        other = repo.parent / "other"
        other.mkdir()
        cache.get(other)  # the watcher restarts to watch it too...
        user_file.write_text('[profiles.fb]\nprovider = "fake"\n')  # ...while this is written
        await _until(lambda: "fb" in cache.get(repo).profiles, timeout=5)
    finally:
        await cache.close()


def baton(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
    )


def test_baton_config_prints_each_layer_and_where_each_value_came_from(
    repo: Path, user_file: Path
) -> None:
    user_file.write_text(
        'default_model = "claude-sonnet-4-5"\n\n[profiles.mine]\nprovider = "claude"\n'
        'env = { ANTHROPIC_API_KEY = "sk-literal-value-123", X = "keyring:baton/x" }\n'
    )
    (repo / ".baton.toml").write_text(f'\ndefault_worker = "fa"\n{TWO}')
    env = {**os.environ, "BATON_CONFIG": str(user_file)}
    out = baton("config", str(repo), cwd=repo, env=env)
    assert out.returncode == 0, out.stderr
    text = out.stdout
    assert f"project  {repo / '.baton.toml'}" in text and f"user     {user_file}" in text
    assert 'default_worker = "fa"' in text and f"# project {repo / '.baton.toml'}:2" in text
    assert f"# user {user_file}:1" in text  # default_model
    assert "# default (built in)" in text
    assert "sk-literal-value-123" not in text and '"keyring:baton/x"' in text

    doc = json.loads(baton("config", "--json", cwd=repo, env=env).stdout)
    entry = doc["settings"]["profiles.fa.provider"]
    assert entry["value"] == "fake" and entry["source"]["line"] == 4
    assert entry["source"]["layer"] == "project"
    assert doc["settings"]["profiles.mine.env.ANTHROPIC_API_KEY"]["value"] == "********"
    assert [x["layer"] for x in doc["layers"]] == ["default", "user", "project"]

    (repo / ".baton.toml").write_text('default_worker = "fa"\n\n[profiles.fa]\nprovider = 7\n')
    bad = baton("config", str(repo), cwd=repo, env=env)
    assert bad.returncode == 1 and "must be one of" in " ".join(bad.stderr.split())
    error = json.loads(baton("config", "--json", str(repo), cwd=repo, env=env).stdout)["error"]
    assert error.startswith(f"{repo / '.baton.toml'}:4: profiles.fa.provider: must be one of")


async def _settle_watcher() -> None:
    """Give the watcher a moment to (re)start on the folders it was just told about."""
    import asyncio

    await asyncio.sleep(0.3)


async def _until(check: object, timeout: float = 5.0) -> None:
    import asyncio
    import time

    deadline = time.monotonic() + timeout
    while not check():  # type: ignore[operator]
        assert time.monotonic() < deadline
        await asyncio.sleep(0.05)
