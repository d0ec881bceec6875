"""The ``baton`` command line: every command, its arguments and its help (argparse).

Building it imports only the standard library and the light modules of the commands that
add their own arguments; what a command runs is imported when it runs.
"""

from __future__ import annotations

import argparse

from baton import __version__
from baton.cli.config_cmds import add_commands as add_config_commands
from baton.cli.ide_cmds import add_commands as add_ide_commands
from baton.cli.init_cmd import add_commands as add_init_commands
from baton.cli.love_cmd import add_commands as add_love_commands
from baton.cli.store_cmds import add_commands as add_store_commands
from baton.cli.task_cmds import add_commands as add_task_commands
from baton.core.effort import LEVELS
from baton.core.ids import MIN_PREFIX
from baton.core.lifecycle import TaskState
from baton.errors import InvalidInput

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs start-up)
if TYPE_CHECKING:
    from typing import NoReturn

ID_HELP = f"a task id, or a unique prefix of it of at least {MIN_PREFIX} characters"


class ArgumentError(InvalidInput):
    """The command line does not parse; ``usage`` is the usage line of the (sub)command."""

    def __init__(self, message: str, usage: str, prog: str) -> None:
        super().__init__(message)
        self.usage = usage
        self.prog = prog


class Parser(argparse.ArgumentParser):
    """Raises :class:`ArgumentError` instead of printing, so ``--json`` can say it as JSON."""

    def error(self, message: str) -> NoReturn:
        raise ArgumentError(message, self.format_usage(), self.prog)


def capping(c: argparse.ArgumentParser, whose: str) -> None:
    """The task's own caps (see docs/reference/config.md, Budgets)."""
    c.add_argument("--max-tokens", type=int, metavar="N", help=f"{whose} token cap")
    c.add_argument("--max-cost", type=float, metavar="USD", help=f"{whose} cost cap")
    c.add_argument("--max-steps", type=int, metavar="N", help=f"{whose} cap on tool calls")
    c.add_argument("--max-seconds", type=float, metavar="S", help=f"{whose} cap on run time")


