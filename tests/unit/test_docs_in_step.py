"""The reference docs list exactly what the code registers, and say what the CLI does.

``docs/reference/cli.md`` names every ``baton`` subcommand and no other; ``protocol.md``
names every ``workspace/executeCommand`` command and every custom notification of
``baton lsp``; ``websocket.md`` every method of the broker's websocket, ``mcp.md`` every
tool of ``baton mcp``. Each comparison reads
the doc's text, so a test also shows it failing on a copy with one row removed. Relative
links in the docs point at files of the repository.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

import baton.surfaces.lsp as lsp_package
from baton import cli
from baton.surfaces.lsp import commands
from baton.surfaces.mcp import tools
from baton.surfaces.ws import schema
from baton.surfaces.ws.methods import Methods

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
REFERENCE = DOCS / "reference"


def _subcommands() -> set[str]:
    parser = cli._parser()
    (sub,) = (a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return set(sub.choices)


def _section(text: str, heading: str) -> str:
    """The text under a ``## heading`` up to the next ``## ``."""
    start = text.index(f"\n## {heading}")
    end = text.find("\n## ", start + 1)
    return text[start : end if end != -1 else None]


def cli_md_commands(text: str) -> set[str]:
    named = set(re.findall(r"^\| `baton ([a-z]+)", text, re.M))
    return named | set(re.findall(r"^baton ([a-z]+)\b", text, re.M))  # synopsis blocks


def protocol_md_commands(text: str) -> set[str]:
    headings = _section(text, "Commands")
    found = "\n".join(line for line in headings.splitlines() if line.startswith("### "))
    return set(re.findall(r"`(baton\.[A-Za-z]+)`", found))


def protocol_md_notifications(text: str) -> set[str]:
    section = _section(text, "Notifications for rich clients")
    return set(re.findall(r"^### `(baton/[A-Za-z]+)`", section, re.M))


def websocket_md_methods(text: str) -> set[str]:
    rows = re.findall(r"^\| `(\w+)`(?: \(alias `(\w+)`\))? \|", _section(text, "Methods"), re.M)
    return {name for row in rows for name in row if name}


def mcp_md_tools(text: str) -> set[str]:
    return set(re.findall(r"^\| `(\w+)` \|", _section(text, "Tools"), re.M))


def _notifications_sent() -> set[str]:
    """Every ``baton/<name>`` method the language server's modules name (progress tokens
    ``baton/<taskId>/<n>`` are built at run time and do not match)."""
    found: set[str] = set()
    for module in Path(lsp_package.__file__).parent.glob("*.py"):
        found |= set(re.findall(r"""["'](baton/[A-Za-z]+)["']""", module.read_text()))
    return found


def _ws_methods() -> set[str]:
    table = Methods(None, [], dict).table  # type: ignore[arg-type]
    return set(table) | set(schema.SESSION_METHODS)


#: doc → (what it lists, read from its text; what the code registers)
CHECKS: dict[str, tuple[Callable[[str], set[str]], Callable[[], set[str]]]] = {
    "cli.md commands": (cli_md_commands, _subcommands),
    "protocol.md commands": (protocol_md_commands, lambda: set(commands.COMMANDS)),
    "protocol.md notifications": (protocol_md_notifications, _notifications_sent),
    "websocket.md methods": (websocket_md_methods, _ws_methods),
    "mcp.md tools": (mcp_md_tools, lambda: set(tools.TOOLS)),
}
#: For each check, a row to remove from a copy of its doc, and the name the row lists.
ROWS = {
    "cli.md commands": ("| `baton stats ", "stats"),
    "protocol.md commands": ("### `baton.workers`", "baton.workers"),
    "protocol.md notifications": ("### `baton/status`", "baton/status"),
    "websocket.md methods": ("| `checkpoints` |", "checkpoints"),
    "mcp.md tools": ("| `task` |", "task"),
}


