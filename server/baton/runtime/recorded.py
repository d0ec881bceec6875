"""What a task records about itself, read back: its snapshot, worker, request, checks.

Everything a later step (or another broker) needs is decided once and stored on the task
(:attr:`Task.options`) or in its folder, so no step depends on a request that is gone:
the profile routing chose, the editor's diagnostics and brief rules, its unsaved buffers
(``overlays.json`` in the task's folder), the prompt of the turn being started.
"""

from __future__ import annotations

import dataclasses
import json
import os
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from baton.config.profiles import Profile
from baton.config.settings import Settings
from baton.config.watch import SettingsCache
from baton.core.brief import Diagnostic, title_of
from baton.core.routing import Route
from baton.core.settle import NextTurn
from baton.core.task import Task, new_task_id
from baton.runtime.broker import TaskError
from baton.runtime.checks import Check
from baton.runtime.dispatch import route_record
from baton.runtime.requests import DelegateRequest
from baton.workspace import Snapshot

OVERLAYS = "overlays.json"


def copy(task: Task) -> Task:
    """A copy the store thread can write while the loop goes on changing the task.

    Shallow where that is safe: the runtime replaces option values, never mutates them.
    """
    return dataclasses.replace(
        task, targets=list(task.targets), scope=list(task.scope), options=dict(task.options)
    )


def task_for(req: DelegateRequest, settings: Settings, route: Route) -> Task:
    """The task a request becomes, with the route and the worker's profile decided once."""
    profile = settings.profiles[route.worker]
    now = time.time()
    task = Task(
        id=req.task_id or new_task_id(now),
        instruction=req.instruction,
        root=str(Path(req.root).resolve()),
        title=req.title or title_of(req.instruction),
        action=req.action,
        kind=route.kind,
        targets=list(req.targets),
        scope=list(req.scope),
        worker=profile.name,
        provider=profile.provider,
        model=route.model,
        route_reason=route.reason,
        group=req.group,
        options={**project_options(settings, route.kind), **req.options},
        created_at=now,
        updated_at=now,
    )
    task.options["route"] = route_record(req, route)
    store_profile(task, profile)
    try:
        checks_of(task)
    except ValueError as exc:
        raise TaskError(str(exc)) from None
    return task


def snapshot_of(task: Task) -> Snapshot:
    data = task.options.get("snapshot")
    if not isinstance(data, dict):
        raise TaskError(f"task {task.id} has no snapshot")
    return Snapshot.from_json(data)


def has_snapshot(task: Task) -> bool:
    return isinstance(task.options.get("snapshot"), dict) and bool(task.snapshot)


def agent_cwd(task: Task) -> str:
    """The worktree folder matching the folder the user delegated from."""
    if not task.worktree:
        return task.root
    return str(Path(task.worktree) / snapshot_of(task).prefix)


def store_profile(task: Task, profile: Profile) -> None:
    """Record the worker routing chose, as it was configured then."""
    task.options["profile"] = dataclasses.asdict(profile)


def configured_profile(
    settings: SettingsCache, defaults: Mapping[str, Profile], name: str, root: str | None
) -> Profile:
    """A worker's profile in the settings of ``root`` (``defaults`` without); refused when
    unknown or disabled."""
    found = settings.last_good(root) if root else None
    profiles = found.profiles if found is not None else defaults
    profile = profiles.get(name) or defaults.get(name)
    if profile is None:
        known = ", ".join(sorted(profiles)) or "none"
        raise TaskError(f"unknown worker {name!r}; configured workers: {known}")
    if not profile.enabled:
        raise TaskError(f"worker {name!r} is disabled")
    return profile


def profile_of(task: Task, fallback: Mapping[str, Profile]) -> Profile:
    """The profile recorded at delegate time (or hand-off); older tasks look theirs up."""
    raw = task.options.get("profile")
    if isinstance(raw, dict) and raw.get("name") == task.worker:
        names = {f.name for f in dataclasses.fields(Profile)}
        return Profile(**{k: v for k, v in raw.items() if k in names})
    profile = fallback.get(task.worker)
    if profile is None:
        raise TaskError(f"task {task.id}: its worker {task.worker!r} is not configured")
    return profile


