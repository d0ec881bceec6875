"""Reading a git index file's entries in-process, instead of a ``git ls-files -s`` each time.

Every snapshot and every diff stages files into a temporary index and then needs its
entries (path → mode and blob) once; parsing the file costs less than a git process and
its output. Versions 2, 3 and 4 of the format are read (``Documentation/gitformat-index``);
for anything else — another version, a split index (``link``), a sparse one (``sdir``), a
hash other than SHA-1, a file cut short — :func:`read_index` says None and the caller asks
git as before.
"""

from __future__ import annotations

import struct
from pathlib import Path

_HEADER = struct.Struct(">4sLL")
# An entry's first 62 bytes: stat data (skipped) around the mode, the sha, the flags.
_ENTRY = struct.Struct(">24xL12x20sH")
_SHA1 = 20
_EXTENDED = 0x4000
_STAGE = 0x3000
_NAME_MASK = 0x0FFF
_UNREADABLE_EXTENSIONS = (b"link", b"sdir")


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    """Git's offset varint (index v4 path prefixes) at ``pos``: its value and the next pos."""
    c = data[pos]
    pos += 1
    value = c & 0x7F
    while c & 0x80:
        c = data[pos]
        pos += 1
        value = ((value + 1) << 7) | (c & 0x7F)
    return value, pos


def entry_count(path: Path) -> int | None:
    """How many entries the index file at ``path`` says it has (its header alone); None
    when it is not an index this reads."""
    try:
        with open(path, "rb") as fh:
            signature, version, count = _HEADER.unpack(fh.read(_HEADER.size))
    except (OSError, struct.error):
        return None
    return int(count) if signature == b"DIRC" and version in (2, 3, 4) else None


def may_name(path: Path, suffix: bytes) -> bool:
    """Whether an entry of the index file at ``path`` may have a path ending in ``suffix``;
    False only when it surely has none: versions 2 and 3 keep each path whole, ended by a
    NUL, so a search of the bytes tells without parsing the entries (version 4 shares the
    beginnings of paths, and anything unreadable, say True)."""
    try:
        data = path.read_bytes()
        signature, version, _ = _HEADER.unpack_from(data, 0)
    except (OSError, struct.error):
        return True
    if signature != b"DIRC" or version not in (2, 3):
        return True
    return suffix + b"\0" in data


def read_index(path: Path, *, plain: bool = False) -> dict[str, tuple[str, str]] | None:
    """Every stage-0 entry of the SHA-1 index file at ``path``: path → (mode, sha), as
    ``git ls-files -s`` gives them; None when the file is not one this reads. With
    ``plain``, None too when an entry is more than a path, a mode and a blob: a conflict's
    stage, or an extended flag (intent to add, skip-worktree), which ``write-tree`` treats
    apart."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    try:
        return _parse(data, plain)
    except (struct.error, IndexError, ValueError):
        return None


def _parse(data: bytes, plain: bool = False) -> dict[str, tuple[str, str]] | None:
    signature, version, count = _HEADER.unpack_from(data, 0)
    if signature != b"DIRC" or version not in (2, 3, 4):
        return None
    end = len(data) - _SHA1
    pos = _HEADER.size
    previous = b""
    entries: dict[str, tuple[str, str]] = {}
    for _ in range(count):
        start = pos
        mode, sha, flags = _ENTRY.unpack_from(data, pos)
        pos += _ENTRY.size
        if plain and flags & (_EXTENDED | _STAGE):
            return None
        if version >= 3 and flags & _EXTENDED:
            pos += 2
        if version == 4:
            strip, pos = _varint(data, pos)
            nul = data.index(b"\0", pos)
            if strip > len(previous):
                return None
            name = previous[: len(previous) - strip] + data[pos:nul]
            pos = nul + 1
        else:
            length = flags & _NAME_MASK
            nul = data.index(b"\0", pos + (length if length < _NAME_MASK else 0))
            name = data[pos:nul]
            pos = start + ((nul - start) // 8 + 1) * 8  # 1 to 8 NULs pad the entry
        if pos > end:
            return None
        previous = name
        if not flags & _STAGE:
            entries[name.decode("utf-8", "surrogateescape")] = (f"{mode:06o}", sha.hex())
    while pos + 8 <= end:  # the extensions: a few make the entries above incomplete
        ext, size = struct.unpack_from(">4sL", data, pos)
        if ext in _UNREADABLE_EXTENSIONS:
            return None
        pos += 8 + size
    return entries if pos == end else None
