"""What must hold after a broker died and another took over (issue 14, "Must show").

A :class:`Work` is one fake task: its script, the texts of the files it touches as the
snapshot has them, and so — by playing the script's file steps on them — exactly what the
agent leaves. The checks compare the broker's record (state, attempts, events, diff) and the
disk (worktree, the user's files, processes) with that:

- exactly one agent process per attempt, none outside a recorded attempt;
- events numbered 1..n with no gap, no text event twice;
- the task rests in the state its agent's outcome calls for, with a reason;
- the final diff is exactly the agent's change; the worktree holds exactly what it wrote;
- after accept (reject), every hunk is accepted (rejected) and the user's files say so;
- no user edit reverted, no ``.baton-*.tmp`` left in the user's tree, no process left.
"""

from __future__ import annotations

import collections
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.agents.fake_runlog import pid_namespace
from baton.core.diff import FileDiff, HunkState, apply_hunks
from baton.core.events import Event, EventType
from baton.core.lifecycle import Completion, TaskState
from baton.core.task import Attempt, Task
from baton.runtime.supervisor import Supervisor
from tests.crash.harness import Lab, delegate_json

S = TaskState


@dataclass
class Work:
    """One fake task and what it must leave behind."""

    steps: list[dict[str, Any]]
    summary: str
    base: dict[str, str | None]  # path → text in the snapshot (None: no such file)
    state: TaskState = S.REVIEW
    fields: dict[str, Any] = field(default_factory=dict)  # more of the delegate request

    @classmethod
    def of(
        cls,
        repo: Path,
        steps: Sequence[dict[str, Any]],
        summary: str,
        overlays: Mapping[str, str] | None = None,
        **fields: Any,
    ) -> Work:
        """The work of ``steps`` on ``repo`` as it is now (plus unsaved ``overlays``)."""
        base: dict[str, str | None] = {}
        for step in steps:
            for key in ("write", "edit", "append"):
                if key in step:
                    path = repo / step[key]
                    base[step[key]] = path.read_text() if path.exists() else None
        for rel, text in (overlays or {}).items():
            base[rel] = text
        if overlays:
            fields["overlays"] = dict(overlays)
        return cls(list(steps), summary, base, fields=fields)

    @property
    def result(self) -> dict[str, str]:
        """path → text of every file the agent touches, once its script has run."""
        texts = dict(self.base)
        for step in self.steps:
            if "write" in step:
                texts[step["write"]] = step.get("content", "")
            elif "edit" in step:
                before = texts[step["edit"]]
                assert before is not None and step["old"] in before, f"bad script step {step}"
                texts[step["edit"]] = before.replace(step["old"], step["new"], 1)
            elif "append" in step:
                texts[step["append"]] = (texts.get(step["append"]) or "") + step.get("text", "")
        return {p: t for p, t in texts.items() if t is not None and p in self.touched}

    @property
    def touched(self) -> set[str]:
        return {step[k] for step in self.steps for k in ("write", "edit", "append") if k in step}

    @property
    def says(self) -> list[str]:
        return [step["say"] for step in self.steps if "say" in step]

    def request(self, root: Path) -> dict[str, Any]:
        return delegate_json(self.steps, root, summary=self.summary, **self.fields)


# -- one task ----------------------------------------------------------------------------------


async def check_task(
    sup: Supervisor,
    lab: Lab,
    task_id: str,
    work: Work,
    *,
    processes: int | None = 1,
    alternatives: Sequence[Work] = (),
) -> Task:
    """Every invariant for a task that rests after the crashes (see the module doc).

    ``processes``: how many agent processes the task must have had in all (None: any).
    ``alternatives``: other bases the broker may rightly have taken (a fresh snapshot).
    """
    task = await sup.get(task_id)
    assert task.state == work.state, (
        f"task {task_id} is {task.state} ({task.completion}: {task.message!r}); "
        f"its agent's outcome calls for {work.state}"
    )
    if task.state in (S.REVIEW, S.ANSWERED):
        assert task.completion == Completion.COMPLETED, (task.completion, task.message)
        assert task.summary == work.summary, (task.summary, work.summary)
    else:
        assert task.message.strip(), f"task {task_id} is {task.state} with no reason"
    attempts = await sup.attempts(task_id)
    check_processes(lab, task_id, attempts, processes)
    events = await sup.events(task_id)
    check_events(task_id, events, work, single=processes == 1)
    if task.state == S.REVIEW:
        matched = await check_diff(sup, task_id, [work, *alternatives])
        check_worktree(task, matched)
    elif task.state == S.ANSWERED:
        files, _ = await sup.diff(task_id)
        assert not [h for f in files for h in f.hunks], f"task {task_id} answered with a diff"
    check_no_temp_files(lab.repo)
    await lab.no_lingering()
    return task


