"""A blocking client of the broker's websocket, on the standard library alone.

For the commands that send one request and print its answer (``baton delegate``, ``accept``,
``reject`` …): importing asyncio and the websockets library costs more than the whole round
trip to a running broker, and a lead agent pays it on every ``baton delegate`` of a fan-out.
This client speaks just the part of RFC 6455 such a command needs, to the broker's loopback
port only: the opening handshake (its ``Sec-WebSocket-Accept`` checked, the token in the
``Authorization`` header, no ``Origin``, no extension), masked text frames out, text frames in
(fragments joined, pings answered), and a close. Commands that follow a task's events use the
asyncio client (:mod:`baton.surfaces.ws.client`).
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct
from pathlib import Path
from types import TracebackType
from typing import Any

from baton.surfaces.ws.discovery import Discovery
from baton.surfaces.ws.errors import BrokerError, BrokerUnavailable
from baton.surfaces.ws.frames import BINARY, CLOSE, CONT, PING, PONG, TEXT, frame, masked
from baton.surfaces.ws.locate import any_broker_for, ensure_broker

#: RFC 6455 §1.3: the server's key is SHA-1 of the client's key with this suffix, base64.
_ACCEPT_SUFFIX = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
#: The longest answer head the handshake reads before giving up.
_MAX_HEAD = 64 * 1024


def accept_key(key: bytes) -> bytes:
    """The ``Sec-WebSocket-Accept`` a server must answer to ``Sec-WebSocket-Key: key``."""
    try:  # CPython's own SHA-1: hashlib loads OpenSSL, which costs more than the round trip
        from _sha1 import sha1  # type: ignore[import-not-found,unused-ignore]
    except ImportError:  # pragma: no cover - another Python
        from hashlib import sha1
    return base64.b64encode(sha1(key + _ACCEPT_SUFFIX).digest())


class BlockingClient:
    """One authenticated connection that sends requests and reads their answers in turn."""

    def __init__(self, sock: socket.socket, info: Discovery, rest: bytes = b"") -> None:
        self.sock = sock
        self.info = info
        self._buf = bytearray(rest)
        self._ids = 0
        self._closed = False

    @classmethod
    def connect(cls, info: Discovery, *, timeout: float = 10.0) -> BlockingClient:
        try:
            sock = socket.create_connection(("127.0.0.1", info.port), timeout=timeout)
        except OSError as exc:
            raise BrokerUnavailable(f"cannot reach the broker at {info.url}: {exc}") from exc
        try:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            rest = _handshake(sock, info)
        except BrokerUnavailable:
            sock.close()
            raise
        except OSError as exc:
            sock.close()
            raise BrokerUnavailable(f"cannot reach the broker at {info.url}: {exc}") from exc
        sock.settimeout(None)  # an accept of many files may take long: the broker answers
        return cls(sock, info, rest)

    def call(self, method: str, **params: Any) -> Any:
        """Send one request and wait for its answer; notifications met meanwhile are dropped
        (a one-request command subscribes to nothing)."""
        self._ids += 1
        request = {"jsonrpc": "2.0", "id": self._ids, "method": method, "params": params}
        self._send(TEXT, json.dumps(request).encode("utf-8"))
        while True:
            msg = json.loads(self._message())
            if not isinstance(msg, dict) or msg.get("id") != self._ids:
                continue
            if "error" in msg:
                err = msg["error"] or {}
                raise BrokerError(
                    int(err.get("code", 0)), str(err.get("message", "")), err.get("data")
                )
            return msg.get("result")

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            self._send(CLOSE, struct.pack("!H", 1000))
            self.sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass
        finally:
            self.sock.close()

    def __enter__(self) -> BlockingClient:
        return self

    def __exit__(
        self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -------------------------------------------------------------------------- frames

    def _send(self, opcode: int, payload: bytes) -> None:
        try:
            self.sock.sendall(frame(opcode, payload))
        except OSError as exc:
            raise BrokerUnavailable(f"the connection to the broker broke: {exc}") from exc

    def _read(self, n: int) -> bytes:
        while len(self._buf) < n:
            try:
                chunk = self.sock.recv(max(65536, n - len(self._buf)))
            except OSError as exc:
                raise BrokerUnavailable(f"the connection to the broker broke: {exc}") from exc
            if not chunk:
                raise BrokerUnavailable("the broker closed the connection without an answer")
            self._buf += chunk
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    def _message(self) -> bytes:
        """The next whole text message (fragments joined); pings answered on the way."""
        parts: list[bytes] = []
        while True:
            b0, b1 = self._read(2)
            fin, opcode, n = b0 & 0x80, b0 & 0x0F, b1 & 0x7F
            if n == 126:
                (n,) = struct.unpack("!H", self._read(2))
            elif n == 127:
                (n,) = struct.unpack("!Q", self._read(8))
            mask = self._read(4) if b1 & 0x80 else b""
            payload = self._read(n)
            if mask:
                payload = masked(payload, mask)
            if opcode == PING:
                self._send(PONG, payload)
            elif opcode == CLOSE:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                why = payload[2:].decode("utf-8", "replace")
                raise BrokerUnavailable(
                    f"the broker closed the connection ({code}{': ' + why if why else ''})"
                )
            elif opcode in (TEXT, BINARY, CONT):
                parts.append(payload)
                if fin:
                    return b"".join(parts)


def _handshake(sock: socket.socket, info: Discovery) -> bytes:
    """Upgrade the connection; returns the bytes read past the answer's head."""
    key = base64.b64encode(os.urandom(16))
    request = (
        f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{info.port}\r\nUpgrade: websocket\r\n"
        f"Connection: Upgrade\r\nSec-WebSocket-Key: {key.decode()}\r\n"
        f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer {info.token}\r\n\r\n"
    )
    sock.sendall(request.encode("ascii"))
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk or len(data) > _MAX_HEAD:
            raise BrokerUnavailable(f"the broker at {info.url} gave no websocket upgrade")
        data += chunk
    head, _, rest = data.partition(b"\r\n\r\n")
    status, *lines = head.decode("latin-1").split("\r\n")
    headers = {k.strip().lower(): v.strip() for k, _, v in (h.partition(":") for h in lines)}
    parts = status.split(" ", 2)
    if len(parts) < 2 or parts[1] != "101":
        said = rest.decode("utf-8", "replace").strip()
        raise BrokerUnavailable(
            f"the broker at {info.url} refused the connection: {status}"
            + (f" ({said})" if said else "")
        )
    if headers.get("sec-websocket-accept", "").encode() != accept_key(key):
        raise BrokerUnavailable(f"the broker at {info.url} answered a wrong websocket key")
    return rest


def connect_for(
    folder: Path, *, start: bool = True, any_broker: bool = False, timeout: float = 20.0
) -> BlockingClient:
    """A blocking client of the broker serving ``folder``; starts one on demand when none
    does (see :func:`baton.surfaces.ws.client.connect_for`)."""
    folder = folder.resolve()
    found = any_broker_for(folder, any_broker=any_broker)
    if found is not None:
        try:
            return BlockingClient.connect(found)
        except BrokerUnavailable:
            pass
    if not start:
        raise BrokerUnavailable(f"no broker serves {folder}; start one with: baton serve")
    return BlockingClient.connect(ensure_broker(folder, timeout))
