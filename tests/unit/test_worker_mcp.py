"""A profile's ``worker_mcp``: read from the config, and translated into each CLI's own terms
(argv, environment, files in the task's folder) without writing any of the CLI's own files."""

from __future__ import annotations

import dataclasses
import json
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from baton.agents.base import Launch, Turn
from baton.agents.claude import ClaudeAdapter
from baton.agents.codex import CodexAdapter
from baton.agents.gemini import GeminiAdapter
from baton.agents.opencode import OpenCodeAdapter
from baton.agents.pi import PiAdapter
from baton.agents.worker_mcp import WorkerMcp, parse_jsonc
from baton.config.layers import ConfigError
from baton.config.profiles import Profile
from baton.config.settings import load_settings
from baton.process.transport import NativeTransport

STDIO = {"command": "probe-server", "args": ["--fast"], "env": {"K": "v"}}
HTTP = {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}}


def turn(tmp_path: Path) -> Turn:
    cwd = tmp_path / "tree"
    cwd.mkdir(exist_ok=True)
    return Turn(task_id="t1", prompt="p", cwd=str(cwd), task_dir=str(tmp_path / "task"))


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (to show nothing was written there)."""
    return {str(p): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


# --- the config -------------------------------------------------------------------------------


def write_config(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_config_reads_disable_and_add(tmp_path: Path) -> None:
    user = write_config(
        tmp_path,
        """
[profiles.c]
provider = "claude"
[profiles.c.worker_mcp]
disable = ["github", "slack"]
add = { probe = { command = "probe-server", args = ["--fast"] }, web = { url = "http://h/mcp" } }