def check_processes(
    lab: Lab, task_id: str, attempts: Sequence[Attempt], processes: int | None
) -> None:
    """Each agent process belongs to one recorded attempt; no attempt had two."""
    runs = lab.runs(task_id)
    table = f"runs {[(r['pid'], r['ppid'], r.get('attempt')) for r in runs]}, attempts " + str(
        [(a.n, a.pid, a.reason, a.completion) for a in attempts]
    )
    if processes is not None:
        assert len(runs) == processes, (
            f"task {task_id}: {len(runs)} agent process(es) ran, {processes} expected; {table}"
        )
    per_attempt: collections.Counter[int] = collections.Counter()
    host = pid_namespace()
    for run in runs:
        if run.get("pid_ns") not in (None, host):  # sandboxed: its pids are its namespace's
            owners = [a for a in attempts if a.n == run.get("attempt") and a.pid]
        else:
            ids = {run["pid"], run["ppid"], run["pgid"]}
            owners = [a for a in attempts if a.pid in ids]
        assert len(owners) == 1, (
            f"task {task_id}: agent pid {run['pid']} ran outside any recorded attempt; {table}"
        )
        if run.get("attempt") is not None:
            assert owners[0].n == run["attempt"], f"task {task_id}: attempt numbers differ; {table}"
        per_attempt[owners[0].n] += 1
    doubled = {n: c for n, c in per_attempt.items() if c > 1}
    assert not doubled, f"task {task_id}: attempts with more than one process {doubled}; {table}"
    if runs:
        last = attempts[-1]
        assert per_attempt[last.n] == 1, f"task {task_id}: its last attempt had no process; {table}"


def check_events(task_id: str, events: Sequence[Event], work: Work, *, single: bool) -> None:
    """Contiguous numbering, no text twice, the agent's words and end exactly once."""
    seqs = [e.seq for e in events]
    assert seqs == list(range(1, len(events) + 1)), f"task {task_id}: event seqs {seqs}"
    texts = [(e.attempt, str(e.data.get("text"))) for e in events if e.type == EventType.TEXT]
    twice = [t for t, c in collections.Counter(texts).items() if c > 1]
    assert not twice, f"task {task_id}: text events stored twice: {twice[:5]}"
    if not single:
        return
    said = [t for _, t in texts]
    for words in work.says:
        assert said.count(words) == 1, f"task {task_id}: {words!r} said {said.count(words)} times"
    finals = [e for e in events if e.type == EventType.FINAL]
    if work.state in (S.REVIEW, S.ANSWERED):
        assert len(finals) == 1, f"task {task_id}: {len(finals)} final events"
    arrivals = [e for e in events if e.type == EventType.STATE and e.data.get("to") == work.state]
    assert len(arrivals) == 1, f"task {task_id} reached {work.state} {len(arrivals)} times"


def states_visited(events: Sequence[Event]) -> list[str]:
    return [str(e.data.get("to")) for e in events if e.type == EventType.STATE]


async def check_diff(sup: Supervisor, task_id: str, works: Sequence[Work]) -> Work:
    """The final diff is exactly the agent's change on one of ``works``' bases; that one."""
    files, final = await sup.diff(task_id)
    assert final, f"task {task_id} in review has no final diff"
    problems = []
    for work in works:
        problem = diff_problem(files, work)
        if problem is None:
            return work
        problems.append(problem)
    raise AssertionError(f"task {task_id}: the diff is not the agent's change: {problems[0]}")


