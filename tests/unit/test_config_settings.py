"""Settings: layers (defaults < user < project), provenance with file and line, checked values."""

from __future__ import annotations

from pathlib import Path

import pytest

from baton.cli.config_cmds import format_settings, settings_json
from baton.config.layers import ConfigError, key_lines
from baton.config.profiles import Profile
from baton.config.settings import VerifyStep, load_settings

BASE = {"fake": Profile(name="fake", provider="fake", label="fake agent")}

USER = """\
default_worker = "home"
brief_rules = ["Be brief."]

[profiles.home]
provider = "claude"
config_dir = "~/.claude-home"
env = { ANTHROPIC_API_KEY = "keyring:baton/home", MY_TOKEN = "literal-token-123" }
concurrency = 2

[cooldown]
claude = 300
"""

PROJECT = """\
# the project's own policy
default_worker = "work"
only = ["work", "home"]
repair_rounds = 3

[profiles.work]
provider = "claude"
model = "claude-sonnet-4-5"
models = ["claude-sonnet-4-5", "claude-haiku-4-5"]

[profiles.home]
concurrency = 1
label = "home, here"

[routing.mechanical]
allow = ["claude/claude-haiku-4-5"]
min_quality = "fast"

[[verify]]
name = "tests"
argv = ["pytest", "-q"]
timeout = 120

[[verify]]
name = "lint"
argv = ["ruff", "check"]

[review]
worker = "home"
kinds = ["reasoning"]
"""


@pytest.fixture
def user_file(tmp_path: Path) -> Path:
    path = tmp_path / "xdg" / "baton" / "config.toml"
    path.parent.mkdir(parents=True)
    return path


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    return root


def load(project: Path | None, user_file: Path):  # type: ignore[no-untyped-def]
    return load_settings(project, profiles=BASE, user_config=user_file)


def test_layers_merge_with_provenance(project: Path, user_file: Path) -> None:
    user_file.write_text(USER)
    (project / ".baton.toml").write_text(PROJECT)
    s = load(project, user_file)
    assert s.default_worker == "work" and s.only == ("work", "home")
    assert s.brief_rules == ("Be brief.",)
    home = s.profiles["home"]
    # Fields merge per field: the project's harmless ones apply, the user's others stay (a
    # project may not touch an account's env: baton.config.trust, tests/unit/test_config_trust).
    assert home.provider == "claude" and home.concurrency == 1 and home.label == "home, here"
    assert home.config_dir == "~/.claude-home"
    assert home.env == {"ANTHROPIC_API_KEY": "keyring:baton/home", "MY_TOKEN": "literal-token-123"}
    assert s.profiles["work"].models == ["claude-sonnet-4-5", "claude-haiku-4-5"]
    p, u = str(project / ".baton.toml"), str(user_file)
    prov = s.provenance
    assert (prov["default_worker"].layer, prov["default_worker"].path) == ("project", p)
    assert prov["default_worker"].line == 2
    assert (prov["brief_rules"].path, prov["brief_rules"].line) == (u, 2)
    assert (prov["profiles.home.concurrency"].path, prov["profiles.home.concurrency"].line) == (
        p,
        12,
    )
    assert prov["profiles.home.config_dir"].path == u
    assert prov["profiles.home.env.ANTHROPIC_API_KEY"].line == 7
    assert prov["profiles.home.label"].line == 13
    assert prov["routing.mechanical.allow"].line == 16
    assert prov["verify"].line == 19
    assert prov["isolation"].layer == "default" and prov["isolation"].path is None
    assert prov["profiles.fake.provider"].layer == "default"
    assert [(x.name, x.exists) for x in s.layers] == [
        ("default", True),
        ("user", True),
        ("project", True),
    ]


