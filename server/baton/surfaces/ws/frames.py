"""Websocket frames (RFC 6455 §5.2) as bytes, for the writers that put them on the wire
themselves: the endpoint's fan-out (unmasked, as a server sends them) and the blocking
client (masked, as a client must)."""

from __future__ import annotations

import os
import struct

#: The opcodes (RFC 6455 §5.2).
CONT, TEXT, BINARY, CLOSE, PING, PONG = 0x0, 0x1, 0x2, 0x8, 0x9, 0xA


def frame(opcode: int, payload: bytes, mask: bytes | None = None) -> bytes:
    """One final frame; masked with ``mask`` (a random one when None), or unmasked when
    ``mask`` is ``b""``."""
    n = len(payload)
    bit = 0 if mask == b"" else 0x80
    head = bytes([0x80 | opcode])
    if n < 126:
        head += bytes([bit | n])
    elif n < 1 << 16:
        head += bytes([bit | 126]) + struct.pack("!H", n)
    else:
        head += bytes([bit | 127]) + struct.pack("!Q", n)
    if mask == b"":
        return head + payload
    mask = mask if mask is not None else os.urandom(4)
    return head + mask + masked(payload, mask)


def masked(payload: bytes, mask: bytes) -> bytes:
    """``payload`` XOR-ed with the 4-byte ``mask`` repeated (masking and unmasking alike)."""
    n = len(payload)
    if not n:
        return b""
    key = (mask * (n // 4 + 1))[:n]
    return (int.from_bytes(payload, "big") ^ int.from_bytes(key, "big")).to_bytes(n, "big")


def text_frame(payload: bytes) -> bytes:
    """A final, unmasked text frame, as a server sends it."""
    return frame(TEXT, payload, b"")
