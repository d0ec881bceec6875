"""Task ids: short, sortable by creation time, and named by a unique prefix.

Standard library only (os, time): the CLI builds its help from :data:`MIN_PREFIX` at start.
"""

from __future__ import annotations

import os
import time

_ALPHABET = "0123456789abcdefghjkmnpqrstvwxyz"  # Crockford base32, lower case

#: The shortest prefix of a task id that names it (the store resolves it to the whole id).
MIN_PREFIX = 4


def new_task_id(now: float | None = None) -> str:
    """A short id that sorts by creation time: 7 characters of milliseconds, 4 random."""
    ms = int((time.time() if now is None else now) * 1000)
    head = ""
    for _ in range(9):
        head = _ALPHABET[ms & 31] + head
        ms >>= 5
    rnd = int.from_bytes(os.urandom(3), "big")
    tail = ""
    for _ in range(4):
        tail += _ALPHABET[rnd & 31]
        rnd >>= 5
    return head[-7:] + tail