def test_settings_for_issue_9_are_exposed(project: Path, user_file: Path) -> None:
    (project / ".baton.toml").write_text(PROJECT)
    user_file.write_text(USER)
    s = load(project, user_file)
    assert s.verify == (
        VerifyStep("tests", ("pytest", "-q"), 120.0),
        VerifyStep("lint", ("ruff", "check"), 600.0),
    )
    assert s.repair_rounds == 3
    assert (s.review.worker, s.review.kinds) == ("home", ("reasoning",))
    assert s.kinds["mechanical"].allow == ("claude/claude-haiku-4-5",)
    assert s.cooldown_for("claude") == 300 and s.cooldown_for("codex") == 60


def test_no_files_gives_the_defaults(project: Path, user_file: Path) -> None:
    s = load(project, user_file)
    # The fake agent is never the default on its own: with no agent CLI there is none.
    assert s.default_worker == "" and "no agent CLI is installed" in s.default_reason
    assert s.only is None and s.verify == ()
    assert s.on_rate_limit == "handoff" and s.isolation == "worktree"
    assert [(x.name, x.exists) for x in s.layers] == [
        ("default", True),
        ("user", False),
        ("project", False),
    ]


def test_pyproject_tool_baton_with_lines(project: Path, user_file: Path) -> None:
    (project / "pyproject.toml").write_text(
        '[project]\nname = "x"\n\n[tool.baton]\ndefault_model = "claude-haiku-4-5"\n'
        '\n[tool.baton.profiles.w]\nprovider = "codex"\n'
    )
    s = load(project, user_file)
    assert s.default_model == "claude-haiku-4-5" and s.profiles["w"].provider == "codex"
    assert s.provenance["default_model"].line == 5
    assert s.provenance["profiles.w.provider"].line == 8


def test_dot_baton_toml_wins_over_pyproject_and_is_found_from_a_subfolder(
    project: Path, user_file: Path
) -> None:
    (project / "pyproject.toml").write_text('[tool.baton]\ndefault_model = "from-pyproject"\n')
    (project / ".baton.toml").write_text('default_model = "from-baton-toml"\n')
    sub = project / "src" / "pkg"
    sub.mkdir(parents=True)
    assert load(sub, user_file).default_model == "from-baton-toml"
    # The search stops at the repository's top: a file above it does not count.
    inner = project / "vendor" / "lib"
    (inner / ".git").mkdir(parents=True)
    assert load(inner, user_file).default_model is None


@pytest.mark.parametrize(
    ("text", "line", "words"),
    [
        ('default_worker = "fake"\n[profiles.a]\nprovider = "claude\n', 3, "not valid TOML"),
        ('default_worker = "fake"\n\n[[verify]]\nname = "t"\nargv = "make test"\n', 3, "shell"),
        ('only = ["fake",\n  "ghost"]\n', 1, "unknown profile 'ghost'"),
        ('\n\ndefualt_worker = "fake"\n', 3, "unknown setting"),
        ('[profiles.a]\nprovider = "claude"\nconcurrency = "two"\n', 3, "positive integer"),
        ('[profiles.a]\nmodel = "x"\n', 1, "needs a provider"),
        ('[routing.speedy]\nallow = ["claude"]\n', 1, "unknown task kind"),
        ('[routing.mechanical]\nprefer = "fastest"\n', 2, "order, cheap, evidence"),
        ('default_worker = "ghost"\n', 1, "a configured profile"),
        ('on_rate_limit = "retry"\n', 1, "handoff or hold"),
        ('[secrets]\nbackend = "file"\n', 2, "only be set in your user config"),
        ("[pool]\nsize = 50\n", 2, "only be set in your user config"),
        ("[pool]\ncount = 2\n", 2, "unknown field; known: size, max_bytes"),
        ("repair_rounds = -1\n", 1, "whole number"),
        ('[review]\nkinds = ["everything"]\n', 2, "unknown kind"),
    ],
)
def test_a_bad_file_names_file_and_line(
    project: Path, user_file: Path, text: str, line: int, words: str
) -> None:
    path = project / ".baton.toml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load(project, user_file)
    assert err.value.path == str(path) and err.value.line == line, str(err.value)
    assert words in str(err.value) and str(err.value).startswith(f"{path}:{line}: ")


