"""What the CLI prints: rich on a terminal, plain lines when piped, one JSON document (--json).

rich is imported when something is printed through it: a command that prints one JSON
document, or a plain line rich would print unchanged (a task id), starts without it.
"""

from __future__ import annotations

import json
import sys
import time

from baton.core.lifecycle import SETTLED, TaskState

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (it costs start-up)
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any

    from rich.console import Console

    from baton.core.diff import FileDiff
    from baton.core.events import Event
    from baton.core.task import Attempt, Task
    from baton.runtime import Supervisor
    from baton.workspace import AcceptResult

_STATE_STYLE = {
    "running": "cyan",
    "preparing": "cyan",
    "queued": "dim",
    "needs_input": "yellow",
    "review": "green",
    "applied": "green",
    "answered": "green",
    "failed": "red",
    "cancelled": "dim",
    "interrupted": "yellow",
    "rate_limited": "yellow",
    "rejected": "dim",
}


#: Characters rich prints as they are (no markup, emoji code, tab or control character), so a
#: line of only these is written without it.
_PLAIN = frozenset(
    "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 \n-_.,/()'\"+=@#%&*?!<>"
)


def escape(text: str) -> str:
    """``text`` with rich markup escaped (rich's own :func:`rich.markup.escape`)."""
    from rich.markup import escape as rich_escape

    return rich_escape(text)


def describe_event(event: Event) -> str:
    """One line saying what the event is (:func:`baton.core.events.describe`)."""
    from baton.core.events import describe

    return describe(event)


def task_json(task: Task) -> dict[str, Any]:
    """The whole task as the websocket's ``get`` answers it."""
    from baton.surfaces.ws.views import task_json as whole

    return whole(task)