def drift(check: str, text: str) -> dict[str, set[str]]:
    """What the doc's text misses of what the code registers, and what it lists beyond."""
    listed, registered = CHECKS[check]
    have, want = listed(text), registered()
    return {k: v for k, v in {"missing": want - have, "extra": have - want}.items() if v}


def _doc(check: str) -> str:
    return (REFERENCE / check.split()[0]).read_text()


@pytest.mark.parametrize("check", CHECKS)
def test_the_doc_lists_what_the_code_registers(check: str) -> None:
    assert drift(check, _doc(check)) == {}


@pytest.mark.parametrize("check", CHECKS)
def test_a_row_removed_from_the_doc_is_reported(check: str) -> None:
    text = _doc(check)
    prefix, name = ROWS[check]
    (row,) = [line for line in text.splitlines() if line.startswith(prefix)]
    assert drift(check, text.replace(row + "\n", "", 1)) == {"missing": {name}}


def test_the_scans_find_what_they_look_for() -> None:
    assert {"baton/tasks", "baton/diff", "baton/permission"} <= _notifications_sent()
    assert {"delegate", "stepBack", "auth", "subscribe", "models"} <= _ws_methods()
    assert {"delegate", "lsp", "serve", "schema"} <= _subcommands()
    # every command the CLI dispatches lazily is one argparse knows
    assert set(cli._COMMANDS) <= _subcommands()


def test_protocol_md_intro_names_every_notification() -> None:
    text = (REFERENCE / "protocol.md").read_text()
    intro = text[: text.index("\n## ")]
    assert all(f"`{n}`" in intro for n in _notifications_sent())


@pytest.mark.parametrize(
    "doc", sorted(p.relative_to(ROOT) for p in [ROOT / "README.md", *DOCS.rglob("*.md")])
)
def test_relative_links_stay_inside_the_repository(doc: Path) -> None:
    text = (ROOT / doc).read_text()
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # a URL
        where = ((ROOT / doc).parent / target).resolve()
        assert where.is_relative_to(ROOT) and where.exists(), f"{doc}: broken link {target}"


def test_readme_users_first_then_two_contributor_commands() -> None:
    text = (ROOT / "README.md").read_text()
    users, contributors = text.index("## Quick start"), text.index("## Contributing: quick start")
    assert users < contributors
    assert "pipx install baton-lsp" in text[users:contributors]
    block = text[contributors:].split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line.split()[0] for line in block.splitlines() if line.strip()]
    assert commands == ["scripts/demo", "scripts/test"]
    assert all(os.access(ROOT / c, os.X_OK) for c in commands)


def _baton(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "baton.cli", *args], capture_output=True, text=True, timeout=60
    )


@pytest.mark.parametrize(
    "argv",
    [["tasks", "--json", "--bogus"], ["--json"], ["inspect", "--json"], ["frob", "--json"]],
)
def test_argument_errors_in_json_mode_are_one_json_document(argv: list[str]) -> None:
    proc = _baton(*argv)
    assert proc.returncode == 2
    assert proc.stderr == ""
    assert set(json.loads(proc.stdout)) == {"error"}


def test_argument_errors_without_json_keep_argparse_usage() -> None:
    proc = _baton("tasks", "--bogus")
    assert proc.returncode == 2 and proc.stdout == ""
    assert (
        proc.stderr.startswith("usage: baton") and "unrecognized arguments: --bogus" in proc.stderr
    )


def test_help_says_what_the_code_does() -> None:
    for name in ("delegate", "run"):
        text = _baton(name, "--help").stdout
        assert "--worker" in text and "default: fake" not in text
    inspect = " ".join(_baton("inspect", "--help").stdout.split())
    assert "at least 4 characters" in inspect


def test_unknown_id_message_has_balanced_quotes(baton_home: Path, tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "baton.cli", "inspect", "--json", "nope"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    try:
        assert proc.returncode == 2, proc.stderr
        assert json.loads(proc.stdout) == {"error": "no task 'nope'"}
    finally:
        from tests.e2e.test_cli import stop_brokers

        stop_brokers(tmp_path / "run" / "baton")
