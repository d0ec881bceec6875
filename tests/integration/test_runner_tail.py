"""Tailer: complete lines of a growing file, resumable from a byte offset, inotify or polling."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from baton.process.tail import Tailer, TailError

MODES = [pytest.param(True, id="inotify"), pytest.param(False, id="polling")]


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


async def take(tailer: Tailer, n: int, within: float = 2.0) -> list[str]:
    out: list[str] = []

    async def run() -> None:
        async for line in tailer:
            out.append(line)
            if len(out) == n:
                return

    await asyncio.wait_for(run(), within)
    return out


@pytest.mark.parametrize("inotify", MODES)
async def test_yields_lines_as_they_are_written(tmp_path: Path, inotify: bool) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"")
    tailer = Tailer(path, inotify=inotify, poll_interval=0.01)
    got: list[str] = []

    async def reader() -> None:
        async for line in tailer:
            got.append(line)

    task = asyncio.create_task(reader())
    append(path, b"one\ntw")
    await asyncio.sleep(0.05)
    assert got == ["one"]  # the half-written line waits for its newline
    assert tailer.offset == 4
    assert tailer.uses_inotify is inotify
    append(path, b"o\r\nthree\n")
    await asyncio.sleep(0.05)
    assert got == ["one", "two", "three"]
    assert tailer.offset == path.stat().st_size
    tailer.finish()
    await asyncio.wait_for(task, 1)
    await tailer.wait_closed()
    assert tailer.closed


async def test_finish_drains_and_yields_a_last_line_without_newline(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"a\nb\nlast")
    tailer = Tailer(path)
    tailer.finish()
    lines = [line async for line in tailer]
    assert lines == ["a", "b", "last"]
    assert tailer.offset == path.stat().st_size


async def test_finish_with_nothing_left_just_stops(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"a\n")
    tailer = Tailer(path, offset=2)
    tailer.finish()
    assert [line async for line in tailer] == []
    assert tailer.offset == 2


async def test_resume_from_offset_loses_and_repeats_nothing(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"".join(f"line {i}\n".encode() for i in range(10)) + b"partial")
    first = Tailer(path)
    got = await take(first, 4)
    offset = first.offset
    first.close()  # the broker dies here, having stored the offset
    append(path, b" done\nline 11\n")
    second = Tailer(path, offset)
    second.finish()
    got += [line async for line in second]
    assert got == [f"line {i}" for i in range(10)] + ["partial done", "line 11"]


async def test_lines_read_ahead_but_not_yielded_are_not_counted_in_offset(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"x\ny\nz\n")
    tailer = Tailer(path)
    assert await take(tailer, 1) == ["x"]
    assert tailer.offset == 2  # y and z are buffered, not consumed
    tailer.close()


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    chunks=st.lists(st.binary(max_size=40), min_size=1, max_size=12),
    stops=st.lists(st.integers(min_value=1, max_value=5), max_size=4),
)
@example(chunks=[b"\r"], stops=[])  # a lone CR is an (empty) last line, not nothing
async def test_any_chunking_and_resume_points_give_every_line_once(
    tmp_path: Path, chunks: list[bytes], stops: list[int]
) -> None:
    path = tmp_path / f"out-{os.urandom(4).hex()}"
    data = b"".join(chunks)
    path.write_bytes(b"")
    for chunk in chunks:
        append(path, chunk)
    raw = data.split(b"\n")
    if raw[-1] == b"":  # no unterminated last line
        raw.pop()
    expected = [p.decode("utf-8", "replace").removesuffix("\r") for p in raw]
    got: list[str] = []
    offset = 0
    for stop in stops:  # several brokers in turn, each taking a few lines then dying
        complete = data[offset:].count(b"\n")
        tailer = Tailer(path, offset)
        got += await take(tailer, min(stop, complete)) if complete else []
        offset = tailer.offset
        tailer.close()
    last = Tailer(path, offset)
    last.finish()
    got += [line async for line in last]
    assert got == expected


async def test_deleted_file_stops_with_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"kept\n")
    tailer = Tailer(path)
    assert await take(tailer, 1) == ["kept"]
    path.unlink()
    with pytest.raises(TailError, match="deleted"):
        await asyncio.wait_for(tailer.__anext__(), 2)
    assert tailer.error is not None and tailer.closed


async def test_truncated_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"aaaa\nbbbb\n")
    tailer = Tailer(path, offset=10)
    path.write_bytes(b"c\n")
    with pytest.raises(TailError, match="truncated"):
        await asyncio.wait_for(tailer.__anext__(), 2)


async def test_missing_file_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TailError, match="cannot read"):
        await Tailer(tmp_path / "nope").__anext__()


async def test_many_tailers_share_one_loop_and_release_their_watches(tmp_path: Path) -> None:
    paths = [tmp_path / f"f{i}" for i in range(30)]
    for p in paths:
        p.write_bytes(b"")
    tailers = [Tailer(p) for p in paths]
    readers = [asyncio.create_task(take(t, 2)) for t in tailers]
    await asyncio.sleep(0.02)
    for i, p in enumerate(paths):
        append(p, f"{i}a\n{i}b\n".encode())
    results = await asyncio.gather(*readers)
    assert results == [[f"{i}a", f"{i}b"] for i in range(30)]
    assert all(t.uses_inotify for t in tailers)
    for t in tailers:
        t.close()
    from baton.process.tail import _Inotify

    assert asyncio.get_running_loop() not in _Inotify._by_loop  # the last close freed the fd


async def test_batch_hands_out_every_line_read_so_far_up_to_a_limit(tmp_path: Path) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"".join(f"{i}\n".encode() for i in range(10)) + b"half")
    tailer = Tailer(path)
    first = await asyncio.wait_for(tailer.batch(4), 2)
    assert first == ["0", "1", "2", "3"]
    assert tailer.offset == 8 and tailer.buffered == 6
    rest = await asyncio.wait_for(tailer.batch(), 2)
    assert rest == [str(i) for i in range(4, 10)]
    assert tailer.offset == 20 and tailer.buffered == 0
    tailer.finish()
    assert await asyncio.wait_for(tailer.batch(), 2) == ["half"]
    assert await asyncio.wait_for(tailer.batch(), 2) == []  # the end
    assert tailer.offset == path.stat().st_size


async def test_one_read_per_wake_up_and_no_look_at_the_file_while_lines_come(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tailer runs on the event loop: each system call there is a chance for another
    thread to take the interpreter. While lines keep coming, a wake-up costs one read and
    the file's size and name are not looked at."""
    path = tmp_path / "out"
    path.write_bytes(b"")
    calls = {"pread": 0, "fstat": 0, "stat": 0}
    for name in calls:
        real = getattr(os, name)

        def counted(*args: object, _real: Any = real, _name: str = name, **kw: object) -> object:
            if args and (args[0] == path or isinstance(args[0], int)):
                calls[_name] += 1
            return _real(*args, **kw)

        monkeypatch.setattr(os, name, counted)
    tailer = Tailer(path)
    got: list[str] = []
    for i in range(20):
        append(path, f"line {i}\n".encode())
        got += await take(tailer, 1)
    monkeypatch.undo()
    assert got == [f"line {i}" for i in range(20)]
    assert tailer.uses_inotify
    # One read per line written (a wake-up each), plus at most a few reads of nothing
    # (a wake-up for bytes an earlier read took), each with its look at the file.
    assert 20 <= calls["pread"] <= 26, calls
    assert calls["fstat"] <= calls["pread"] - 20 + 1, calls
    tailer.close()


