"""``workspace/executeCommand`` handlers: the ``baton.*`` commands.

Each takes one JSON object (see docs/reference/protocol.md) and answers at once: a command
never waits on an agent. Wrong payloads get ``InvalidParams``; a request the task's state
does not allow (or an unknown task) gets ``RequestFailed`` with a message saying what to do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from lsprotocol import types

import baton.surfaces.lsp.asking as asking
import baton.surfaces.lsp.hunk_commands as hunks
import baton.surfaces.lsp.placement as placement
import baton.surfaces.lsp.planning as planning
import baton.surfaces.lsp.questions as questions
import baton.surfaces.lsp.settled as settled
from baton.config.layers import ConfigError
from baton.core import revision
from baton.core.budget import Caps
from baton.core.lifecycle import TaskState
from baton.core.task import Target, next_moves
from baton.errors import NotFound
from baton.runtime import DelegateRequest, TaskError
from baton.store import StoreError
from baton.surfaces.lsp.actions import DEFAULT_INSTRUCTIONS, SUGGESTIONS
from baton.surfaces.lsp.documents import relative_to, uri_to_path
from baton.surfaces.lsp.notify import Notifier, summary
from baton.surfaces.lsp.payloads import REQUEST_FAILED as REQUEST_FAILED
from baton.surfaces.lsp.payloads import Args, failed, invalid, last_line, moved
from baton.surfaces.lsp.progress import Progress
from baton.surfaces.lsp.server import BatonServer
from baton.surfaces.lsp.transcripts import Transcripts
from baton.surfaces.workers import workers_answer

ACTIONS = ("delegate", "fix", "explain", "tests")

Handler = Callable[[BatonServer, Args], Awaitable[Any]]


# -- delegate ------------------------------------------------------------------------------


async def ask_instruction(ls: BatonServer, where: str) -> str | None:
    """Plain clients: offer ready-made instructions with ``window/showMessageRequest``."""
    result = await ls.window_show_message_request_async(
        types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message=f"Baton: what should the agent do with {where}?",
            actions=[types.MessageActionItem(title=s) for s in SUGGESTIONS],
        )
    )
    return result.title if result is not None else None


async def delegate(ls: BatonServer, args: Args) -> Any:
    uri = args.text("uri")
    rng = args.range("range")
    kind = args.choice("kind", ACTIONS, "delegate")
    instruction = args.optional_text("instruction")
    diagnostics = args.diagnostics("diagnostics")
    scope = args.texts("scope") or []
    worker = args.optional_text("worker")
    workers = args.texts("workers") or []  # two or more: compare them on the same brief
    model = args.optional_text("model")
    path = uri_to_path(uri)
    if path is None or not path.is_absolute():
        raise invalid(f"baton.delegate: uri must be a file: URI, got {uri!r}")
    doc = ls.open_document(uri)
    if rng is not None and doc is not None and rng.start.line > len(doc[0].splitlines()):
        raise invalid(f"baton.delegate: line {rng.start.line} is past the end of {path.name}")
    if kind == "fix" and not diagnostics:
        raise invalid("baton.delegate: kind fix needs the diagnostics to fix")
    root = ls.root_for(path)
    rel = relative_to(path, root)
    if rel is None:
        raise invalid(f"baton.delegate: {path} is outside {root}")
    target = Target(rel)
    where = rel
    if rng is not None:
        target = Target(rel, rng.start.line + 1, last_line(rng) + 1)
        where = target.label()
    if instruction is None:
        instruction = DEFAULT_INSTRUCTIONS.get(kind)
    if instruction is None:
        instruction = await ask_instruction(ls, where)
        if instruction is None:
            return {"taskId": None, "cancelled": True}
    sup = await ls.broker()
    request = DelegateRequest(
        instruction=instruction,
        root=str(root),
        action=kind,
        targets=[target],
        diagnostics=diagnostics,
        overlays=ls.overlays(root),
        rules=ls.settings.brief_rules,
        scope=scope,
        worker=worker or ls.settings.worker,
        model=model or ls.settings.model,
        options={"isolation": ls.settings.isolation, "surface": "lsp"},
    )
    try:
        if workers:
            tasks = await sup.compare(request, workers)
        else:
            tasks = [await sup.delegate(request)]
    except (TaskError, ValueError) as exc:
        raise failed(exc) from None
    for task in tasks:
        ls.roots.add(task.root)
        ls.get_feature(Progress).follow(task.id, task.title, task.state)
    task = tasks[0]
    result: dict[str, Any] = {"taskId": task.id, "state": str(task.state), "title": task.title}
    if workers:
        result |= {"taskIds": [t.id for t in tasks], "group": task.group}
    return result


# -- task moves ----------------------------------------------------------------------------


async def cancel(ls: BatonServer, args: Args) -> Any:
    task = await ls.cancel(args.task_id())
    return moved(task.id, task.state)


async def reply(ls: BatonServer, args: Args) -> Any:
    sup = await ls.broker()
    task_id, text = args.task_id(), args.optional_text("text")
    task = await sup.get(task_id)
    if text is None:  # the "Reply to" code action: ask the user (any LSP client can)
        if task.state != TaskState.NEEDS_INPUT:
            raise failed(TaskError(f"task {task.id} is {task.state}; say what to reply (text)"))
        text = await asking.ask_reply(ls, task)
        if text is None:
            return {"taskId": task.id, "state": str(task.state), "cancelled": True}
    ls.get_feature(Progress).follow(task.id, task.title, TaskState.NEEDS_INPUT)
    task = await sup.reply(task.id, text)
    return moved(task.id, task.state)


async def revise(ls: BatonServer, args: Args) -> Any:
    """Comments on a task in review, and reasons of hunks to reject, as its next turn:
    ``{taskId, comments: [{path | uri, start, end, text, hunkId?}], rejections?:
    [{hunkId, reason}]}`` (lines 1-based)."""
    sup = await ls.broker()
    task = await sup.get(args.task_id())
    raw = args.obj.get("comments")
    if isinstance(raw, list):  # a client that knows the document's uri, not its path
        raw = [_with_path(ls, task.root, c) for c in raw]
    try:
        comments = revision.comments_from_json(raw)
        rejections = revision.rejections_from_json(args.obj.get("rejections"))
    except ValueError as exc:
        raise invalid(f"baton.revise: {exc}") from None
    ls.get_feature(Progress).follow(task.id, task.title, TaskState.REVIEW)
    task = await sup.revise(task.id, comments, rejections)
    return moved(task.id, task.state)


async def checkpoints(ls: BatonServer, args: Args) -> Any:
    """The kept results of a revised task's turns: ``{taskId, turns: [{turn, commit,
    shown}]}``."""
    sup = await ls.broker()
    task = await sup.get(args.task_id())
    return {"taskId": task.id, "turns": await sup.checkpoints(task.id)}


async def step_back(ls: BatonServer, args: Args) -> Any:
    """Show an earlier turn's result as the diff: ``{taskId, turn}``."""
    sup = await ls.broker()
    turn = args.integer("turn", 1, 10_000)
    if turn is None:
        raise invalid("baton.stepBack: turn is required (see baton.checkpoints)")
    task = await sup.step_back(args.task_id(), turn)
    return moved(task.id, task.state)


