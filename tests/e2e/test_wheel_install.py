"""Baton as a user installs it: the built wheel in a fresh virtualenv, nothing else.

What ``pipx install baton-lsp`` and ``uv tool install baton-lsp`` do is this: a venv of its
own, the wheel and its dependencies from the package index. The wheel is built once per test
session (the build backend comes from the index, as for any user), then installed into a venv
that sees neither this checkout's sources nor the test venv's packages. The commands below run
from that venv only: ``--version``, ``doctor --json``, a delegation with the fake agent
named explicitly, reviewed and accepted; and, with Claude Code on PATH, a key and no Baton
config, doctor choosing it and a plain ``baton run`` going to it against the scripted model
server.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path
from typing import Any

import pytest

import baton
from tests.conftest import fake_script
from tests.e2e.test_cli import stop_brokers

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600)]

ROOT = Path(__file__).resolve().parents[2]


def _pip(python: Path | str, *args: str, timeout: float = 480) -> None:
    proc = subprocess.run(
        [str(python), "-m", "pip", "--disable-pip-version-check", *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=_clean_env(),
    )
    assert proc.returncode == 0, f"pip {' '.join(args)} failed:\n{proc.stdout}\n{proc.stderr}"


def _clean_env(**extra: str) -> dict[str, str]:
    """The environment of a user's shell: no PYTHONPATH, no test venv on PATH."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    venv_bin = str(Path(sys.prefix) / "bin")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != venv_bin)
    env.update(extra)
    return env


@pytest.fixture(scope="session")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The wheel built from this checkout, once per test session."""
    out = tmp_path_factory.mktemp("wheel")
    _pip(sys.executable, "wheel", "--no-deps", "-q", "-w", str(out), str(ROOT))
    (built,) = out.glob("baton_lsp-*.whl")
    return built


@pytest.fixture(scope="session")
def venv(wheel: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv (no system site-packages) with only the wheel and its dependencies."""
    where = tmp_path_factory.mktemp("venv") / "v"
    base = getattr(sys, "_base_executable", sys.executable)
    subprocess.run([base, "-m", "venv", str(where)], check=True, timeout=120, env=_clean_env())
    _pip(where / "bin" / "python", "install", "-q", str(wheel))
    return where


