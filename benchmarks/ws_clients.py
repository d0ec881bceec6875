"""The subscribers of ``ws_fanout.py``: processes of websocket clients watching a server
(Baton's broker or the bare one), each recording when every event it was sent arrives.

A subscriber is a minimal RFC 6455 client (:class:`LeanClient`) or the websockets
library's; :func:`subscribe` starts the processes (spawned, each running many subscribers
in one event loop) and :func:`collect` stops them and gathers what they received. Not a
benchmark of its own (``all.py`` does not run it).
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import multiprocessing as mp
import os
import time
from typing import Any

from websockets.asyncio.client import connect


class LeanClient(asyncio.Protocol):
    """A minimal websocket client (RFC 6455): handshake, masked frames out, unmasked in.

    The measuring instrument: a subscriber should cost about as little CPU as an editor's
    native websocket client, so that 50 of them sharing the broker's two cores measure the
    broker's fan-out rather than the Python websockets library's per-frame cost (measure
    that with `--client websockets`). Frames are timed when their bytes arrive.
    """

    def __init__(self, on_text: Any) -> None:
        self.on_text = on_text
        self.buf = bytearray()
        self.upgraded = False
        loop = asyncio.get_running_loop()
        self.ready: asyncio.Future[None] = loop.create_future()
        self.lost: asyncio.Future[None] = loop.create_future()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        now = time.time()
        buf = self.buf
        buf += data
        if not self.upgraded:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            status = bytes(buf[: buf.find(b"\r\n")])
            del buf[: end + 4]
            if b" 101 " not in status:
                self.ready.set_exception(ConnectionError(status.decode()))
                return
            self.upgraded = True
            self.ready.set_result(None)
        while len(buf) >= 2:
            n, pos = buf[1] & 0x7F, 2
            if n >= 126:
                pos = 4 if n == 126 else 10
                if len(buf) < pos:
                    return
                n = int.from_bytes(buf[2:pos], "big")
            if len(buf) < pos + n:
                return
            op, payload = buf[0] & 0x0F, bytes(buf[pos : pos + n])
            del buf[: pos + n]
            if op == 0x1:
                self.on_text(now, payload)
            elif op == 0x9:
                self.send(0xA, payload)  # pong
            elif op == 0x8:
                assert self.transport is not None
                self.transport.close()

    def send(self, op: int, payload: bytes) -> None:
        assert self.transport is not None
        n, key = len(payload), os.urandom(4)
        head = (
            bytes((0x80 | op, 0x80 | n))
            if n < 126
            else bytes((0x80 | op, 0xFE)) + n.to_bytes(2, "big")
        )
        self.transport.write(head + key + bytes(b ^ key[i % 4] for i, b in enumerate(payload)))

    def connection_lost(self, exc: Exception | None) -> None:
        if not self.lost.done():
            self.lost.set_result(None)


async def lean_subscriber(url: str, token: str, on_text: Any, ready: Any, done: Any) -> None:
    host, port = url.removeprefix("ws://").split(":")
    loop = asyncio.get_running_loop()
    first: asyncio.Future[None] = loop.create_future()

    def handle(now: float, payload: bytes) -> None:
        if not first.done():
            first.set_result(None)  # the answer to watch
        else:
            on_text(now, payload)

    _, proto = await loop.create_connection(lambda: LeanClient(handle), host, int(port))
    assert proto.transport is not None
    key = base64.b64encode(os.urandom(16)).decode()
    proto.transport.write(
        (
            f"GET / HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer {token}\r\n\r\n"
        ).encode()
    )
    await proto.ready
    proto.send(0x1, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "watch"}).encode())
    await first
    ready.release()
    await asyncio.to_thread(done.wait)
    proto.send(0x8, (1000).to_bytes(2, "big"))
    await asyncio.wait_for(proto.lost, 5)


async def websockets_subscriber(url: str, token: str, on_text: Any, ready: Any, done: Any) -> None:
    headers = {"Authorization": f"Bearer {token}"}
    async with connect(url, additional_headers=headers, max_size=None) as ws:
        await ws.send(json.dumps({"jsonrpc": "2.0", "id": 1, "method": "watch"}))
        await ws.recv()
        ready.release()

        async def close_when_done() -> None:
            await asyncio.to_thread(done.wait)
            await ws.close()

        closer = asyncio.create_task(close_when_done())
        async for frame in ws:
            on_text(time.time(), frame)
        await closer


async def _subscribers(
    url: str, token: str, n: int, ready: Any, done: Any, out: Any, dump: bool, lean: bool
) -> None:
    results: list[dict[str, Any]] = []

    async def one() -> None:
        latencies: list[tuple[float, float]] = []  # (commit stamp, ms until received)
        samples: list[tuple[float, float, str, int]] = []
        seqs: dict[str, list[int]] = {}

        def on_text(now: float, frame: str | bytes) -> None:
            msg = json.loads(frame)
            params = msg.get("params") or {}
            if msg.get("method") == "event":
                events = [params["event"]]
            elif msg.get("method") == "events":
                events = params["events"]
            else:
                return
            for e in events:
                latencies.append((e["ts"], (now - e["ts"]) * 1000))
                if dump:
                    samples.append((e["ts"], (now - e["ts"]) * 1000, e["type"], len(events)))
                seqs.setdefault(e["taskId"], []).append(e["seq"])

        run = lean_subscriber if lean else websockets_subscriber
        await run(url, token, on_text, ready, done)
        results.append({"latencies": latencies, "seqs": seqs, "samples": samples})

    await asyncio.gather(*(one() for _ in range(n)))
    out.put(results)


def subscriber_proc(
    url: str, token: str, n: int, ready: Any, done: Any, out: Any, dump: bool, lean: bool
) -> None:
    asyncio.run(_subscribers(url, token, n, ready, done, out, dump, lean))


async def rpc(url: str, token: str, calls: list[tuple[str, dict[str, Any]]]) -> list[Any]:
    async with connect(url, additional_headers={"Authorization": f"Bearer {token}"}) as ws:
        out = []
        for i, (method, params) in enumerate(calls, 1):
            await ws.send(
                json.dumps({"jsonrpc": "2.0", "id": i, "method": method, "params": params})
            )
            msg = json.loads(await ws.recv())
            out.append(msg.get("result", msg.get("error")))
        return out


def subscribe(
    args: argparse.Namespace, url: str, token: str, dump: bool = False
) -> tuple[list[Any], Any, Any]:
    """The subscriber processes, each watching; returns them, their stop event and queue."""
    ctx = mp.get_context("spawn")
    ready, done, out = ctx.Semaphore(0), ctx.Event(), ctx.Queue()
    per = [
        args.subscribers // args.procs + (i < args.subscribers % args.procs)
        for i in range(args.procs)
    ]
    procs = [
        ctx.Process(
            target=subscriber_proc,
            args=(url, token, n, ready, done, out, dump, args.client == "lean"),
        )
        for n in per
        if n
    ]
    for p in procs:
        p.start()
    for _ in range(args.subscribers):
        ready.acquire(timeout=60)
    return procs, done, out


def collect(procs: list[Any], done: Any, out: Any) -> list[dict[str, Any]]:
    """Stop the subscriber processes; what each subscriber received."""
    done.set()
    results = [r for _ in procs for r in out.get(timeout=60)]
    for p in procs:
        p.join(10)
    return results