def _with_path(ls: BatonServer, root: str, c: Any) -> Any:
    if not isinstance(c, dict) or "path" in c or not isinstance(c.get("uri"), str):
        return c
    path = uri_to_path(c["uri"])
    rel = relative_to(path, Path(root)) if path is not None else None
    if rel is None:
        raise invalid(f"baton.revise: {c['uri']} is not in the task's folder")
    return {k: v for k, v in c.items() if k != "uri"} | {"path": rel}


async def steer(ls: BatonServer, args: Args) -> Any:
    sup = await ls.broker()
    task = await sup.steer(args.task_id(), args.text("text"))
    return moved(task.id, task.state)


async def retry(ls: BatonServer, args: Args) -> Any:
    sup = await ls.broker()
    task = await sup.get(args.task_id())
    caps = Caps(
        tokens=args.integer("maxTokens", 1, 1 << 50),
        cost=args.amount("maxCost"),
        steps=args.integer("maxSteps", 1, 1 << 31),
        seconds=args.amount("maxSeconds"),
    )
    ls.get_feature(Progress).follow(task.id, task.title, task.state)
    task = await sup.retry(task.id, caps)
    return moved(task.id, task.state)


# -- reading -------------------------------------------------------------------------------


async def tasks(ls: BatonServer, args: Args) -> Any:
    sup = await ls.broker()
    states = args.texts("states")
    if states is not None:
        known = {str(s) for s in TaskState}
        bad = [s for s in states if s not in known]
        if bad:
            raise invalid(f"baton.tasks: unknown states {bad}; known: {', '.join(sorted(known))}")
    query = args.optional_text("query")
    root = args.optional_text("root")
    limit = args.integer("limit", 1, 1000) or 100
    found = await sup.list_tasks(states=states, query=query, root=root, archived=False, limit=limit)
    return {"tasks": [summary(t) for t in found]}


