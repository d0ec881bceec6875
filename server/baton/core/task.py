"""Task and Attempt: what was delegated, to whom, and how it went."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any

from baton.core.ids import MIN_PREFIX as MIN_PREFIX
from baton.core.ids import new_task_id as new_task_id
from baton.core.lifecycle import NEXT_MOVES, Completion, TaskState


@dataclass(slots=True)
class Target:
    """A file, or lines of it (1-based, inclusive), the task is about."""

    path: str
    start_line: int | None = None
    end_line: int | None = None

    def label(self) -> str:
        if self.start_line is None:
            return self.path
        return f"{self.path}:{self.start_line}-{self.end_line or self.start_line}"


@dataclass(slots=True)
class Task:
    id: str
    instruction: str
    root: str
    title: str = ""
    action: str = "delegate"  # delegate | fix | explain | tests | run
    kind: str = (
        "general"  # routing kind: mechanical, context, build, reasoning, general, question, review
    )
    brief: str = ""
    targets: list[Target] = field(default_factory=list)
    scope: list[str] = field(default_factory=list)  # write-scope globs; empty = the whole tree
    isolation: str = "worktree"
    worker: str = "fake"  # profile name
    provider: str = "fake"
    model: str | None = None
    route_reason: str = ""
    state: TaskState = TaskState.QUEUED
    completion: Completion | None = None
    message: str = ""  # why it settled, for people
    summary: str = ""  # the worker's final text
    session_id: str | None = None
    snapshot: str | None = None  # commit id of the snapshot
    base_ref: str | None = None  # what the snapshot was built on (HEAD commit, or None)
    worktree: str | None = None
    branch: str | None = None
    attempts: int = 0
    resets_at: float | None = None
    group: str | None = None
    options: dict[str, Any] = field(default_factory=dict)
    created_at: float = 0.0
    updated_at: float = 0.0
    settled_at: float | None = None
    archived_at: float | None = None  # hidden from task lists since then (history kept)

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["state"] = str(self.state)
        d["completion"] = str(self.completion) if self.completion else None
        return d

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Task:
        names = {f.name for f in fields(cls)}
        d = {k: v for k, v in obj.items() if k in names}
        d["state"] = TaskState(d.get("state", "queued"))
        d["completion"] = Completion(d["completion"]) if d.get("completion") else None
        d["targets"] = [t if isinstance(t, Target) else Target(**t) for t in d.get("targets", [])]
        if isinstance(obj.get("usage"), dict) and "options" not in obj:
            # The surfaces' task JSON carries its usage beside the record, not in options.
            d["options"] = {"usage": obj["usage"]}
        return cls(**d)


def next_moves(task: Task) -> list[str]:
    """What makes sense next for this task (a proposal's proposer does the rest itself)."""
    moves = NEXT_MOVES[task.state]
    if task.completion == Completion.BUDGET and task.state == TaskState.REVIEW:
        moves = (*moves, "retry")  # with a raised cap, it goes on where it stopped
    if task.options.get("proposal"):
        return [m for m in moves if m not in ("reply", "retry", "steer")]
    return list(moves)


@dataclass(slots=True)
class Attempt:
    """One run of an agent process for a task."""

    task_id: str
    n: int
    reason: str = "first"  # first | reply | steer | retry | repair | handoff
    worker: str = ""
    provider: str = ""
    model: str | None = None
    transport: str = "native"
    session_id: str | None = None
    pid: int | None = None
    out_path: str = ""
    err_path: str = ""
    exit_path: str = ""
    out_offset: int = 0
    started_at: float = 0.0
    ended_at: float | None = None
    exit_code: int | None = None
    completion: Completion | None = None
    owner: str = ""  # which broker (pid@host) supervises it

    def to_json(self) -> dict[str, Any]:
        d = asdict(self)
        d["completion"] = str(self.completion) if self.completion else None
        return d

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Attempt:
        names = {f.name for f in fields(cls)}
        d = {k: v for k, v in obj.items() if k in names}
        d["completion"] = Completion(d["completion"]) if d.get("completion") else None
        return cls(**d)
