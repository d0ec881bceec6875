"""A task's transcript: its events rendered as text a person reads while the agent works.

:class:`Transcript` folds events, in order, into lines of Markdown-flavoured text: a header
(title, id, worker), the state changes with their time, the agent's text as sentences
(a sentence shows once it is complete: a delta cut in a word shows nothing new until the
sentence ends or the agent does something else), each tool call with its files and whether
it succeeded, the checks, the review, questions, errors, drafts and the tokens and cost.

The lines only grow at the end: an event changes the last lines at most (the sentence being
written, a tool call's result), so a follower can be sent just the lines from the first one
that changed (:meth:`Transcript.take`). Pure: no I/O; times are formatted from the events'
timestamps in local time.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from baton.core.events import Event, EventType, describe
from baton.core.task import Task

#: The end of a sentence: . ! ? : ; followed by white space (a dot in ``app.py`` ends
#: nothing, and one at the very end of a delta may be such a dot: it waits for what follows).
_SENTENCE_END = re.compile(r"[.!?:;](?=\s)")
#: The longest tool input, check output line, log message shown on one line.
_ONE_LINE = 160
#: The most lines of a many-line error (a traceback) shown under its first.
_ERROR_LINES = 30


def _one_line(text: object, limit: int = _ONE_LINE) -> str:
    flat = " ".join(str(text).split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def clock(ts: float) -> str:
    """``HH:MM:SS`` of a timestamp, in local time (empty for none)."""
    return time.strftime("%H:%M:%S", time.localtime(ts)) if ts else ""


def _tokens(data: dict[str, Any]) -> str:
    parts = [f"{int(data.get('input') or 0)} tokens in", f"{int(data.get('output') or 0)} out"]
    if data.get("cached"):
        parts.append(f"{int(data['cached'])} cached")
    cost = data.get("cost")
    text = ", ".join(parts)
    return f"{text} · ${float(cost):.4f}" if isinstance(cost, int | float) else text


def header(task: Task) -> list[str]:
    """The first lines: what the task is, who works on it."""
    who = " · ".join(x for x in (task.worker, task.model or "", task.action) if x)
    lines = [f"# {task.title or task.id}", "", f"task {task.id} · {who}"]
    targets = ", ".join(t.label() for t in task.targets)
    if targets:
        lines.append(f"on {targets}")
    return lines


@dataclass
class Transcript:
    """The transcript of one task, built event by event."""

    lines: list[str] = field(default_factory=list)
    seq: int = 0  # the last event folded in
    _changed: int | None = 0  # the first line changed since the last take (None: none)
    _block: str = ""  # what the last lines are: "" (the header), "text" or "steps"
    _line: int = -1  # the line the agent's current sentence(s) are shown on (-1: none)
    _said: str = ""  # the agent's text since its last line end, complete or not
    _attempt_said: str = ""  # everything the agent said in this attempt (to spot its summary)
    _tool: int = -1  # the line of the last tool call still waiting for its result

    @classmethod
    def of(cls, task: Task, events: Iterable[Event] = ()) -> Transcript:
        """A transcript with ``task``'s header and ``events`` folded in."""
        out = cls(lines=header(task))
        for event in events:
            out.add(event)
        return out

    def text(self) -> str:
        return "\n".join(self.lines) + "\n"

    def take(self) -> tuple[int, list[str]] | None:
        """The lines changed since the last take: (index of the first, lines from there on)."""
        start, self._changed = self._changed, None
        if start is None:
            return None
        return start, self.lines[start:]

    # -- folding -------------------------------------------------------------------------

    def add(self, event: Event) -> None:
        """Fold one event in (events already folded, by ``seq``, are ignored)."""
        if event.seq and event.seq <= self.seq:
            return
        self.seq = event.seq or self.seq
        if event.type == EventType.TEXT:
            self._text(str(event.data.get("text", "")), whole=not event.data.get("delta"))
            return
        self._end_sentence()
        d = event.data
        match event.type:
            case EventType.STATE:
                reason = str(d.get("reason") or "")
                to = str(d.get("to", ""))
                line = f"{clock(event.ts)}  **{to.replace('_', ' ')}**"
                self._step(line + (f" — {_one_line(reason)}" if reason and reason != to else ""))
                if to == "running":
                    self._attempt_said = ""
            case EventType.TOOL:
                self._step(f"- {self._tool_line(d)}")
                self._tool = len(self.lines) - 1
            case EventType.TOOL_RESULT:
                self._tool_result(d)
            case EventType.USAGE:
                if not d.get("running"):  # a count while the turn runs: its report follows
                    self._step(f"- {_tokens(d)}")
            case EventType.FINAL:
                self._final(str(d.get("text", "")))
            case EventType.QUESTION:
                self._step(f"- **asks:** {_one_line(d.get('text', ''), 400)}")
            case EventType.PERMISSION:
                preview = _one_line(d.get("preview", ""))
                self._step(f"- **asks permission:** {d.get('tool', '')} {preview}".rstrip())
            case EventType.ERROR:
                self._error(str(d.get("kind", "?")), str(d.get("message", "")))
            case EventType.PLAN:
                self._plan(d.get("entries") or [])
            case EventType.VERIFY:
                self._verify(d)
            case EventType.REVIEW:
                self._review(d)
            case EventType.DIFF:
                which = "final diff" if d.get("final") else "draft"
                files, hunks = int(d.get("files", 0)), int(d.get("hunks", 0))
                counts = f"+{int(d.get('added', 0))} -{int(d.get('removed', 0))}"
                plural = f"{files} file{'s' * (files != 1)}, {hunks} hunk{'s' * (hunks != 1)}"
                self._step(f"- {which}: {plural} ({counts})")
            case EventType.LOG:
                self._step(f"- {_one_line(d.get('message', ''))}")
            case EventType.SESSION:
                return
            case _:
                self._step(f"- {describe(event)}")

    def _tool_line(self, d: dict[str, Any]) -> str:
        name = str(d.get("name") or "tool")
        files = [str(f) for f in d.get("files") or []]
        if files:
            shown = ", ".join(f"`{f}`" for f in files[:5])
            more = f" and {len(files) - 5} more" if len(files) > 5 else ""
            return f"{name} {shown}{more}"
        given = _one_line(d.get("input") or "")
        return f"{name}: `{given}`" if given else name

    def _tool_result(self, d: dict[str, Any]) -> None:
        ok = bool(d.get("ok", True))
        if 0 <= self._tool < len(self.lines) and ok:
            self._set(self._tool, self.lines[self._tool] + " ✓")
        elif not ok:
            output = str(d.get("output") or "").strip().splitlines()
            why = f": {_one_line(output[0])}" if output else ""
            if 0 <= self._tool < len(self.lines):
                self._set(self._tool, self.lines[self._tool] + f" ✗{why}")
            else:
                self._step(f"- {d.get('name') or 'tool'} failed{why}")
        self._tool = -1

    def _final(self, text: str) -> None:
        said = " ".join(self._attempt_said.split())
        result = " ".join(text.split())
        if result and result not in said:
            self._step("- **result:**")
            self._open("text")
            for line in text.strip().splitlines():
                self._append(line)

    def _plan(self, entries: list[Any]) -> None:
        marks = {"completed": "[x]", "in_progress": "[~]"}
        self._step("- plan:")
        for e in entries:
            if isinstance(e, dict):
                mark = marks.get(str(e.get("status")), "[ ]")
                self._append(f"  - {mark} {_one_line(e.get('text', ''))}")

    def _verify(self, d: dict[str, Any]) -> None:
        seconds = float(d.get("seconds") or 0)
        if d.get("passed"):
            self._step(f"- check **{d.get('name', '')}** passed ({seconds:.1f} s)")
            return
        self._step(
            f"- check **{d.get('name', '')}** failed (exit {d.get('exit')}, {seconds:.1f} s)"
        )
        tail = str(d.get("output") or "").strip().splitlines()[-5:]
        for line in tail:
            self._append(f"  > {_one_line(line)}")

    def _review(self, d: dict[str, Any]) -> None:
        verdict = str(d.get("verdict", "?")).replace("_", " ")
        self._step(f"- review by {d.get('worker', '?')}: **{verdict}**")
        if d.get("summary"):
            self._append(f"  {_one_line(d['summary'], 400)}")
        for f in d.get("findings") or []:
            if isinstance(f, dict):
                where = f"{f.get('path', '?')}:{f.get('line', '?')}"
                self._append(f"  - {where}: {_one_line(f.get('message', ''))}")

    # -- the agent's text ----------------------------------------------------------------

    def _text(self, text: str, whole: bool) -> None:
        self._attempt_said += text
        self._said += text
        *done, self._said = self._said.split("\n")
        for line in done:
            self._show_said(line)
            self._line = -1
        if whole:
            self._end_sentence()
        elif self._said:
            ends = [m.end() for m in _SENTENCE_END.finditer(self._said)]
            if ends:
                self._show_said(self._said[: ends[-1]].rstrip())

    def _end_sentence(self) -> None:
        """The agent did something else: what it was saying is whole now."""
        if self._said.strip():
            self._show_said(self._said.rstrip())
        self._said, self._line = "", -1

    def _show_said(self, text: str) -> None:
        if self._line < 0:
            if not text.strip() and self._block != "text":
                return  # no paragraph starts with an empty line
            self._open("text")
            self._append(text)
            self._line = len(self.lines) - 1
        elif self.lines[self._line] != text:
            self._set(self._line, text)

    # -- lines ---------------------------------------------------------------------------

    def _open(self, block: str) -> None:
        if self._block != block:
            if self.lines and self.lines[-1] != "":
                self._append("")
            self._block = block

    def _error(self, kind: str, message: str) -> None:
        """An error's first line as a step, the rest of it (a traceback) indented below."""
        first, *rest = message.strip().splitlines() or [""]
        self._step(f"- **error** ({kind}): {_one_line(first, 400)}")
        rest = [line.rstrip() for line in rest if line.strip()]
        for line in rest[:_ERROR_LINES]:
            cut = line if len(line) <= _ONE_LINE else line[: _ONE_LINE - 1] + "…"
            self._append("    " + cut)
        if len(rest) > _ERROR_LINES:
            self._append(f"    … ({len(rest) - _ERROR_LINES} more lines)")

    def _step(self, line: str) -> None:
        self._open("steps")
        self._append(line)

    def _append(self, line: str) -> None:
        self.lines.append(line)
        self._mark(len(self.lines) - 1)

    def _set(self, index: int, line: str) -> None:
        self.lines[index] = line
        self._mark(index)

    def _mark(self, index: int) -> None:
        if self._changed is None or index < self._changed:
            self._changed = index


def render(task: Task, events: Iterable[Event]) -> str:
    """The whole transcript of ``task`` from its events, as text."""
    return Transcript.of(task, events).text()