def build() -> argparse.ArgumentParser:
    """The parser of the whole command line."""
    p = Parser(
        prog="baton",
        description="Delegate work to coding-agent CLIs and review it hunk by hunk.",
    )
    p.add_argument("--version", action="version", version=f"baton {__version__}")
    p.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=0,
        help="log to stderr: -v info, -vv debug (or BATON_LOG=debug|info|warning|error)",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def cmd(name: str, help: str) -> argparse.ArgumentParser:
        c = sub.add_parser(name, help=help, description=help)
        c.add_argument("--json", action="store_true", help="print one JSON document")
        return c

    def delegating(c: argparse.ArgumentParser) -> None:
        c.add_argument("instruction", help="what to do ('-' reads it from stdin)")
        c.add_argument(
            "--worker",
            help="profile to run (default: the configured default worker; see baton workers)",
        )
        c.add_argument("--model")
        c.add_argument("--kind", help="routing kind (mechanical, reasoning, question, …)")
        c.add_argument("--file", help="the file the task is about (relative to --cwd)")
        c.add_argument("--lines", help="line range A-B of --file (1-based, inclusive)")
        c.add_argument("--cwd", default=".", help="the project folder (default: .)")
        c.add_argument("--scope", action="append", default=[], help="write-scope glob (repeatable)")
        c.add_argument("--isolation", choices=["worktree"], help="how the task is isolated")
        capping(c, "the task's")
        c.add_argument(
            "--effort",
            choices=LEVELS,
            help="reasoning effort, where the worker's CLI has one (Claude Code, Codex)",
        )

    c = cmd("delegate", "delegate a task; print its id at once")
    delegating(c)
    c.add_argument(
        "--action", default="delegate", choices=["run", "delegate", "fix", "explain", "tests"]
    )
    c.add_argument(
        "--after",
        action="append",
        default=[],
        metavar="ID",
        help="start only once this task is accepted (repeatable)",
    )
    c.add_argument(
        "--compare",
        metavar="W1,W2,…",
        help="delegate the same brief to several workers at once (a group)",
    )

    c = cmd("graph", "delegate a small graph of tasks in one call (JSON nodes)")
    c.add_argument(
        "file", help='JSON: [{"key", "instruction", "after": [keys], …}] (\'-\' = stdin)'
    )
    c.add_argument("--cwd", default=".", help="the project folder (default: .)")

    c = cmd("run", "delegate a task and follow it in the foreground")
    delegating(c)
    c.add_argument(
        "--action", default="run", choices=["run", "delegate", "fix", "explain", "tests"]
    )
    c.add_argument("--detach", action="store_true", help="print the task id and return")

    c = cmd(
        "watch",
        "print tasks' lifecycle events; exit when one settles (0), hits a rate limit (3) or "
        "times out (1)",
    )
    c.add_argument(
        "ids", nargs="*", metavar="ID", help=ID_HELP + " (none: every task, with --notify)"
    )
    c.add_argument("--timeout", type=float, help="give up after this many seconds (exit 1)")
    c.add_argument(
        "--notify",
        action="store_true",
        help="ring the bell and send a desktop notification when a watched task needs you",
    )

    c = cmd("tasks", "list tasks, newest first")
    c.add_argument("--state", action="append", choices=[str(s) for s in TaskState])
    c.add_argument("--query", "-q", help="full-text search over title, brief and summary")
    c.add_argument("--worker")
    c.add_argument("--group")
    c.add_argument("--since", help="only tasks created within this time: 30m, 2h, 3d")
    c.add_argument("--limit", type=int, default=50)
    c.add_argument(
        "--archived", action="store_true", help="list only archived tasks (see baton archive)"
    )

    c = cmd("inspect", "show a task: state, attempts, events")
    c.add_argument("id", help=ID_HELP)
    c.add_argument(
        "--detail",
        metavar="A,B,…",
        help="with --json, add these sections: attempts, events, evidence, brief, summary, "
        "task, or all",
    )
    c.add_argument(
        "--transcript",
        action="store_true",
        help="print the task's transcript instead (what the agent said and did, as the "
        "editors show it; with --json: {taskId, seq, lines})",
    )

    c = cmd("diff", "show a task's diff per hunk, with hunk ids")
    c.add_argument("id", help=ID_HELP)

    for name, verb in (("accept", "apply"), ("reject", "drop")):
        c = cmd(name, f"{verb} all pending hunks of a task, or the ones named")
        c.add_argument("id", help=ID_HELP)
        c.add_argument("hunks", nargs="*", metavar="HUNK")
        if name == "accept":
            c.add_argument(
                "--allow-secret",
                action="store_true",
                help="also apply hunks that write a secret value (shown masked; the real "
                "text is taken from git)",
            )

    c = cmd(
        "reopen",
        "put accepted hunks you reverted back up for review (the file holds their old "
        "lines again); an applied task goes back to review",
    )
    c.add_argument("id", help=ID_HELP)
    c.add_argument("hunks", nargs="+", metavar="HUNK")

    c = cmd("cancel", "cancel a task (kills its agent process tree)")
    c.add_argument("id", help=ID_HELP)

    c = cmd("reply", "answer a task's question, or ask a task in review for changes")
    c.add_argument("id", help=ID_HELP)
    c.add_argument("text", help="the reply ('-' reads it from stdin)")
    c.add_argument("--detach", action="store_true", help="return without following")

    c = cmd("answer", "answer an agent's permission request (see baton inspect)")
    c.add_argument("id", help=ID_HELP)
    c.add_argument("option", help="allow, always, reject, or an option id")
    c.add_argument("--permission", help="which request, when several wait (e.g. p2)")

    c = cmd("steer", "interrupt a running task and continue it with new guidance")
    c.add_argument("id", help=ID_HELP)
    c.add_argument("text", help="the guidance ('-' reads it from stdin)")
    c.add_argument("--detach", action="store_true", help="return without following")

    c = cmd(
        "retry",
        "run a failed, cancelled or interrupted task again; one a budget stopped goes on "
        "where it stopped (raise its cap with --max-*)",
    )
    c.add_argument("id", help=ID_HELP)
    capping(c, "raise the task's")
    c.add_argument("--detach", action="store_true", help="return without following")

    c = cmd(
        "handoff",
        "hand a failed, cancelled, interrupted or rate-limited task to another worker: same "
        "task, its history kept, a fresh session with the brief",
    )
    c.add_argument("id", help=ID_HELP)
    c.add_argument("--worker", help="the profile to take it (default: the next one routing allows)")
    c.add_argument("--detach", action="store_true", help="return without following")

    c = cmd(
        "complete",
        "put a failed, cancelled or interrupted task whose checkout holds changes up for "
        "review: the work landed though the worker never said so",
    )
    c.add_argument("id", help=ID_HELP)
    c.add_argument(
        "--evidence",
        required=True,
        metavar="TEXT",
        help="why it is done ('-' reads it from stdin); recorded on the task",
    )

    c = cmd(
        "archive",
        "hide settled tasks from baton tasks and the editors' lists, keeping their history "
        "(baton tasks --archived lists them)",
    )
    c.add_argument("ids", nargs="+", metavar="ID", help=ID_HELP)
    c.add_argument("--undo", action="store_true", help="list them again (unarchive)")

    c = cmd("memory", "project facts that go into every brief: list, add TEXT, remove N")
    c.add_argument("op", choices=["list", "add", "remove"], nargs="?", default="list")
    c.add_argument("value", nargs="*")
    c.add_argument("--cwd", default=".", help="the project folder (default: .)")

    c = cmd("workers", "the workers (profiles) a task in this folder may use, and the default")
    c.add_argument("--cwd", default=".", help="the project folder (default: .)")
    c = cmd(
        "dashboard",
        "open the broker's dashboard in the browser: every task live, tokens and cost per "
        "worker (a one-time link; the broker starts if none runs)",
    )
    c.add_argument("--print-url", action="store_true", help="print the one-time URL only")
    c.add_argument("--no-open", action="store_true", help="do not open a browser")
    cmd("schema", "print the websocket's methods as a machine-readable schema (OpenRPC)")
    cmd("health", "is the broker for this folder up; what does it serve")

    c = cmd("serve", "run a headless broker (websocket) for the CLI and other agents")
    c.add_argument("--root", action="append", default=[], help="folder served (default: .)")
    c.add_argument(
        "--idle-exit", type=float, help="exit after this many seconds with no client or task"
    )

    c = sub.add_parser("mcp", help="an MCP server on stdio exposing Baton's tools to an agent")
    c.add_argument("--cwd", default=".", help="the project folder (default: .)")
    c.add_argument(
        "--tools", metavar="A,B,…", help="offer only these tools (e.g. delegate,watch,inspect)"
    )
    c.add_argument(
        "--print-tools", action="store_true", help="print the tool list and its size, and exit"
    )
    c.add_argument("--json", action="store_true", help="with --print-tools: the list as JSON")

    sub.add_parser("lsp", help="run the language server on stdio (started by the editor)")

    c = cmd("doctor", "check the agent CLIs on PATH, each configured profile and the default")
    c.add_argument("--cwd", default=".", help="the project folder (default: .)")

    c = sub.add_parser(
        "completion",
        help='print a shell completion script: eval "$(baton completion bash)"',
        description="Print a completion script for bash, zsh or tcsh (generated by shtab).",
    )
    c.add_argument("shell", choices=["bash", "zsh", "tcsh"])

    cmd(
        "clean",
        "remove checkouts, branches and refs no task needs, old events ([retention]) and the "
        "warm pool; says what it removed",
    )

    c = cmd(
        "plan",
        "ask a worker to plan a goal as a task graph; it is checked, shown, and run as a "
        "graph once you approve it",
    )
    c.add_argument("goal", nargs="?", help="what to achieve ('-' reads it from stdin)")
    c.add_argument("--task", help="go on with this planner (after baton reply) instead")
    c.add_argument("--worker", help="the planner's profile (default: routing for reasoning)")
    c.add_argument("--cwd", default=".", help="the project folder (default: .)")
    c.add_argument("--yes", action="store_true", help="run the plan without asking")
    c.add_argument("--dry-run", action="store_true", help="check the plan; start nothing")

    c = cmd(
        "adapter",
        "check a program against the adapter protocol (a worker with provider external): "
        "baton adapter check -- CMD [ARG …]",
    )
    c.add_argument("action", choices=["check"])
    c.add_argument(
        "--timeout", type=float, default=60.0, help="seconds each case may take (default 60)"
    )
    # after ``check``: its own options (--timeout, --json), then -- and the program
    c.add_argument("argv", nargs=argparse.REMAINDER, help="the program and its arguments, after --")

    c = cmd("demo", "run a delegation end to end in a throwaway repository")
    c.add_argument("--worker", help="profile to use instead of the fake agent")
    c.add_argument("--keep", action="store_true", help="keep the throwaway folder")
    add_config_commands(cmd)
    add_init_commands(cmd)
    add_store_commands(cmd)
    add_ide_commands(cmd)
    add_task_commands(cmd)
    add_love_commands(cmd)
    return p