async def inspect(ls: BatonServer, args: Args) -> Any:
    sup = await ls.broker()
    task = await sup.get(args.task_id())
    attempts = await sup.attempts(task.id)
    events = await sup.events(task.id)
    limit = args.integer("events", 0, 10_000)
    limit = 200 if limit is None else limit
    return {
        "task": {**task.to_json(), "next": next_moves(task)},
        "attempts": [a.to_json() for a in attempts],
        "events": [e.to_json() for e in events[-limit:]] if limit else [],
        "eventCount": len(events),
        "permissions": await sup.permissions(task.id),
    }


async def transcript(ls: BatonServer, args: Args) -> Any:
    """A task's transcript as lines; ``follow``: its changes come as ``baton/transcript``."""
    return await ls.get_feature(Transcripts).open(args.task_id(), args.flag("follow"))


async def diff(ls: BatonServer, args: Args) -> Any:
    sup = await ls.broker()
    td = await placement.load(sup, args.task_id())
    if td is None:
        raise failed(TaskError("this task has no diff yet"))
    return await ls.diff_payload(td)


async def status(ls: BatonServer, args: Args) -> Any:
    await ls.broker()
    return await ls.get_feature(Notifier).send_status(recount=True)


async def workers(ls: BatonServer, args: Args) -> Any:
    """The workers a task delegated from ``uri`` (default: the first workspace folder) may
    use: the websocket's ``workers`` answer for that document's root."""
    uri = args.optional_text("uri")
    if uri is not None:
        path = uri_to_path(uri)
        if path is None or not path.is_absolute():
            raise invalid(f"baton.workers: uri must be a file: URI, got {uri!r}")
        root: Path | None = ls.root_for(path)
    else:
        folders = ls.folders()
        root = folders[0] if folders else None
    sup = await ls.broker()
    try:
        return await workers_answer(sup, root.resolve() if root is not None else None)
    except ConfigError as exc:
        raise failed(exc) from None


async def dashboard(ls: BatonServer, args: Args) -> Any:
    """A one-time link to the broker's dashboard page: the websocket's ``dashboard``."""
    await ls.broker()
    if ls.endpoint is None or ls.endpoint.dashboard is None:
        raise failed(TaskError("this language server's broker has no websocket endpoint"))
    return await ls.endpoint.dashboard.invite()


async def answer_permission(ls: BatonServer, args: Args) -> Any:
    """Answer an ACP agent's permission request: ``{taskId, option, permissionId?}``."""
    sup = await ls.broker()
    return await sup.answer(args.task_id(), args.text("option"), args.optional_text("permissionId"))


HANDLERS: dict[str, tuple[Handler, bool]] = {
    "baton.delegate": (delegate, False),
    "baton.cancel": (cancel, False),
    "baton.reply": (reply, False),
    "baton.revise": (revise, False),
    "baton.checkpoints": (checkpoints, False),
    "baton.stepBack": (step_back, False),
    "baton.steer": (steer, False),
    "baton.retry": (retry, False),
    "baton.handoff": (settled.handoff, False),
    "baton.archive": (settled.archive, False),
    "baton.ask": (questions.ask, False),
    planning.PLAN: (planning.plan, False),
    planning.APPROVE: (planning.approve, False),
    planning.REJECT: (planning.reject, False),
    "baton.accept": (hunks.accept, False),
    "baton.reject": (hunks.reject, False),
    "baton.resolve": (hunks.resolve, False),
    "baton.proposed": (hunks.proposed, False),
    "baton.reopen": (hunks.reopen, False),
    "baton.reaccept": (hunks.reaccept, False),
    "baton.tasks": (tasks, True),
    "baton.inspect": (inspect, False),
    "baton.transcript": (transcript, False),
    "baton.diff": (diff, False),
    "baton.status": (status, True),
    "baton.workers": (workers, True),
    "baton.dashboard": (dashboard, True),
    "baton.answerPermission": (answer_permission, False),
}
#: Every command the server declares.
COMMANDS = tuple(HANDLERS)


def _command(name: str, handler: Handler, optional: bool) -> Callable[..., Awaitable[Any]]:
    async def run(ls: BatonServer, *arguments: Any) -> Any:
        args = Args(name, arguments, optional=optional)
        try:
            return await handler(ls, args)
        except (TaskError, NotFound, StoreError) as exc:
            raise failed(exc) from None

    run.__name__ = name.replace(".", "_")
    # pygls reads a command's annotations at every call (typing.get_type_hints): as the
    # strings this module's ``from __future__ import annotations`` makes them, evaluated
    # each time, that was half a millisecond per command on the loop; as objects, 15 µs.
    run.__annotations__ = {"ls": BatonServer, "arguments": Any, "return": Any}
    return run


def register(server: BatonServer) -> None:
    for name, (handler, optional) in HANDLERS.items():
        server.command(name)(_command(name, handler, optional))
