"""A line diff that scales with the size of the change, not of the file.

:func:`opcodes` gives the same shape as :meth:`difflib.SequenceMatcher.get_opcodes` — a
list of ``(tag, i1, i2, j1, j2)`` with tags ``equal``, ``replace``, ``delete``, ``insert``
covering both sequences — computed with Myers' O((N + M)·D) greedy algorithm after the
common head and tail are set aside. Three changed lines in a 20,000-line file of repetitive
text (blank and brace lines) take milliseconds where ``SequenceMatcher(autojunk=False)``
took seconds. A change larger than ``limit`` edits is reported as one replacement of the
region between the common head and tail (still exact: applying it gives the new text).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence

Op = tuple[str, int, int, int, int]

#: Edits beyond which the middle of a change is one replacement (bounds the time: ~D²).
LIMIT = 1000


def opcodes(a: Sequence[Hashable], b: Sequence[Hashable], limit: int = LIMIT) -> list[Op]:
    """How to turn ``a`` into ``b``: equal runs and the changes between them."""
    n, m = len(a), len(b)
    head = 0
    while head < n and head < m and a[head] == b[head]:
        head += 1
    tail = 0
    while tail < n - head and tail < m - head and a[n - 1 - tail] == b[m - 1 - tail]:
        tail += 1
    mid_a, mid_b = a[head : n - tail], b[head : m - tail]
    path = _myers(mid_a, mid_b, limit)
    ops: list[Op] = []
    if head:
        ops.append(("equal", 0, head, 0, head))
    if path is None:
        _add(ops, head, head + len(mid_a), head, head + len(mid_b))
    else:
        ops.extend(_from_path(path, head))
    if tail:
        ops.append(("equal", n - tail, n, m - tail, m))
    return _merge(ops)


def common_lines(a: Sequence[Hashable], b: Sequence[Hashable]) -> dict[int, int]:
    """Line index in ``a`` → line index in ``b``, for the lines both have in common."""
    if list(a) == list(b):
        return {i: i for i in range(len(a))}
    mapping: dict[int, int] = {}
    for tag, i1, i2, j1, _ in opcodes(a, b):
        if tag == "equal":
            for k in range(i2 - i1):
                mapping[i1 + k] = j1 + k
    return mapping


def _add(ops: list[Op], i1: int, i2: int, j1: int, j2: int) -> None:
    if i1 == i2 and j1 == j2:
        return
    tag = "replace" if i2 > i1 and j2 > j1 else ("delete" if i2 > i1 else "insert")
    ops.append((tag, i1, i2, j1, j2))


def _from_path(points: list[tuple[int, int, int, int]], shift: int) -> list[Op]:
    """Opcodes from the snakes ``(x, y, x_end, y_end)`` (each a diagonal run) of a path."""
    ops: list[Op] = []
    x = y = 0
    for sx, sy, ex, ey in points:
        _add(ops, shift + x, shift + sx, shift + y, shift + sy)
        if ex > sx:
            ops.append(("equal", shift + sx, shift + ex, shift + sy, shift + ey))
        x, y = ex, ey
    return ops


def _merge(ops: list[Op]) -> list[Op]:
    """Adjacent changes as one (an insertion beside a deletion is one replacement)."""
    out: list[Op] = []
    for op in ops:
        if out and op[0] != "equal" and out[-1][0] != "equal":
            _, i1, _, j1, _ = out[-1]
            _, _, i2, _, j2 = op
            out.pop()
            _add(out, i1, i2, j1, j2)
        elif op[1] != op[2] or op[3] != op[4]:
            out.append(op)
    return out


def _myers(
    a: Sequence[Hashable], b: Sequence[Hashable], limit: int
) -> list[tuple[int, int, int, int]] | None:
    """The snakes of a shortest edit path from ``a`` to ``b``; None beyond ``limit`` edits.

    The snakes end at (n, m); a final snake of length 0 marks the end.
    """
    n, m = len(a), len(b)
    if n == 0 or m == 0:
        return [(n, m, n, m)]
    offset = limit + 1
    v = [0] * (2 * offset + 2)
    trace: list[list[int]] = []
    for d in range(min(limit, n + m) + 1):
        for k in range(-d, d + 1, 2):
            if k == -d or (k != d and v[offset + k - 1] < v[offset + k + 1]):
                x = v[offset + k + 1]
            else:
                x = v[offset + k - 1] + 1
            y = x - k
            while x < n and y < m and a[x] == b[y]:
                x += 1
                y += 1
            v[offset + k] = x
            if x >= n and y >= m:
                trace.append(v[offset - d : offset + d + 1])
                return _backtrack(trace, n, m)
        trace.append(v[offset - d : offset + d + 1])
    return None


def _backtrack(trace: list[list[int]], n: int, m: int) -> list[tuple[int, int, int, int]]:
    """Walk the saved frontiers back from (n, m): each step is one edit and a snake."""
    snakes: list[tuple[int, int, int, int]] = []
    x, y = n, m
    for d in range(len(trace) - 1, 0, -1):
        prev = trace[d - 1]  # x per diagonal k in [-(d-1), d-1], at index k + d - 1
        k = x - y
        down = k == -d or (k != d and prev[k - 1 + d - 1] < prev[k + 1 + d - 1])
        pk = k + 1 if down else k - 1  # down: an insertion; right: a deletion
        px = prev[pk + d - 1]
        py = px - pk
        sx, sy = (px, py + 1) if pk == k + 1 else (px + 1, py)  # after the edit
        snakes.append((sx, sy, x, y))
        x, y = px, py
    snakes.append((0, 0, x, y))  # the first snake, from the origin
    snakes.reverse()
    return snakes
