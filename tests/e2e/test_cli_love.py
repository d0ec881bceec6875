"""``baton love`` and the websocket's ``love``: the default worker for work that names none,
written to the project's file (or the user's), the rest of the file kept, and used by the
next task that names no worker."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from baton.surfaces.ws import protocol
from baton.surfaces.ws.blocking import connect_for
from baton.surfaces.ws.errors import BrokerError
from tests.conftest import fake_script, user_config
from tests.e2e.test_cli import as_json, baton, stop_brokers

PYPROJECT = """\
[project]
name = "app"  # keep me

[tool.baton]
only = ["fake", "quick", "slow"]

[tool.ruff]
line-length = 100
"""


@pytest.fixture(autouse=True)
def _stop_brokers(baton_home: Path, tmp_path: Path) -> Iterator[None]:
    yield
    stop_brokers(tmp_path / "run" / "baton")


def test_love_sets_the_project_default_in_its_own_file(
    baton_home: Path, repo: Path, tmp_path: Path
) -> None:
    config = user_config(
        tmp_path, '[profiles.quick]\nprovider = "fake"\n[profiles.slow]\nprovider = "fake"\n'
    )
    (repo / "pyproject.toml").write_text(PYPROJECT)
    ghost = baton("love", "--json", "--cwd", str(repo), "ghost")
    assert ghost.returncode == 2 and "unknown worker 'ghost'" in as_json(ghost)["error"]
    assert (repo / "pyproject.toml").read_text() == PYPROJECT

    done = baton("love", "--cwd", str(repo), "quick:tiny-model")
    assert done.returncode == 0, done.stdout + done.stderr
    added = 'default_worker = "quick"\ndefault_model = "tiny-model"\n'
    only = 'only = ["fake", "quick", "slow"]\n'
    assert (repo / "pyproject.toml").read_text() == PYPROJECT.replace(only, only + added)
    shown = as_json(baton("love", "--json", "--cwd", str(repo)))
    assert shown["default"] == "quick" and shown["model"] == "tiny-model"
    task = as_json(baton("run", "--json", "--cwd", str(repo), fake_script()))["task"]
    record = as_json(baton("inspect", "--json", "--detail", "task", task["id"]))["detail"]["task"]
    assert record["worker"] == "quick" and record["model"] == "tiny-model"

    # The user's default is written to the user's config; the project's still wins here.
    user = as_json(baton("love", "--json", "--global", "--cwd", str(repo), "slow"))
    assert user["file"] == str(config) and 'default_worker = "slow"' in config.read_text()
    assert user["default"] == "quick"
    cleared = as_json(baton("love", "--json", "--clear", "--cwd", str(repo)))
    assert (
        cleared["default"] == "slow"
        and "default_worker" not in (repo / "pyproject.toml").read_text()
    )
    both = baton("love", "--cwd", str(repo), "--clear", "quick")
    assert both.returncode == 2 and "not both" in both.stderr


def test_love_over_the_websocket(baton_home: Path, repo: Path, tmp_path: Path) -> None:
    user_config(tmp_path, '[profiles.quick]\nprovider = "fake"\n')
    baton("health", "--cwd", str(repo))  # a broker for the folder
    with connect_for(repo) as c:
        set_ = c.call("love", worker="quick")
        assert set_["file"] == str(repo / ".baton.toml") and set_["default"] == "quick"
        assert (repo / ".baton.toml").read_text() == 'default_worker = "quick"\n'
        assert c.call("love")["default"] == "quick"
        with pytest.raises(BrokerError) as bad:
            c.call("love", worker="ghost")
        assert bad.value.code == protocol.INVALID_PARAMS and "unknown worker" in bad.value.message
        with pytest.raises(BrokerError) as alone:
            c.call("love", model="m")
        assert alone.value.code == protocol.INVALID_PARAMS
        cleared = c.call("love", clear=True)
        assert cleared["set"] == {"default_worker": None, "default_model": None}
        assert (repo / ".baton.toml").read_text() == ""
