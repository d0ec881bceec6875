"""A connection's subscriptions: ``watch`` (alias ``subscribe``) and ``unsubscribe``.

A subscription to chosen tasks replays their stored events first, then live ones, with
nothing lost or repeated in between (:class:`~baton.surfaces.ws.fanout.Watch` holds live
events back while the stored ones are sent).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import baton.surfaces.ws.protocol as p
from baton.core.events import Event
from baton.surfaces.ws.fanout import Conn, Fanout, Watch

if TYPE_CHECKING:
    from baton.runtime import Supervisor

#: What a handler returns when it answered the request itself.
SENT = object()


async def watch(
    conn: Conn,
    req: p.Request,
    *,
    sup: Supervisor,
    fanout: Fanout,
    max_subscriptions: int,
    send: Callable[[Conn, str], Awaitable[None]],
) -> object:
    """Subscribe to chosen tasks (``ids``) or all; pushes ``event`` notifications.

    With ``replay`` (the default when ids are given) the stored events of those tasks
    come first, then live ones, with nothing lost or repeated in between: the
    subscription holds live events back from before the stored ones are read until
    they have been sent, then drops what the replay already covered.
    """
    import baton.surfaces.ws.answers as answers  # not at import: the broker listens first

    params = req.params
    p.known(params, "ids", "replay")
    ids = p.texts(params, "ids", limit=1000)
    replay = p.flag(params, "replay", default=ids is not None)
    if len(conn.subs) >= max_subscriptions:
        raise p.RpcError(p.BUSY, f"at most {max_subscriptions} subscriptions")
    tasks = [await sup.get(i) for i in ids] if ids is not None else []
    conn.next_sub += 1
    watch = Watch(conn.next_sub, frozenset(t.id for t in tasks) if ids is not None else None)
    conn.subs[watch.sid] = watch
    seen: dict[str, int] = {}
    try:
        backlog: list[Event] = []
        if replay:
            fresh = []
            for t in tasks:
                stored = await sup.events(t.id)
                backlog.extend(stored)
                seen[t.id] = stored[-1].seq if stored else 0
                fresh.append(await sup.get(t.id))
            tasks = fresh
        result = {
            "subscription": watch.sid,
            "tasks": [answers.line(t) for t in tasks],
            "replayed": seen,
        }
        if req.id is not None:
            await send(conn, p.response(req.id, result))
        for chunk in fanout.chunks(backlog):
            await send(conn, fanout.note(watch.sid, chunk))
    except BaseException:
        conn.subs.pop(watch.sid, None)
        raise
    held = [e for e in watch.held or () if e.seq > seen.get(e.task_id, 0)]
    watch.held = None
    if held and conn.subs.get(watch.sid) is watch:
        fanout.push(conn, watch, fanout.frames(watch.sid, held))
    return SENT


def unsubscribe(conn: Conn, params: dict[str, Any]) -> dict[str, Any]:
    p.known(params, "subscription")
    sid = p.integer(params, "subscription", lo=1)
    if conn.subs.pop(sid or 0, None) is None:
        raise p.RpcError(p.INVALID_PARAMS, f"subscription: no subscription {sid}")
    return {"ok": True}