class Output:
    def __init__(self, json_mode: bool) -> None:
        self.json_mode = json_mode
        self._console: Console | None = None
        self._err: Console | None = None

    @property
    def console(self) -> Console:
        """stdout through rich (created on first use)."""
        if self._console is None:
            from rich.console import Console

            self._console = Console(highlight=False, soft_wrap=True)
        return self._console

    @property
    def err(self) -> Console:
        """stderr through rich (created on first use)."""
        if self._err is None:
            from rich.console import Console

            self._err = Console(stderr=True, highlight=False)
        return self._err

    def json_doc(self, obj: Any) -> None:
        """Print ``obj`` as the command's one JSON document."""
        sys.stdout.write(json.dumps(obj, indent=2, default=str, ensure_ascii=False) + "\n")
        sys.stdout.flush()

    def error(self, message: str) -> None:
        if self.json_mode:
            self.json_doc({"error": message})
        else:
            self.err.print(f"[red]error:[/red] {escape(message)}")

    def info(self, message: str) -> None:
        if not self.json_mode:
            self.console.print(message)

    def result(self, obj: Any, human: str) -> None:
        if self.json_mode:
            self.json_doc(obj)
        elif _PLAIN.issuperset(human):
            sys.stdout.write(human + "\n")  # what rich prints for it, without importing rich
            sys.stdout.flush()
        else:
            self.console.print(escape(human))

    def tasks(self, tasks: Sequence[Task]) -> None:
        if self.json_mode:
            self.json_doc([task_json(t) for t in tasks])
            return
        if not tasks:
            self.console.print("no tasks")
            return
        from datetime import datetime

        from rich.table import Table
        from rich.text import Text

        from baton.core import usage

        table = Table(box=None, pad_edge=False)
        for col in ("id", "state", "worker", "created", "tokens", "cost", "title"):
            table.add_column(col, justify="right" if col in ("tokens", "cost") else "left")
        for t in tasks:
            used = usage.of_task(t.options)
            table.add_row(
                t.id,
                Text(str(t.state), style=_STATE_STYLE.get(str(t.state), "")),
                t.worker,
                datetime.fromtimestamp(t.created_at).strftime("%m-%d %H:%M"),
                usage.short_tokens(used.tokens),
                usage.short_cost(used),
                t.title,
            )
        self.console.print(table)

    def inspect(
        self,
        task: Task,
        attempts: Sequence[Attempt],
        events: Sequence[Event],
        files: Sequence[FileDiff],
        final: bool,
    ) -> None:
        if self.json_mode:
            self.json_doc(
                {
                    "task": task_json(task),
                    "attempts": [a.to_json() for a in attempts],
                    "events": [e.to_json() for e in events],
                    "diff": {"final": final, "files": [f.to_json() for f in files]},
                }
            )
            return
        from baton.core.events import describe
        from baton.core.task import next_moves
        from baton.core.usage import of_task

        used = of_task(task.options)
        c = self.console
        style = _STATE_STYLE.get(str(task.state), "")
        c.print(f"[bold]{task.id}[/bold]  [{style}]{task.state}[/{style}]  {escape(task.title)}")
        rows = [
            ("worker", f"{task.worker} ({task.provider}{', ' + task.model if task.model else ''})"),
            ("why this worker", task.route_reason),
            ("folder", task.root),
            ("targets", ", ".join(t.label() for t in task.targets) or "-"),
            ("scope", ", ".join(task.scope) or "whole tree"),
            ("completion", f"{task.completion or '-'} {task.message}".strip()),
            ("session", task.session_id or "-"),
            ("usage", used.line() if not used.empty else "-"),
            ("worktree", task.worktree or "-"),
            ("next", ", ".join(next_moves(task))),
        ]
        for k, v in rows:
            c.print(f"  [dim]{k:>15}[/dim]  {escape(str(v))}")
        if task.summary:
            c.print("\n[bold]summary[/bold]\n" + escape(task.summary))
        if attempts:
            c.print("\n[bold]attempts[/bold]")
            for a in attempts:
                took = f"{(a.ended_at or time.time()) - a.started_at:.1f} s" if a.started_at else ""
                c.print(
                    f"  #{a.n} {a.reason:<6} {a.worker} pid {a.pid} exit {a.exit_code} "
                    f"{a.completion or 'running'} {took}"
                )
        c.print(f"\n[bold]events[/bold] ({len(events)})")
        for e in events[-40:]:
            c.print(f"  [dim]{e.seq:>4}[/dim] {e.type:<11} {escape(describe(e))}")
        if files:
            n = sum(len(f.hunks) for f in files)
            c.print(
                f"\n[bold]diff[/bold] ({'final' if final else 'draft'}): "
                f"{len(files)} file(s), {n} hunk(s) — baton diff {task.id}"
            )

    def diff(self, task_id: str, state: str, files: Sequence[FileDiff], final: bool) -> None:
        """The diff for people, hunk by hunk with ids (``--json`` prints the broker's answer)."""
        from rich.text import Text

        from baton.core.diff import HunkState, split_lines

        c = self.console
        if not files:
            c.print(f"task {task_id} ({state}) has no changes")
            return
        for f in files:
            head = f.path if not f.old_path or f.old_path == f.path else f"{f.old_path} → {f.path}"
            kind = f"{f.status}, binary" if f.binary else str(f.status)
            c.print(f"[bold]{escape(head)}[/bold] [dim]({kind})[/dim]")
            for h in f.hunks:
                mark = {"pending": "yellow", "accepted": "green", "rejected": "dim"}[str(h.state)]
                c.print(
                    f"  [{mark}]● {h.id}[/{mark}] [dim]{h.state} "
                    f"@@ -{h.old_start},{h.old_count} +{h.new_start},{h.new_count} @@[/dim]"
                    + (
                        " [red]writes a secret value (masked; --allow-secret)[/red]"
                        if h.secret
                        else ""
                    )
                )
                if f.binary:
                    c.print("    [dim](binary content)[/dim]")
                    continue
                dim = h.state == HunkState.REJECTED
                for line in split_lines(h.old_text):
                    c.print(Text("    -" + line.rstrip("\r\n"), style="dim" if dim else "red"))
                for line in split_lines(h.new_text):
                    c.print(Text("    +" + line.rstrip("\r\n"), style="dim" if dim else "green"))
        c.print(f"[dim]{'final' if final else 'draft'} diff of task {task_id} ({state})[/dim]")

    def accepted(self, task: Task, result: AcceptResult) -> None:
        if self.json_mode:
            self.json_doc(
                {
                    "task": task_json(task),
                    "applied": result.applied,
                    "conflicts": [{"hunk": h, "reason": r} for h, r in result.conflicts],
                    "refused": [{"hunk": h, "reason": r} for h, r in result.refused],
                }
            )
            return
        c = self.console
        c.print(f"applied {len(result.applied)} hunk(s): {' '.join(result.applied) or '-'}")
        for h, r in result.conflicts:
            c.print(f"[yellow]conflict[/yellow] {h}: {escape(r)} (left pending; your text kept)")
        for h, r in result.refused:
            c.print(f"[red]refused[/red] {h}: {escape(r)}")
        c.print(f"task {task.id} is {task.state}")

    def accepted_json(self, res: dict[str, Any]) -> None:
        """What an accept through the broker did (its JSON answer), for people."""
        c = self.console
        applied = res.get("applied") or []
        c.print(f"applied {len(applied)} hunk(s): {' '.join(applied) or '-'}")
        for item in res.get("conflicts") or []:
            c.print(
                f"[yellow]conflict[/yellow] {item['hunk']}: {escape(item['reason'])} "
                "(left pending; your text kept)"
            )
        for item in res.get("refused") or []:
            c.print(f"[red]refused[/red] {item['hunk']}: {escape(item['reason'])}")
        c.print(f"task {res['task']['id']} is {res['task']['state']}")