def diff_problem(files: Sequence[FileDiff], work: Work) -> str | None:
    result = work.result
    changed = {p for p, text in result.items() if text != work.base.get(p)}
    paths = {f.path for f in files}
    if paths != changed:
        extra = {f.path: [(h.old_text, h.new_text) for h in f.hunks] for f in files}
        return f"files {sorted(paths)}, the agent changed {sorted(changed)}; hunks {extra}"
    for f in files:
        try:
            text = apply_hunks(work.base.get(f.path) or "", f.hunks)
        except ValueError as exc:
            return f"{f.path}: the hunks do not fit the snapshot: {exc}"
        if text != result[f.path]:
            return f"{f.path}: the hunks make {text!r}, the agent wrote {result[f.path]!r}"
    return None


def check_worktree(task: Task, work: Work) -> None:
    assert task.worktree, f"task {task.id} in review has no worktree"
    for rel, text in work.result.items():
        path = Path(task.worktree) / rel
        assert path.exists() and path.read_text() == text, f"worktree {rel}: not what was written"


def check_no_temp_files(repo: Path) -> None:
    left = [p for p in repo.rglob("*.baton-*.tmp") if ".git" not in p.relative_to(repo).parts]
    assert not left, f"temporary files left in the user's tree: {left}"


# -- after the user's decision -------------------------------------------------------------


async def check_accepted(
    sup: Supervisor, lab: Lab, task_id: str, work: Work, disk: Mapping[str, str] | None = None
) -> None:
    """Applied; every hunk accepted; the user's files are the agent's (or ``disk``)."""
    task = await sup.get(task_id)
    assert task.state == S.APPLIED, f"task {task_id} is {task.state}: {task.message!r}"
    await check_decisions(sup, task_id, HunkState.ACCEPTED)
    want = {**work.result, **(disk or {})}
    for rel, text in want.items():
        path = lab.repo / rel
        assert path.exists(), f"{rel}: accepted but not on disk"
        assert path.read_text() == text, f"{rel}: on disk is not what was accepted"
    check_user_edits(lab, skip=set(want))
    check_no_temp_files(lab.repo)


async def check_rejected(sup: Supervisor, lab: Lab, task_id: str, work: Work) -> None:
    """Rejected; every hunk rejected; the user's files untouched; the worktree gone."""
    task = await sup.get(task_id)
    assert task.state == S.REJECTED, f"task {task_id} is {task.state}: {task.message!r}"
    await check_decisions(sup, task_id, HunkState.REJECTED)
    check_untouched(lab, work)
    check_user_edits(lab)
    check_no_temp_files(lab.repo)
    assert not task.worktree or not Path(task.worktree).exists(), (
        f"task {task_id} is rejected but its worktree {task.worktree} is still there"
    )


def check_untouched(lab: Lab, work: Work) -> None:
    """The user's files the task touches are as they were before it (or as the user left)."""
    for rel in work.touched:
        path = lab.repo / rel
        want = lab.user_edits.get(rel, work.base.get(rel))
        if work.fields.get("overlays", {}).get(rel) is not None:
            continue  # an unsaved buffer was the base, not the file
        if want is None:
            assert not path.exists(), f"{rel}: written although nothing was accepted"
        else:
            assert path.read_text() == want, f"{rel}: changed although nothing was accepted"


async def check_decisions(sup: Supervisor, task_id: str, state: HunkState) -> None:
    files, _ = await sup.diff(task_id)
    states = {h.id: h.state for f in files for h in f.hunks}
    assert states, f"task {task_id} has no hunks"
    wrong = {h: s for h, s in states.items() if s != state}
    assert not wrong, f"task {task_id}: hunks not {state}: {wrong}"


def check_user_edits(lab: Lab, skip: set[str] | None = None) -> None:
    """No edit the user made while no broker ran was reverted."""
    for rel, text in lab.user_edits.items():
        if skip and rel in skip:
            continue
        assert (lab.repo / rel).read_text() == text, f"the user's edit of {rel} was reverted"
