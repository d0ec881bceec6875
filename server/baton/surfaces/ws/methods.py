"""The broker's JSON-RPC methods: each reads its params, asks the Supervisor, shapes the answer.

Connection-bound methods (``auth``, ``watch``/``subscribe``, ``unsubscribe``) live in
:mod:`baton.surfaces.ws.endpoint`; everything here only needs the Supervisor. Answers are
sized for a context window (:mod:`baton.surfaces.ws.answers`): a task appears once, as a short
line, unless the method is about the whole record (``get``, ``inspect`` with ``detail``).
Every task in an answer carries ``next``; a move refused in the task's state is a
``WRONG_STATE`` error whose message and ``data.next`` name the moves that do make sense.
"""

from __future__ import annotations

import asyncio
import json
import os
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import baton.surfaces.ws.answers as answers
import baton.surfaces.ws.caps as caps
import baton.surfaces.ws.protocol as p
import baton.surfaces.ws.views as views
import baton.surfaces.ws.waiting as waiting
from baton import __version__
from baton.config.layers import ConfigError
from baton.core import revision
from baton.core.effort import LEVELS
from baton.core.lifecycle import TaskState
from baton.core.task import next_moves
from baton.errors import NotFound
from baton.runtime import DelegateRequest, GraphNode, Supervisor, TaskError, broker_alive
from baton.surfaces.workers import workers_answer
from baton.surfaces.ws.bench import Benches
from baton.surfaces.ws.love import Defaults
from baton.surfaces.ws.planner import Plans
from baton.surfaces.ws.settled import Settled
from baton.surfaces.ws.targets import targets_of
from baton.surfaces.ws.unstarted import Unstarted

Handler = Callable[[dict[str, Any]], Awaitable[Any]]

ACTIONS = ("delegate", "fix", "explain", "tests", "run")
ISOLATION = ("worktree",)
_MAX_GRAPH = 50
#: An ``events`` answer holds at most this many events and about this many bytes of them;
#: ``more`` says whether to ask again ``after`` the last one.
EVENTS_PAGE = 1000
EVENTS_PAGE_BYTES = 512 << 10
_STATES = tuple(str(s) for s in TaskState)
#: ``inspect`` shows this many of the latest events in its ``events`` section by default.
INSPECT_EVENTS = 50
#: ``wait`` gives up after this many seconds by default, at most after ``WAIT_MAX``.
WAIT_DEFAULT, WAIT_MAX = 600.0, 3600.0