[profiles.o]
provider = "opencode"
worker_mcp = { disable = "*" }
""",
    )
    profiles = load_settings(tmp_path, user_config=user, profiles={}).profiles
    assert profiles["c"].worker_mcp == {
        "disable": ["github", "slack"],
        "add": {
            "probe": {"command": "probe-server", "args": ["--fast"], "env": {}},
            "web": {"url": "http://h/mcp", "headers": {}},
        },
    }
    assert profiles["o"].worker_mcp == {"disable": ["*"]}
    plan = WorkerMcp.of(profiles["o"])
    assert plan is not None and plan.all_ and not plan.keeps("anything")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        ('disable = "github"', "worker_mcp.disable: must be a list of server names"),
        ("add = { p = { command = 3 } }", "worker_mcp.add: must be a table of servers"),
        ('add = { p = { command = "x", url = "http://h" } }', "worker_mcp.add: must be"),
        ('add = { p = { command = "x", args = "-v" } }', "worker_mcp.add: must be"),
        ("keep = []", "unknown field; known: disable, add"),
    ],
)
def test_config_refuses_bad_values(tmp_path: Path, text: str, words: str) -> None:
    user = write_config(
        tmp_path, f'[profiles.c]\nprovider = "claude"\n[profiles.c.worker_mcp]\n{text}\n'
    )
    with pytest.raises(ConfigError) as caught:
        load_settings(tmp_path, user_config=user, profiles={})
    assert words in str(caught.value)
    assert caught.value.path == str(user)


def test_a_profile_without_it_changes_nothing(tmp_path: Path) -> None:
    t = turn(tmp_path)
    plain = Profile(name="c", provider="claude")
    assert WorkerMcp.of(plain) is None
    launch = ClaudeAdapter().launch(t, plain)
    assert "--mcp-config" not in launch.argv and launch.notes == () and launch.readable == ()
    assert not (tmp_path / "task").exists()


def test_the_recorded_profile_keeps_it() -> None:
    """A task records its profile as JSON (runtime/recorded.py) and rebuilds it from that."""
    profile = Profile(name="c", provider="claude", worker_mcp={"disable": ["*"], "add": {}})
    raw = json.loads(json.dumps(dataclasses.asdict(profile)))
    assert Profile(**raw) == profile


# --- Claude Code ------------------------------------------------------------------------------


def claude_account(tmp_path: Path, cwd: str) -> Path:
    account = tmp_path / "acct"
    account.mkdir()
    (account / ".claude.json").write_text(
        json.dumps(
            {
                "mcpServers": {
                    "github": {"type": "stdio", "command": "gh-mcp"},
                    "slack": {"type": "http", "url": "https://slack.example/mcp"},
                },
                "projects": {cwd: {"mcpServers": {"local-db": {"command": "db-mcp"}}}},
            }
        )
    )
    return account


def test_claude_gets_a_strict_mcp_config_in_the_task_folder(tmp_path: Path) -> None:
    t = turn(tmp_path)
    account = claude_account(tmp_path, t.cwd)
    (Path(t.cwd) / ".mcp.json").write_text(json.dumps({"mcpServers": {"docs": {"command": "d"}}}))
    before = snapshot(tmp_path)
    profile = Profile(
        name="c",
        provider="claude",
        config_dir=str(account),
        options={"extra_args": ["--debug"]},
        worker_mcp={"disable": ["slack", "docs", "nowhere"], "add": {"probe": STDIO, "web": HTTP}},
    )
    launch = ClaudeAdapter().launch(t, profile)
    path = Path(t.task_dir) / "claude-mcp.json"
    at = launch.argv.index("--mcp-config")
    assert launch.argv[at : at + 3] == ["--mcp-config", str(path), "--strict-mcp-config"]
    assert launch.argv[-1] == "--debug"  # the profile's own extra args still come last
    assert launch.readable == (str(path),)  # the sandbox lets the agent read it
    assert path.stat().st_mode & 0o777 == 0o600
    assert json.loads(path.read_text()) == {
        "mcpServers": {
            "github": {"type": "stdio", "command": "gh-mcp"},
            "local-db": {"command": "db-mcp"},
            "probe": {
                "type": "stdio",
                "command": "probe-server",
                "args": ["--fast"],
                "env": {"K": "v"},
            },
            "web": {"type": "http", "url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}},
        }
    }
    assert launch.notes[0] == (
        "worker_mcp for Claude Code: kept github, local-db; disabled docs, slack; added probe, web"
    )
    assert launch.notes[1].startswith("warning: worker_mcp disables nowhere, which no Claude Code")
    after = snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before  # no file of theirs changed
    assert set(after) - set(before) == {str(path)}


def test_claude_without_config_dir_reads_the_home_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    t = turn(tmp_path)
    home = claude_account(tmp_path, t.cwd)
    monkeypatch.delenv("CLAUDE_CONFIG_DIR", raising=False)
    profile = Profile(
        name="c", provider="claude", env={"HOME": str(home)}, worker_mcp={"disable": ["*"]}
    )
    launch = ClaudeAdapter().launch(t, profile)
    assert json.loads((Path(t.task_dir) / "claude-mcp.json").read_text()) == {"mcpServers": {}}
    assert "disabled github, local-db, slack" in launch.notes[0]


# --- OpenCode ---------------------------------------------------------------------------------


def test_opencode_gets_config_content_turning_servers_off(tmp_path: Path) -> None:
    t = turn(tmp_path)
    xdg = tmp_path / "xdg"
    (xdg / "opencode").mkdir(parents=True)
    (xdg / "opencode" / "opencode.jsonc").write_text(
        """{
  // the user's servers
  "mcp": {
    "github": { "type": "local", "command": ["gh-mcp"], },
    "jira": { "type": "remote", "url": "https://jira.example/mcp" },
  },
}"""
    )
    (Path(t.cwd) / "opencode.json").write_text(
        json.dumps({"mcp": {"proj": {"type": "local", "command": ["p"]}}})
    )
    own = {"model": "gw/m", "mcp": {"mine": {"type": "local", "command": ["m"]}}}
    before = snapshot(tmp_path)
    profile = Profile(
        name="o",
        provider="opencode",
        env={"XDG_CONFIG_HOME": str(xdg), "OPENCODE_CONFIG_CONTENT": json.dumps(own)},
        worker_mcp={"disable": ["github", "proj", "mine"], "add": {"probe": STDIO, "web": HTTP}},
    )
    launch = OpenCodeAdapter().launch(t, profile)
    content = json.loads(launch.env["OPENCODE_CONFIG_CONTENT"])
    assert content["model"] == "gw/m"  # the profile's own content is kept
    assert content["mcp"] == {
        "github": {"type": "local", "command": ["gh-mcp"], "enabled": False},
        "proj": {"type": "local", "command": ["p"], "enabled": False},
        "mine": {"type": "local", "command": ["m"], "enabled": False},
        "probe": {
            "type": "local",
            "command": ["probe-server", "--fast"],
            "enabled": True,
            "environment": {"K": "v"},
        },
        "web": {
            "type": "remote",
            "url": "http://127.0.0.1:9/mcp",
            "headers": {"X-Key": "k"},
            "enabled": True,
        },
    }
    assert "kept jira; disabled github, mine, proj" in launch.notes[0]
    after = snapshot(tmp_path)
    assert {k: v for k, v in after.items() if k in before} == before


def test_jsonc_reader() -> None:
    assert parse_jsonc('{"a": "http://x//y", /* c */ "b": [1,],}') == {"a": "http://x//y", "b": [1]}
    assert parse_jsonc("not json") == {}


# --- Codex ------------------------------------------------------------------------------------


def test_codex_gets_c_overrides(tmp_path: Path) -> None:
    t = turn(tmp_path)
    home = tmp_path / "codex-home"
    home.mkdir()
    (home / "config.toml").write_text(
        '[mcp_servers.github]\ncommand = "gh-mcp"\n[mcp_servers.docs]\nurl = "https://d/mcp"\n'
        '[mcp_servers."odd.name"]\ncommand = "o"\n'
    )
    before = snapshot(home)
    profile = Profile(
        name="x",
        provider="codex",
        config_dir=str(home),
        env={"TMPDIR": str(tmp_path / "tmp")},
        worker_mcp={"disable": ["*"], "add": {"probe": STDIO, "web": HTTP}},
    )
    launch = CodexAdapter().launch(t, profile)
    pairs = [launch.argv[i + 1] for i, a in enumerate(launch.argv) if a == "-c"]
    assert "mcp_servers.github.enabled=false" in pairs and "mcp_servers.docs.enabled=false" in pairs
    ours = [p for p in pairs if p.startswith("mcp_servers.")]
    assert ours == [
        "mcp_servers.docs.enabled=false",
        "mcp_servers.github.enabled=false",
        'mcp_servers.probe.command="probe-server"',
        'mcp_servers.probe.args=["--fast"]',
        'mcp_servers.probe.env={ "K" = "v" }',
        "mcp_servers.probe.enabled=true",
        'mcp_servers.web.url="http://127.0.0.1:9/mcp"',
        'mcp_servers.web.http_headers={ "X-Key" = "k" }',
        "mcp_servers.web.enabled=true",
    ]
    for pair in ours:  # each value is TOML, as Codex parses it
        tomllib.loads(pair.split(".", 2)[2].replace("=", " = ", 1))
    assert launch.argv.index("-c") > launch.argv.index("exec")
    assert any("odd.name" in n and n.startswith("warning:") for n in launch.notes)
    assert snapshot(home) == before


def test_codex_disabling_a_server_its_config_lacks_adds_no_override(tmp_path: Path) -> None:
    t = turn(tmp_path)
    home = tmp_path / "codex-home"
    home.mkdir()
    profile = Profile(
        name="x",
        provider="codex",
        config_dir=str(home),
        env={"TMPDIR": str(tmp_path / "tmp")},
        worker_mcp={"disable": ["github"]},
    )
    launch = CodexAdapter().launch(t, profile)
    assert not [a for a in launch.argv if a.startswith("mcp_servers.")]
    assert launch.notes[1].startswith("warning: worker_mcp disables github, which no Codex")


# --- Gemini CLI -------------------------------------------------------------------------------


def test_gemini_settings_exclude_and_add(tmp_path: Path) -> None:
    t = turn(tmp_path)
    account = tmp_path / "acct"
    (account / ".gemini").mkdir(parents=True)
    (account / ".gemini" / "settings.json").write_text(
        json.dumps({"mcpServers": {"github": {"command": "gh"}, "jira": {"command": "j"}},
                    "mcp": {"excluded": ["old"]}})
    )  # fmt: skip
    before = snapshot(account)
    system = tmp_path / "system.json"
    system.write_text("{}")
    profile = Profile(
        name="g",
        provider="gemini",
        config_dir=str(account),
        env={"GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(system)},
        worker_mcp={"disable": ["github"], "add": {"probe": STDIO, "web": HTTP}},
    )
    launch = GeminiAdapter().launch(t, profile)
    added = {
        "probe": {"command": "probe-server", "args": ["--fast"], "env": {"K": "v"}},
        "web": {"httpUrl": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}},
    }
    forced = json.loads(Path(launch.env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]).read_text())
    assert forced["mcp"] == {"excluded": ["github", "old"]}
    assert forced["mcpServers"] == added
    # Under the temp folder Gemini skips that file: the private home's settings say the same,
    # over the account's own.
    user = json.loads(
        (Path(launch.env["GEMINI_CLI_HOME"]) / ".gemini" / "settings.json").read_text()
    )
    assert user["mcp"] == {"excluded": ["github", "old"]}
    assert user["mcpServers"] == {"github": {"command": "gh"}, "jira": {"command": "j"}, **added}
    assert "kept jira; disabled github" in launch.notes[0]
    assert snapshot(account) == before


# --- Pi, and the task's log -------------------------------------------------------------------


def test_pi_says_it_cannot(tmp_path: Path) -> None:
    profile = Profile(name="p", provider="pi", worker_mcp={"disable": ["*"]})
    launch = PiAdapter().launch(turn(tmp_path), profile)
    assert launch.notes == (
        "warning: worker_mcp is set but Pi has no MCP servers to give or take:"
        " it does nothing for this profile",
    )
    assert PiAdapter().launch(turn(tmp_path), Profile(name="p", provider="pi")).notes == ()


class NotedAdapter:
    provider = "fake"

    def launch(self, turn: Turn, profile: Profile) -> Launch:
        return Launch(argv=[sys.executable, "-c", "pass"], cwd=turn.cwd, notes=("a note",))

    def parser(self) -> Any:
        raise NotImplementedError


async def test_launch_notes_reach_the_task_log_line(tmp_path: Path) -> None:
    """What the runtime logs for a started attempt (``Started.how``) carries the notes."""
    t = dataclasses.replace(turn(tmp_path), sandbox="off")
    started = await NativeTransport(NotedAdapter()).start(t, Profile(name="f", provider="fake"), 1)
    assert started.how.startswith("a note; ")


def test_doctor_says_what_worker_mcp_does_and_cannot(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from baton.cli.doctor import format_report, run_doctor

    monkeypatch.chdir(turn(tmp_path).cwd)
    account = claude_account(tmp_path, turn(tmp_path).cwd)
    lean = {"disable": ["github", "nowhere"]}
    profiles = {
        "c": Profile(name="c", provider="claude", config_dir=str(account), worker_mcp=lean),
        "p": Profile(name="p", provider="pi", worker_mcp={"disable": ["*"]}),
        "plain": Profile(name="plain", provider="pi"),
    }
    empty = tmp_path / "bin"
    empty.mkdir()
    report = run_doctor(profiles, path=str(empty))
    notes = {p.name: p.notes for p in report.profiles}
    assert (
        "worker_mcp for Claude Code: kept local-db, slack; disabled github; added none"
        in notes["c"]
    )
    assert any(n.startswith("warning: worker_mcp disables nowhere") for n in notes["c"])
    assert notes["p"] == [
        "warning: worker_mcp is set but Pi has no MCP servers to give or take:"
        " it does nothing for this profile"
    ]
    assert notes["plain"] == []
    assert "note: warning: worker_mcp is set but Pi" in format_report(report)
    assert not list(account.parent.glob("task*"))  # doctor writes no file


def test_the_acp_transport_says_it_does_not_apply_it(tmp_path: Path) -> None:
    from baton.acp.transport import AcpTransport

    t = dataclasses.replace(turn(tmp_path), sandbox="off")
    options = {"acp_binary": "/bin/true"}
    lean = Profile(name="c", provider="claude", options=options, worker_mcp={"disable": ["*"]})
    _, note = AcpTransport("claude").launch_attempt(t, lean, 1)
    assert note.endswith("warning: worker_mcp is not applied on the ACP transport (its agent"
                         " starts the MCP servers of its own config)")  # fmt: skip
    plain = Profile(name="c", provider="claude", options=options)
    assert "worker_mcp" not in AcpTransport("claude").launch_attempt(t, plain, 2)[1]


def test_the_docs_example_is_read_as_it_says(tmp_path: Path) -> None:
    doc = Path(__file__).parents[2] / "docs" / "reference" / "config.md"
    text = doc.read_text(encoding="utf-8")
    start = text.index("[profiles.claude-lean]")
    user = write_config(tmp_path, text[start : text.index("```", start)])
    profile = load_settings(tmp_path, user_config=user, profiles={}).profiles["claude-lean"]
    assert profile.worker_mcp == {
        "disable": ["github", "slack"],
        "add": {
            "notes": {"command": "uvx", "args": ["my-notes-mcp"], "env": {"NOTES_LEVEL": "full"}},
            "docs": {"url": "https://mcp.example.com/mcp", "headers": {"X-Key": "…"}},
        },
    }


def test_gemini_allow_list_of_the_user_lets_the_added_in(tmp_path: Path) -> None:
    t = turn(tmp_path)
    account = tmp_path / "acct"
    (account / ".gemini").mkdir(parents=True)
    settings = {"mcpServers": {"github": {"command": "gh"}}, "mcp": {"allowed": ["github"]}}
    (account / ".gemini" / "settings.json").write_text(json.dumps(settings))
    system = tmp_path / "system.json"
    system.write_text("{}")
    profile = Profile(
        name="g",
        provider="gemini",
        config_dir=str(account),
        env={"GEMINI_CLI_SYSTEM_SETTINGS_PATH": str(system)},
        worker_mcp={"disable": ["*"], "add": {"probe": STDIO}},
    )
    launch = GeminiAdapter().launch(t, profile)
    forced = json.loads(Path(launch.env["GEMINI_CLI_SYSTEM_SETTINGS_PATH"]).read_text())
    assert forced["mcp"] == {"excluded": ["github"], "allowed": ["probe"]}