@pytest.mark.parametrize("inotify", MODES)
async def test_truncation_while_following_is_an_error(tmp_path: Path, inotify: bool) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"")
    tailer = Tailer(path, inotify=inotify, poll_interval=0.01)
    append(path, b"aaaa\nbbbb\n")
    assert await take(tailer, 2) == ["aaaa", "bbbb"]
    with open(path, "r+b") as f:
        f.truncate(0)
    append(path, b"c\n")
    with pytest.raises(TailError, match="truncated"):
        await asyncio.wait_for(tailer.__anext__(), 3)


@pytest.mark.parametrize("inotify", MODES)
async def test_a_line_longer_than_a_read_comes_whole(tmp_path: Path, inotify: bool) -> None:
    path = tmp_path / "out"
    path.write_bytes(b"")
    tailer = Tailer(path, inotify=inotify, poll_interval=0.01)
    long = b"x" * 200_000
    append(path, long[:70_000])
    append(path, long[70_000:] + b"\nnext\n")
    assert await take(tailer, 2) == [long.decode(), "next"]
    assert tailer.offset == path.stat().st_size
    tailer.close()


@pytest.mark.parametrize("inotify", MODES)
async def test_a_quiet_file_is_still_looked_at_and_its_deletion_seen(
    tmp_path: Path, inotify: bool
) -> None:
    """After a read that reached the end, no read happens until a wake-up; a deletion
    then is seen all the same (its wake-up, or the safety look)."""
    path = tmp_path / "out"
    path.write_bytes(b"")
    tailer = Tailer(path, inotify=inotify, poll_interval=0.01)
    append(path, b"one\n")
    assert await take(tailer, 1) == ["one"]
    waiting = asyncio.create_task(tailer.__anext__())
    await asyncio.sleep(0.05)
    assert not waiting.done()
    path.unlink()
    with pytest.raises(TailError, match="deleted"):
        await asyncio.wait_for(waiting, 3)


async def test_an_inotify_queue_overflow_wakes_every_tailer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The kernel drops wake-ups when its queue is full (an event with wd -1 says so): every
    tailer then reads again rather than sleeping on lines it was not told of."""
    import struct

    from baton.process import tail

    paths = [tmp_path / f"f{i}" for i in range(3)]
    for p in paths:
        p.write_bytes(b"")
    tailers = [Tailer(p) for p in paths]
    readers = [asyncio.create_task(take(t, 1, within=0.8)) for t in tailers]
    await asyncio.sleep(0.05)  # each read its empty file and waits for a wake-up
    hub = tail._Inotify._by_loop[asyncio.get_running_loop()]
    loop = asyncio.get_running_loop()
    loop.remove_reader(hub.fd)  # the test hands the hub its events itself
    for p in paths:
        append(p, b"line\n")  # real wake-ups the hub never reads
    overflow = struct.pack("iIII", -1, 0x4000, 0, 0)
    given = [overflow]

    def read(fd: int, n: int) -> bytes:
        if fd == hub.fd and given:
            return given.pop()
        raise BlockingIOError

    monkeypatch.setattr(os, "read", read)
    hub._on_readable()
    monkeypatch.undo()
    results = await asyncio.gather(*readers)  # well before the 1 s safety look
    assert results == [["line"]] * 3
    for t in tailers:
        t.close()