async def wait_for(
    sup: Supervisor, task_id: str, done: Callable[[TaskState], bool], timeout: float
) -> Task:
    """Poll the task until ``done(state)`` or the timeout; return it as it then is."""
    import asyncio

    deadline = time.monotonic() + timeout
    while True:
        task = await sup.get(task_id)
        if done(task.state) or time.monotonic() > deadline:
            return task
        await asyncio.sleep(0.02)


def settled(state: TaskState) -> bool:
    return state in SETTLED or state == TaskState.REVIEW


def started(state: TaskState) -> bool:
    """The agent runs (or the task stopped without one)."""
    return state not in (TaskState.QUEUED, TaskState.PREPARING)


_STOP = SETTLED | {TaskState.REVIEW, TaskState.NEEDS_INPUT}


async def follow(sup: Supervisor, task_id: str, out: Output, *, outcome: bool = True) -> Task:
    """Print the task's progress until it stops needing the agent; return the task.

    With ``outcome`` it then prints how the task ended (with ``--json``: the task and its diff
    as the command's one document); without, the caller prints its own result.
    """
    import asyncio

    sub = sup.subscribe({task_id})
    try:
        for e in await sup.events(task_id):
            print_event(out, e)
        task = await sup.get(task_id)
        status = None
        if not out.json_mode and out.console.is_terminal:
            status = out.console.status(f"{task.id} {task.state}")
            status.start()
        try:
            while task.state not in _STOP:
                try:
                    event = await asyncio.wait_for(sub.get(), timeout=0.5)
                except TimeoutError:
                    task = await sup.get(task_id)
                    continue
                if event is None:
                    break
                print_event(out, event)
                if status is not None:
                    status.update(f"{task.id} {escape(describe_event(event))}")
                task = await sup.get(task_id)
        finally:
            if status is not None:
                status.stop()
    finally:
        sub.close()
    if not outcome:
        return task
    if out.json_mode:
        files, final = await sup.diff(task.id)
        out.json_doc(
            {
                "task": task_json(task),
                "diff": {"final": final, "files": [f.to_json() for f in files]},
            }
        )
    else:
        print_outcome(out, task)
    return task


def print_event(out: Output, e: Event) -> None:
    from baton.core.events import EventType

    if out.json_mode:
        return
    if e.type == EventType.TEXT and e.data.get("delta"):
        return  # deltas are summarised by the final text
    if e.type in (EventType.USAGE,):
        return
    style = {"state": "bold", "error": "red", "question": "yellow", "diff": "green"}.get(
        str(e.type), "dim"
    )
    out.console.print(f"[{style}]{e.type:>9}[/{style}] {escape(describe_event(e))}")


def print_outcome(out: Output, task: Task) -> None:
    c = out.console
    style = _STATE_STYLE.get(str(task.state), "")
    c.print(
        f"\ntask [bold]{task.id}[/bold] is [{style}]{task.state}[/{style}]"
        + (f": {escape(task.message)}" if task.message else "")
    )
    if task.summary:
        c.print(escape(task.summary))
    from baton.core.usage import of_task

    used = of_task(task.options)
    if not used.empty:
        c.print(f"[dim]{escape(used.line())}[/dim]")
    hints = {
        TaskState.REVIEW: f"review: baton diff {task.id}; then baton accept {task.id} [HUNK…] "
        f"or baton reject {task.id}",
        TaskState.NEEDS_INPUT: f'reply: baton reply {task.id} "…"',
        TaskState.FAILED: f"details: baton inspect {task.id}",
    }
    if task.state in hints:
        c.print(f"[dim]{hints[task.state]}[/dim]")