def test_the_warm_pool_is_set_in_the_user_file(project: Path, user_file: Path) -> None:
    from baton.workspace.pool import PoolLimits

    s = load(project, user_file)
    assert (s.pool_size, s.pool_max_bytes) == (PoolLimits().size, PoolLimits().max_bytes)
    user_file.write_text("[pool]\nsize = 0\nmax_bytes = 5000000\n")
    s = load(project, user_file)
    assert (s.pool_size, s.pool_max_bytes) == (0, 5_000_000)
    user_file.write_text("[pool]\nsize = -1\n")
    with pytest.raises(ConfigError, match="whole number"):
        load(project, user_file)


def test_a_bad_user_file_is_named_too(project: Path, user_file: Path) -> None:
    user_file.write_text("[profiles\n")
    with pytest.raises(ConfigError, match=rf"^{user_file}:1: not valid TOML"):
        load(project, user_file)


def test_secret_like_values_are_masked_in_the_printed_settings(
    project: Path, user_file: Path
) -> None:
    user_file.write_text(USER)
    s = load(project, user_file)
    doc = settings_json(s)["settings"]
    assert doc["profiles.home.env.MY_TOKEN"]["value"] == "********"
    assert doc["profiles.home.env.ANTHROPIC_API_KEY"]["value"] == "keyring:baton/home"
    text = format_settings(s)
    assert "literal-token-123" not in text and "literal-token-123" not in repr(doc)
    assert f"{user_file}:7" in text


def test_key_lines_understands_tables_arrays_and_quoted_keys() -> None:
    text = (
        'a = 1\n[models]\n"claude-sonnet-4-5" = "frontier"\n'
        '[[verify]]\nname = "x"\n[[verify]]\nname = "y"\n'
        's = """\nfake = 1\n"""\n'
    )
    lines = key_lines(text)
    assert lines[("a",)] == 1
    assert lines[("models", "claude-sonnet-4-5")] == 3
    assert lines[("verify", "0", "name")] == 5 and lines[("verify", "1", "name")] == 7
    assert ("verify", "1", "fake") not in lines


def _cli(folder: Path, name: str) -> str:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\necho 1.0\n")
    path.chmod(0o755)
    return str(path)


def test_the_default_is_the_first_usable_agent_cli_never_the_fake(
    tmp_path: Path, user_file: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for key in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "OPENAI_API_KEY", "CODEX_API_KEY"):
        monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    bindir = tmp_path / "bin"
    claude_bin, codex_bin = _cli(bindir, "claude"), _cli(bindir, "codex")
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    (codex_home / "auth.json").write_text("{}")
    profiles = {
        **BASE,
        "claude": Profile(name="claude", provider="claude", binary=claude_bin),  # no login
        "codex": Profile(
            name="codex", provider="codex", binary=codex_bin, config_dir=str(codex_home)
        ),
    }
    s = load_settings(None, profiles=profiles, user_config=user_file)
    assert s.default_worker == "codex", s.default_reason
    assert "auth.json" in s.default_reason
    # The user's own profile counts as much as a discovered one.
    claude_home = tmp_path / "claude-work"
    claude_home.mkdir()
    (claude_home / ".credentials.json").write_text("{}")
    user_file.write_text(
        f'[profiles.claude-work]\nprovider = "claude"\nbinary = "{claude_bin}"\n'
        f'config_dir = "{claude_home}"\n'
    )
    s = load_settings(None, profiles=profiles, user_config=user_file)
    assert s.default_worker == "claude-work", s.default_reason
    # A configured default wins, and says where it was set.
    user_file.write_text('default_worker = "fake"\n')
    s = load_settings(None, profiles=profiles, user_config=user_file)
    assert s.default_worker == "fake" and str(user_file) in s.default_reason