def store_request(
    task: Task,
    folder: Path,
    *,
    diagnostics: Sequence[Diagnostic],
    overlays: Mapping[str, str],
    rules: Sequence[str],
) -> None:
    """Keep what the brief and the snapshot need from the request: diagnostics and the
    editor's rules in the task, unsaved buffers in the task's folder (they can be large)."""
    request: dict[str, Any] = {}
    if diagnostics:
        request["diagnostics"] = [dataclasses.asdict(d) for d in diagnostics]
    if rules:
        request["rules"] = list(rules)
    if overlays:
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / (OVERLAYS + ".tmp")
        tmp.write_text(json.dumps(dict(overlays)), encoding="utf-8")
        os.replace(tmp, folder / OVERLAYS)
        request["overlays"] = OVERLAYS
    if request:
        task.options["request"] = request


def diagnostics_of(task: Task) -> list[Diagnostic]:
    raw = (task.options.get("request") or {}).get("diagnostics") or []
    names = {f.name for f in dataclasses.fields(Diagnostic)}
    return [Diagnostic(**{k: v for k, v in d.items() if k in names}) for d in raw]


def editor_rules_of(task: Task) -> list[str]:
    return [str(r) for r in (task.options.get("request") or {}).get("rules") or []]


def overlays_of(task: Task, folder: Path) -> dict[str, str]:
    if not (task.options.get("request") or {}).get("overlays"):
        return {}
    try:
        data = json.loads((folder / OVERLAYS).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise TaskError(f"task {task.id}: its unsaved buffers are lost: {exc}") from None
    return {str(k): str(v) for k, v in data.items()}


def store_turn(task: Task, turn: NextTurn) -> None:
    """The turn being started, so a broker that finds it never started can start it."""
    if turn.prompt == task.brief:  # the brief is on the task already (and may be large)
        task.options["turn"] = {"brief": True, "reason": turn.reason}
    else:
        task.options["turn"] = {"prompt": turn.prompt, "reason": turn.reason}


def turn_of(task: Task) -> NextTurn | None:
    raw = task.options.get("turn")
    if not isinstance(raw, dict):
        return None
    reason = str(raw.get("reason") or "first")
    if raw.get("brief"):
        return NextTurn(task.brief, reason)
    if isinstance(raw.get("prompt"), str):
        return NextTurn(raw["prompt"], reason)
    return None


def fresh_prompt(task: Task, last: NextTurn | None) -> str:
    """The prompt of a new session that replaces one the agent lost: the brief, what the
    agent had answered, and what the user said in the turn that found the session gone."""
    parts = [task.brief]
    if task.summary:
        parts.append("Your earlier session is gone. What you had answered so far:\n" + task.summary)
    if last is not None and last.reason in ("reply", "steer") and last.prompt:
        parts.append("Since then the user said:\n" + last.prompt)
    return "\n\n".join(p for p in parts if p)


def project_options(settings: Settings, kind: str) -> dict[str, Any]:
    """The project's checks, repair rounds, attempt budget and reviewer as task options."""
    out: dict[str, Any] = {
        "repair_rounds": settings.repair_rounds,
        "max_attempts": settings.max_attempts,
    }
    if settings.verify:
        out["verify"] = [
            {"name": v.name, "argv": list(v.argv), "timeout": v.timeout} for v in settings.verify
        ]
    review = settings.review
    if review.worker and (not review.kinds or kind in review.kinds):
        out["review"] = {"worker": review.worker}
    return out


def reviewer_of(task: Task) -> str | None:
    review = task.options.get("review")
    if isinstance(review, dict) and isinstance(review.get("worker"), str):
        return str(review["worker"])
    return None


def checks_of(task: Task) -> list[Check]:
    raw = task.options.get("verify") or []
    return [Check.from_json(c) for c in raw if isinstance(c, dict)]


def not_a_proposal(task: Task, move: str) -> None:
    if task.options.get("proposal"):
        raise TaskError(
            f"task {task.id} is an edit {task.worker} proposed: {move} does not apply; accept "
            f"or reject it, or answer in {task.worker} itself"
        )