def _baton(venv: Path, *args: str, env: dict[str, str], cwd: Path | None = None) -> Any:
    return subprocess.run(
        [str(venv / "bin" / "baton"), *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=cwd,
    )


def test_wheel_carries_complete_metadata(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as z:
        meta_name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        meta = z.read(meta_name).decode()
        names = z.namelist()
    fields = [line.split(": ", 1) for line in meta.splitlines() if ": " in line]
    assert ["Version", baton.__version__] in fields  # one version source: baton.__version__
    assert ["Name", "baton-lsp"] in fields
    assert sum(k == "Classifier" for k, _ in fields) >= 5
    assert any(k == "Keywords" and "lsp" in v for k, v in fields)
    assert ["Requires-Python", ">=3.11"] in fields
    # the project's addresses, from [project.urls] (the one place they are written down)
    urls = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]
    for label, url in urls.items():
        assert ["Project-URL", f"{label}, {url}"] in fields, (label, meta)
    assert "baton/agents/fake_agent.py" in names and "baton/py.typed" in names
    assert "baton/surfaces/ws/methods.openrpc.json" in names
    # the dashboard page, built and committed (clients/dashboard): no Node needed to serve it
    for page in ("index.html", "dashboard.js", "dashboard.css"):
        assert f"baton/surfaces/dashboard/static/{page}" in names, names
    assert not any(n.startswith(("tests/", "clients/")) for n in names)


def test_installed_wheel_runs_a_delegation(
    venv: Path, tmp_path: Path, baton_home: Path, repo: Path
) -> None:
    env = _clean_env(COLUMNS="200")
    where = subprocess.run(
        [str(venv / "bin" / "python"), "-c", "import baton; print(baton.__file__)"],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        check=True,
    ).stdout
    assert where.startswith(str(venv)), f"baton imported from outside the venv: {where}"

    version = _baton(venv, "--version", env=env)
    assert version.returncode == 0 and version.stdout.strip() == f"baton {baton.__version__}"

    completion = _baton(venv, "completion", "bash", env=env)
    assert completion.returncode == 0, completion.stderr
    assert "complete " in completion.stdout and "delegate" in completion.stdout

    doctor = _baton(venv, "doctor", "--json", env=env)
    report = json.loads(doctor.stdout)  # exactly one JSON document, whatever it finds
    assert doctor.returncode in (0, 1), doctor.stderr
    assert isinstance(report, dict) and report

    try:
        edit = {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"}
        run = _baton(
            venv,
            "run",
            "--json",
            "--worker",
            "fake",
            "--cwd",
            str(repo),
            fake_script(edit),
            env=env,
            cwd=repo,
        )
        assert run.returncode == 0, run.stderr
        out = json.loads(run.stdout)
        assert out["task"]["state"] == "review", out
        assert (repo / "app.py").read_text().count("return 10") == 0  # nothing until accepted
        acc = _baton(venv, "accept", "--json", out["task"]["id"], env=env, cwd=repo)
        assert acc.returncode == 0, acc.stderr
        assert "return 10" in (repo / "app.py").read_text()
    finally:
        stop_brokers(tmp_path / "run" / "baton")


def test_installed_wheel_finds_a_real_agent_and_delegates_to_it(
    venv: Path, tmp_path: Path, baton_home: Path, repo: Path
) -> None:
    """The newcomer's path: Claude Code on PATH with a key, no Baton config at all; doctor
    finds it and makes it the default, and a plain ``baton run`` (no ``--worker``) goes to it,
    against the scripted model server, to review and accept."""
    from tests.support.modelserver import Answer, ModelServer, Script, agent_bin, env_for_claude
    from tests.support.modelserver import write_file as model_writes

    claude = agent_bin("claude")
    if not claude.exists():
        pytest.skip("!!! AGENT CLI 'claude' IS NOT INSTALLED: run scripts/install-agents first !!!")
    script = Script.of(model_writes("hello.txt", "hi\n"), Answer("Wrote hello.txt."))
    with ModelServer(script) as srv:
        launch = env_for_claude(srv, tmp_path / "agent-home")
        env = _clean_env(COLUMNS="200", **{k: v for k, v in launch.env.items() if k != "PATH"})
        env["PATH"] = os.pathsep.join([str(claude.parent), _clean_env()["PATH"]])
        env["BATON_HOME"] = str(baton_home)
        env["BATON_CONFIG"] = str(tmp_path / "no-user-config.toml")  # a newcomer has none
        doctor = _baton(venv, "doctor", "--json", env=env, cwd=repo)
        report = json.loads(doctor.stdout)
        assert doctor.returncode == 0, (report, doctor.stderr)
        assert report["default"] == "claude", report
        assert report["default_reason"], report
        try:
            run = _baton(
                venv, "run", "--json", "--cwd", str(repo), "Create hello.txt.", env=env, cwd=repo
            )
            assert run.returncode == 0, run.stdout + run.stderr
            out = json.loads(run.stdout)
            assert out["task"]["state"] == "review", out
            task_id = out["task"]["id"]
            # the real agent did it: the model server was asked (the fake agent asks nothing)
            assert srv.main_requests, "the scripted model server was never asked"
            assert not (repo / "hello.txt").exists()  # nothing until accepted
            acc = _baton(venv, "accept", "--json", task_id, env=env, cwd=repo)
            assert acc.returncode == 0, acc.stderr
            assert (repo / "hello.txt").read_text() == "hi\n"
        finally:
            stop_brokers(tmp_path / "run" / "baton")
