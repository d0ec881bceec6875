"""The Ray runner is optional: Baton imports nothing of Ray without the extra, a profile says
``runner = "ray"`` in the user's config only, and its secrets stay home unless it says so."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from baton.agents.registry import adapter_for
from baton.config.layers import ConfigError
from baton.config.profiles import Profile
from baton.config.settings import load_settings
from baton.core.masking import MASK_ENV
from baton.process import ray_runner
from baton.process.transport import NativeTransport

BLOCK_RAY = """
import importlib, pkgutil, sys

class NoRay:
    def find_spec(self, name, path=None, target=None):
        if name == "ray" or name.startswith("ray."):
            raise ImportError("ray is blocked in this test")
        return None

sys.meta_path.insert(0, NoRay())
import baton
names = [m.name for m in pkgutil.walk_packages(baton.__path__, "baton.")]
names = [n for n in names if not n.endswith("__main__")]
for name in names:
    importlib.import_module(name)
assert not any(m == "ray" or m.startswith("ray.") for m in sys.modules), "ray was imported"
print(len(names))
"""


def test_every_module_imports_with_ray_absent() -> None:
    done = subprocess.run(
        [sys.executable, "-c", BLOCK_RAY], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert int(done.stdout) > 100


def test_runner_ray_without_the_extra_says_how_to_get_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(ray_runner, "ray_installed", lambda: False)
    profile = Profile(name="far", provider="fake", runner="ray", ray_address="127.0.0.1:6379")
    native = NativeTransport(adapter_for("fake"))
    with pytest.raises(ray_runner.RunnerUnavailable, match=r"pip install 'baton-lsp\[ray\]'"):
        ray_runner.placed(native, profile, tmp_path)
    local = Profile(name="near", provider="fake")
    assert ray_runner.placed(native, local, tmp_path) is native  # local: nothing checked


def test_runner_ray_needs_an_address(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(ray_runner, "ray_installed", lambda: True)
    profile = Profile(name="far", provider="fake", runner="ray")
    with pytest.raises(ray_runner.RunnerUnavailable, match="no ray_address"):
        ray_runner.placed(NativeTransport(adapter_for("fake")), profile, tmp_path)


USER = """\
[profiles.far]
provider = "claude"
runner = "ray"
ray_address = "10.0.0.5:6379"
ray_resources = { claude = 1, "claude-work" = 0.5 }
"""


def test_the_profile_keys_are_read(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text(USER)
    far = load_settings(None, profiles={}, user_config=user).profiles["far"]
    assert (far.runner, far.ray_address) == ("ray", "10.0.0.5:6379")
    assert far.ray_resources == {"claude": 1.0, "claude-work": 0.5}
    assert far.ray_ship_secrets is False


def test_a_project_may_not_send_work_to_a_cluster(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    (project / ".baton.toml").write_text(USER)
    with pytest.raises(ConfigError, match="only be set in your user config"):
        load_settings(project, profiles={}, user_config=tmp_path / "none.toml")


def test_bad_resources_are_refused(tmp_path: Path) -> None:
    user = tmp_path / "user.toml"
    user.write_text(USER.replace("claude = 1,", "claude = -1,"))
    with pytest.raises(ConfigError, match=r"ray_resources\.claude"):
        load_settings(None, profiles={}, user_config=user)


def test_secrets_stay_home_unless_the_profile_ships_them() -> None:
    env = {"ANTHROPIC_API_KEY": "sk-secret", "PLAIN": "1", MASK_ENV: "ANTHROPIC_API_KEY"}
    home = Profile(name="far", provider="claude", env=dict(env), runner="ray")
    fields, carried = ray_runner.remote_profile(home)
    assert fields["env"] == {"PLAIN": "1"} and carried == {}
    ships = Profile(name="far", provider="claude", env=dict(env), ray_ship_secrets=True)
    fields, carried = ray_runner.remote_profile(ships)
    assert "ANTHROPIC_API_KEY" not in fields["env"]  # never in the spec file
    assert carried == {"ANTHROPIC_API_KEY": "sk-secret"}


def test_a_store_has_one_namespace(tmp_path: Path) -> None:
    one, other = ray_runner.namespace_for(tmp_path / "a"), ray_runner.namespace_for(tmp_path / "b")
    assert one != other and one == ray_runner.namespace_for(tmp_path / "a")


def test_a_profile_given_in_code_keeps_its_resources(tmp_path: Path) -> None:
    given = Profile(
        name="far", provider="fake", runner="ray", ray_address="h:1", ray_resources={"gpu": 2.0}
    )
    far = load_settings(None, profiles={"far": given}, user_config=tmp_path / "no.toml")
    assert far.profiles["far"].ray_resources == {"gpu": 2.0}
    assert far.profiles["far"].runner == "ray"


def test_a_ray_profile_runs_the_native_stream_even_where_acp_was_chosen(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from types import SimpleNamespace

    from baton.acp import transport as acp
    from baton.runtime import remote

    monkeypatch.setattr(ray_runner, "ray_installed", lambda: True)
    task = SimpleNamespace(options={"transport": acp.ACP})
    far = Profile(name="far", provider="claude", runner="ray", ray_address="h:1")
    placed = remote.place(task, acp.transport_for(acp.ACP, "claude"), far, tmp_path)  # type: ignore[arg-type]
    assert isinstance(placed, ray_runner.RayTransport) and placed.name == acp.NATIVE
    assert task.options["transport"] == acp.NATIVE and task.options["runner"] == "ray"