class Methods:
    """The method table of one broker."""

    def __init__(self, sup: Supervisor, roots: list[str], info: Callable[[], dict[str, Any]]):
        self.sup = sup
        self.roots = roots
        self._info = info
        self.started = time.time()
        settled = Settled(sup, self._moved, self._check_worker)
        unstarted = Unstarted(sup, self._moved, self._check_worker, self._request)
        self.table: dict[str, Handler] = {
            "delegate": self.delegate,
            "graph": self.graph,
            "tasks": self.tasks,
            "inspect": self.inspect,
            "get": self.get,
            "diff": self.diff,
            "wait": self.wait,
            "accept": self.accept,
            "reject": self.reject,
            "reopen": self.reopen,
            "reply": self.reply,
            "revise": self.revise,
            "checkpoints": self.checkpoints,
            "stepBack": self.step_back,
            "steer": self.steer,
            "answer": self.answer,
            "cancel": self.cancel,
            "retry": self.retry,
            "handoff": settled.handoff,
            "complete": settled.complete,
            "archive": settled.archive,
            "clean": settled.clean,
            "edit": unstarted.edit,
            "ask": unstarted.ask,
            "love": Defaults(roots).love,
            "plan": Plans(sup, self._moved, self._request).plan,
            "bench": Benches(sup, roots).bench,
            "events": self.events,
            "memory": self.memory,
            "workers": self.workers,
            "models": self.workers,
            "health": self.health,
        }

    async def call(self, method: str, params: dict[str, Any]) -> Any:
        handler = self.table.get(method)
        if handler is None:
            raise p.RpcError(p.METHOD_NOT_FOUND, f"unknown method {method!r}")
        try:
            return await handler(params)
        except NotFound as exc:
            raise p.RpcError(exc.code, str(exc)) from None

    # ------------------------------------------------------------------ tasks

    async def delegate(self, params: dict[str, Any]) -> dict[str, Any]:
        """One task; with ``workers`` (two or more), a comparison of them on the same brief."""
        req = await self._request(params, "workers")
        workers = p.texts(params, "workers")
        if workers:
            for w in workers:
                self._check_worker(w, req.root)
            tasks = await self._moved(self.sup.compare(req, workers))
            return {
                "group": tasks[0].group,
                "tasks": [answers.line(t, worker=True) for t in tasks],
            }
        task = await self._moved(self.sup.delegate(req))
        return {"task": answers.line(task, worker=True)}

    async def graph(self, params: dict[str, Any]) -> dict[str, Any]:
        """A small graph in one call: ``{"nodes": [{"key", "after": [keys], ...delegate}]}``;
        each node starts once the nodes it comes after are accepted."""
        p.known(params, "nodes")
        nodes = params.get("nodes")
        if not isinstance(nodes, list) or not nodes or len(nodes) > _MAX_GRAPH:
            raise p.RpcError(p.INVALID_PARAMS, f"nodes: a list of 1 to {_MAX_GRAPH} objects")
        built = []
        for i, node in enumerate(nodes):
            if not isinstance(node, dict):
                raise p.RpcError(p.INVALID_PARAMS, f"nodes[{i}]: an object")
            fields = {k: v for k, v in node.items() if k not in ("key", "after")}
            key = p.nonempty(node, "key")
            after = p.texts(node, "after") or []
            built.append(GraphNode(key, await self._request(fields), after))
        created = await self._moved(self.sup.delegate_graph(built))
        return {"tasks": {key: answers.line(t, worker=True) for key, t in created.items()}}

    async def _request(self, params: dict[str, Any], *extra: str) -> DelegateRequest:
        p.known(
            params,
            "instruction",
            "cwd",
            "worker",
            "model",
            "kind",
            "scope",
            "isolation",
            "action",
            "targets",
            "title",
            "group",
            "dependsOn",
            "maxTokens", "maxCost", "maxSteps", "maxSeconds",
            "effort",
            *extra,
        )  # fmt: skip
        instruction = p.nonempty(params, "instruction")
        cwd = p.opt_text(params, "cwd") or (self.roots[0] if self.roots else None)
        if cwd is None:
            raise p.RpcError(p.INVALID_PARAMS, "cwd: required (this broker serves no folder)")
        root = Path(cwd).expanduser()
        if not root.is_absolute():
            raise p.RpcError(p.INVALID_PARAMS, f"cwd: {cwd} is not an absolute path")
        # One stat, on the loop (delegation resolves the same path there next): a hop to
        # the default executor waits behind whatever git work fills it, up to tens of ms.
        if not root.is_dir():
            raise p.RpcError(p.INVALID_PARAMS, f"cwd: {cwd} is not a folder")
        worker = p.opt_text(params, "worker", 200)
        if worker is not None:
            self._check_worker(worker, str(root))
        p.choice(params, "isolation", ISOLATION, "worktree")
        level = p.choice(params, "effort", LEVELS, "")  # where the worker's CLI has one
        return DelegateRequest(
            instruction=instruction,
            root=str(root),
            action=p.choice(params, "action", ACTIONS, "delegate"),
            kind=p.opt_text(params, "kind", 100),
            targets=targets_of(params.get("targets")),
            scope=p.texts(params, "scope") or [],
            worker=worker,
            model=p.opt_text(params, "model", 200),
            title=p.opt_text(params, "title", 500),
            group=p.opt_text(params, "group", 200),
            depends_on=p.texts(params, "dependsOn") or [],
            options={**caps.options_of(params), **({"effort": level} if level else {})},
        )

    def _check_worker(self, worker: str, root: str) -> None:
        """A worker the broker or the project's config defines, or INVALID_PARAMS."""
        profiles = self.sup.profiles_for(root)
        if worker not in profiles:
            try:  # a project file that is refused says so, not "unknown worker"
                self.sup.settings.get(root)
            except ConfigError as exc:
                raise p.RpcError(p.INVALID_PARAMS, f"Baton's settings: {exc}") from None
            known = ", ".join(sorted(profiles)) or "none"
            raise p.RpcError(
                p.INVALID_PARAMS, f"unknown worker {worker!r}; configured workers: {known}"
            )

    async def tasks(self, params: dict[str, Any]) -> dict[str, Any]:
        """Tasks newest first, each as a line with its title (``full``: whole records);
        archived ones are left out, or with ``archived`` the only ones listed."""
        p.known(
            params, "state", "text", "since", "worker", "group", "root", "limit", "full",
            "archived",
        )  # fmt: skip
        states = p.texts(params, "state", limit=len(_STATES))
        for s in states or []:
            if s not in _STATES:
                raise p.RpcError(p.INVALID_PARAMS, f"state: {s!r} is not one of {_STATES}")
        text = p.opt_text(params, "text")
        found = await self.sup.list_tasks(
            states=states,
            query=text,
            since=p.number(params, "since"),
            worker=p.opt_text(params, "worker", 200),
            group=p.opt_text(params, "group", 200),
            root=p.opt_text(params, "root"),
            archived=p.flag(params, "archived"),
            limit=p.integer(params, "limit", lo=1, hi=1000) or 50,
        )
        if p.flag(params, "full"):
            return {"tasks": [views.task_json(t) for t in found]}
        return {"tasks": [answers.line(t, title=True, extra=answers.spent(t)) for t in found]}

    async def get(self, params: dict[str, Any]) -> dict[str, Any]:
        p.known(params, "id")
        task = await self.sup.get(_id(params))
        return {"task": views.task_json(task)}

    async def inspect(self, params: dict[str, Any]) -> dict[str, Any]:
        """State, completion, summary line, counts, next; ``detail`` adds whole sections."""
        p.known(params, "id", "detail", "events")
        task = await self.sup.get(_id(params))
        detail = p.texts(params, "detail", limit=len(answers.DETAILS) + 1) or []
        for d in detail:
            if d != "all" and d not in answers.DETAILS:
                raise p.RpcError(
                    p.INVALID_PARAMS,
                    f"detail: {d!r} is not one of: all, {', '.join(answers.DETAILS)}",
                )
        wanted = set(answers.DETAILS) if "all" in detail else set(detail)
        last = p.integer(params, "events", lo=0, hi=10_000_000)
        attempts = await self.sup.attempts(task.id)
        files, final = await self.sup.diff(task.id)
        # Permission requests are read from every event of the task: only when one can wait.
        asking = task.state == TaskState.NEEDS_INPUT
        permissions = await self.sup.permissions(task.id) if asking else []
        out = answers.short(task, attempts, files, final, permissions)
        if wanted:
            events = await self.sup.events(task.id) if "events" in wanted else []
            n = INSPECT_EVENTS if last is None else last
            keep = events[-n:] if n else []
            sections = answers.details(wanted, task, attempts, keep)
            if "events" in wanted:
                sections["eventCount"] = len(events)
            out["detail"] = sections
        return out

    async def events(self, params: dict[str, Any]) -> dict[str, Any]:
        p.known(params, "id", "after", "limit")
        task = await self.sup.get(_id(params))
        after = p.integer(params, "after", lo=0) or 0
        limit = p.integer(params, "limit", lo=1, hi=EVENTS_PAGE) or EVENTS_PAGE
        events = await self.sup.events(task.id, after, limit + 1)
        page: list[dict[str, Any]] = []
        size = 0
        for e in events[:limit]:
            body = views.event_json(e)
            size += len(json.dumps(body, default=str))
            if page and size > EVENTS_PAGE_BYTES:
                break
            page.append(body)
        return {"task": answers.line(task), "events": page, "more": len(page) < len(events)}

    async def diff(self, params: dict[str, Any]) -> dict[str, Any]:
        """The diff with its hunks; ``format: "text"`` as unified text, paged by ``offset``."""
        p.known(params, "id", "format", "offset")
        task = await self.sup.get(_id(params))
        shape = p.choice(params, "format", ("json", "text"), "json")
        offset = p.integer(params, "offset", lo=0) or 0
        files, final = await self.sup.diff(task.id)
        if shape == "text":
            return {"text": answers.diff_text(task, files, final, offset)}
        notes = await self.sup.diff_notes(task.id, files)
        return {"task": answers.line(task), **views.diff_json(files, final), **notes}

    async def wait(self, params: dict[str, Any]) -> dict[str, Any]:
        """Block until the first of ``ids`` settles (or, while waiting, hits a rate limit);
        answer with that task's line, or ``{timeout, tasks}`` when ``timeout`` passes first."""
        p.known(params, "ids", "timeout")
        ids = p.texts(params, "ids", limit=100)
        if not ids:
            raise p.RpcError(p.INVALID_PARAMS, "ids: required (one or more task ids)")
        timeout = p.number(params, "timeout", lo=0, hi=WAIT_MAX)
        timeout = WAIT_DEFAULT if timeout is None else timeout
        tasks = [(await self.sup.get(_one(i))).id for i in ids]
        return await waiting.wait(self.sup, list(dict.fromkeys(tasks)), timeout)

    async def accept(self, params: dict[str, Any]) -> dict[str, Any]:
        """Applied hunks; ``conflicts`` and ``refused`` only when there are some. A hunk that
        writes a secret value is refused unless ``allowSecret`` is true."""
        p.known(params, "id", "hunks", "allowSecret")
        tid = _id(params)
        accepting = self.sup.accept(
            tid, p.texts(params, "hunks") or None, allow_secret=p.flag(params, "allowSecret")
        )
        result = await self._moved(accepting, tid)
        task = await self.sup.get(tid)
        return answers.lean(
            {
                "task": answers.line(task),
                "applied": result.applied,
                "conflicts": [{"hunk": h, "reason": r} for h, r in result.conflicts],
                "refused": [{"hunk": h, "reason": r} for h, r in result.refused],
            }
        )

    async def reject(self, params: dict[str, Any]) -> dict[str, Any]:
        p.known(params, "id", "hunks")
        tid = _id(params)
        rejected = await self._moved(self.sup.reject(tid, p.texts(params, "hunks") or None), tid)
        task = await self.sup.get(tid)
        return {"task": answers.line(task), "rejected": rejected}

    async def reopen(self, params: dict[str, Any]) -> dict[str, Any]:
        """Accepted hunks whose place in the file holds their old lines again (the user
        undid them) are pending again; the others are ``kept``, with why."""
        p.known(params, "id", "hunks")
        tid = _id(params)
        hunks = p.texts(params, "hunks")
        if not hunks:
            raise p.RpcError(p.INVALID_PARAMS, "hunks: required (the hunk ids to reopen)")
        done = await self._moved(self.sup.reopen(tid, hunks), tid)
        task = await self.sup.get(tid)
        return {
            "task": answers.line(task),
            "reopened": done.decided,
            "kept": [{"hunk": h, "reason": r} for h, r in done.kept],
        }

    async def reply(self, params: dict[str, Any]) -> dict[str, Any]:
        p.known(params, "id", "text")
        tid, text = _id(params), p.nonempty(params, "text")
        task = await self._moved(self.sup.reply(tid, text), tid)
        return {"task": answers.line(task)}

    async def revise(self, params: dict[str, Any]) -> dict[str, Any]:
        """Comments (``[{path, start, end, text, hunkId?}]``) and reasons of rejected hunks
        (``[{hunkId, reason}]``) on a task in review, as its next turn."""
        p.known(params, "id", "comments", "rejections")
        tid = _id(params)
        try:
            comments = revision.comments_from_json(params.get("comments"))
            rejections = revision.rejections_from_json(params.get("rejections"))
        except ValueError as exc:
            raise p.RpcError(p.INVALID_PARAMS, str(exc)) from None
        task = await self._moved(self.sup.revise(tid, comments, rejections), tid)
        return {"task": answers.line(task)}

    async def checkpoints(self, params: dict[str, Any]) -> dict[str, Any]:
        """The kept results of a revised task's turns: ``[{turn, commit, shown}]``."""
        p.known(params, "id")
        tid = _id(params)
        return {"turns": await self._moved(self.sup.checkpoints(tid), tid)}

    async def step_back(self, params: dict[str, Any]) -> dict[str, Any]:
        """Show an earlier turn's kept result as the diff of a task in review."""
        p.known(params, "id", "turn")
        tid, turn = _id(params), p.integer(params, "turn", lo=1, hi=10_000)
        if turn is None:
            raise p.RpcError(p.INVALID_PARAMS, "turn: required (see checkpoints)")
        task = await self._moved(self.sup.step_back(tid, turn), tid)
        return {"task": answers.line(task)}

    async def steer(self, params: dict[str, Any]) -> dict[str, Any]:
        p.known(params, "id", "text")
        tid, text = _id(params), p.nonempty(params, "text")
        task = await self._moved(self.sup.steer(tid, text), tid)
        return {"task": answers.line(task)}

    async def answer(self, params: dict[str, Any]) -> dict[str, Any]:
        """Answer an ACP agent's permission request (``option``: id, kind or allow/reject)."""
        p.known(params, "id", "option", "permission")
        tid, option = _id(params), p.nonempty(params, "option")
        answered = await self._moved(
            self.sup.answer(tid, option, p.opt_text(params, "permission")), tid
        )
        return {"answered": answered}

    async def retry(self, params: dict[str, Any]) -> dict[str, Any]:
        p.known(params, "id", "maxTokens", "maxCost", "maxSteps", "maxSeconds")
        tid = _id(params)
        task = await self._moved(self.sup.retry(tid, caps.caps_of(params)), tid)
        return {"task": answers.line(task)}

    async def cancel(self, params: dict[str, Any]) -> dict[str, Any]:
        """Cancel; rides out the moment between "running" and the agent's process existing."""
        p.known(params, "id")
        tid = _id(params)
        deadline = time.monotonic() + 2.0
        while True:
            try:
                task = await self._moved(self.sup.cancel(tid), tid)
                break
            except p.RpcError as err:
                state = (err.data or {}).get("state")
                gap = (
                    err.code == p.WRONG_STATE
                    and state in ("running", "preparing")
                    and "brokerPid" not in (err.data or {})
                )
                if not gap or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)
        return {"task": answers.line(task)}

    async def _moved(self, move: Awaitable[Any], task_id: str | None = None) -> Any:
        """Await a move; a refusal becomes WRONG_STATE naming the moves that make sense."""
        try:
            return await move
        except TaskError as exc:
            data: dict[str, Any] = {}
            if task_id is not None:
                try:
                    task = await self.sup.get(task_id)
                except NotFound:
                    raise
                data = {"id": task.id, "state": str(task.state), "next": next_moves(task)}
                owner = await self.sup.owner_of(task.id)
                if owner and owner != self.sup.id and broker_alive(owner):
                    data["brokerPid"] = int(owner.split(":", 1)[0])
            message = str(exc)
            if data.get("next"):
                message += f" (next: {', '.join(data['next'])})"
            raise p.RpcError(p.WRONG_STATE, message, data or None) from None

    # ------------------------------------------------------------------ the rest

    async def memory(self, params: dict[str, Any]) -> dict[str, Any]:
        """Durable project facts that go into every brief for that folder."""
        p.known(params, "op", "root", "text", "id")
        op = p.choice(params, "op", ("list", "add", "remove"), "list")
        root_text = p.opt_text(params, "root") or (self.roots[0] if self.roots else None)
        if root_text is None:
            raise p.RpcError(p.INVALID_PARAMS, "root: required (this broker serves no folder)")
        root = str(Path(root_text).expanduser().resolve())
        add = p.nonempty(params, "text", limit=4000) if op == "add" else None
        remove = None
        if op == "remove":
            remove = p.integer(params, "id", lo=1)
            if remove is None:
                raise p.RpcError(p.INVALID_PARAMS, "id: required to remove a memory")
        try:
            items = await self.sup.memory(root, add=add, remove=remove)
        except TaskError:
            raise p.RpcError(p.INVALID_PARAMS, f"id: no memory {remove}") from None
        return {"root": root, "memory": [{"id": i, "text": t} for i, t in items]}

    async def workers(self, params: dict[str, Any]) -> dict[str, Any]:
        """The workers a task in ``root`` (default: the first served folder) may use
        (:func:`baton.surfaces.workers.workers_answer`)."""
        p.known(params, "root")
        root_text = p.opt_text(params, "root") or (self.roots[0] if self.roots else None)
        root = Path(root_text).expanduser().resolve() if root_text else None
        try:
            return await workers_answer(self.sup, root)
        except ConfigError as exc:
            raise p.RpcError(p.INVALID_PARAMS, f"Baton's settings: {exc}") from None

    async def health(self, params: dict[str, Any]) -> dict[str, Any]:
        p.known(params)
        counts = await self.sup.count_by_state()
        return {
            "ok": True,
            "version": __version__,
            "pid": os.getpid(),
            "broker": self.sup.id,
            "uptime": round(time.time() - self.started, 3),
            "roots": self.roots,
            "tasks": counts,
            **self._info(),
        }


def _id(params: dict[str, Any]) -> str:
    return p.nonempty(params, "id", limit=200).strip()


def _one(task_id: str) -> str:
    if not task_id.strip():
        raise p.RpcError(p.INVALID_PARAMS, "ids: must not hold an empty id")
    return task_id.strip()
