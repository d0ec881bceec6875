"""The server's JSON-RPC protocol: pygls', answering more requests and sooner.

* A request whose params cannot be read is answered with ``InvalidParams`` (pygls would log
  it and drop it, leaving the client waiting forever); Baton's own requests are checked
  strictly first (``payloads.RAW_CHECKS``).
* A plain (not ``async``) request handler is answered in the callback that read the request;
  one that must wait this time returns :func:`answer_later`.
* An ``async def`` handler's task starts at once (on the server's loop, see
  :meth:`.stdio.RequestsFirstLoop.start_first`) and its answer goes out from its last step,
  not one more turn of the loop later.

With the broker in the same process every turn of the event loop waits behind its work, so
each one a round trip is spared counts (see :mod:`.stdio`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from concurrent.futures import Future
from dataclasses import dataclass
from functools import partial
from typing import Any

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.protocol import LanguageServerProtocol

from baton.surfaces.lsp.payloads import check_request
from baton.surfaces.lsp.stdio import start_first


@dataclass(frozen=True, slots=True)
class _Malformed:
    """A request whose params could not be read: answered with InvalidParams."""

    id: int | str
    method: str
    message: str
    jsonrpc: str = "2.0"


@dataclass(frozen=True, slots=True)
class _Later:
    coro: Coroutine[Any, Any, Any]


def answer_later(coro: Coroutine[Any, Any, Any]) -> Any:
    """What a plain (not ``async``) request handler returns when, this time, its answer
    needs awaiting: the answer is ``coro``'s result (see ``BatonProtocol``)."""
    return _Later(coro)


def _is_request(data: object) -> bool:
    return (
        isinstance(data, dict)
        and "jsonrpc" in data
        and "id" in data
        and isinstance(data.get("method"), str)
    )


class BatonProtocol(LanguageServerProtocol):
    """pygls' protocol, plus an error response for requests with malformed params.

    The requests Baton serves are checked strictly first (see ``payloads.RAW_CHECKS``);
    any other request pygls cannot read is answered too (pygls would log it and drop it,
    leaving the client waiting forever).
    """

    def structure_message(self, data: dict[str, Any]) -> Any:
        if _is_request(data):
            problem = check_request(data["method"], data.get("params"))
            if problem is not None:
                return _Malformed(data["id"], data["method"], f"{data['method']}: {problem}")
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if _is_request(data):
                cause = exc.__cause__ or exc
                message = f"invalid params for {data['method']}: {cause}".splitlines()[0]
                return _Malformed(data["id"], data["method"], message[:300])
            raise

    def handle_message(self, message: Any) -> None:
        if isinstance(message, _Malformed):
            self._send_response(
                message.id, error=JsonRpcInvalidParams(message.message).to_response_error()
            )
            return
        super().handle_message(message)

    def _execute_handler(
        self,
        msg_id: Any,
        handler: Any,
        callback: Any,
        args: tuple[Any, ...] | None = None,
        kwargs: dict[str, Any] | None = None,
    ) -> None:
        """As pygls does, but an ``async def`` handler's answer goes out from the task's
        last step itself, not from a done-callback one more turn of the loop later (a
        task cancelled before it ran is still answered, by that callback)."""
        if not asyncio.iscoroutinefunction(handler):
            super()._execute_handler(msg_id, handler, callback, args, kwargs)
            return
        answered = False

        async def run() -> None:
            nonlocal answered
            done: Future[Any] = Future()
            try:
                done.set_result(await handler(*(args or ()), **(kwargs or {})))
            except Exception as exc:
                done.set_exception(exc)
            answered = True
            callback(done)

        def if_cancelled(task: asyncio.Task[None]) -> None:
            if not answered and task.cancelled():
                callback(task)

        task = asyncio.ensure_future(run())
        start_first(task)  # the handler starts now, not after the broker's queued work
        self._request_futures[msg_id] = task  # type: ignore[assignment]  # cancellable
        task.add_done_callback(if_cancelled)

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        """Send a handler's answer; a plain handler that returned an awaitable (it has to
        wait this time, see :func:`answer_later`) is answered when that is done. A plain
        handler's answer goes out in the callback that read the request, not after two
        more turns of the loop as an ``async def`` handler's does."""
        if not future.cancelled() and future.exception() is None:
            result = future.result()
            if isinstance(result, _Later):
                task = asyncio.ensure_future(result.coro)
                start_first(task)
                self._request_futures[msg_id] = task  # type: ignore[assignment]  # cancellable
                task.add_done_callback(partial(self._send_handler_result, msg_id=msg_id))
                return
        super()._send_handler_result(future, msg_id=msg_id)
