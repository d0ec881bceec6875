"""Accept as a journal: concurrent writers lose nothing, a crash is finished or rolled back.

Real git repositories, a real writer process, and real ``kill -9`` (``BATON_CRASH_AT``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import baton
from baton.core.diff import FileDiff, FileStatus
from baton.workspace import (
    JournalError,
    Snapshot,
    accept,
    clear_journal,
    compute_diff,
    contents,
    create_worktree,
    recover_accept,
    take_snapshot,
    userfile,
)

BIG = "".join(f"line {i}\n" for i in range(1, 3001))

# Appends one line to a file every ~2 ms (open, write, close: as a logger or a save does)
# until the stop file appears; prints how many lines it wrote.
WRITER = """
import os, sys, time
path, stop, tag = sys.argv[1], sys.argv[2], sys.argv[3]
n = 0
while not os.path.exists(stop):
    n += 1
    fd = os.open(path, os.O_WRONLY | os.O_APPEND)
    os.write(fd, f"{tag} appended {n}\\n".encode())
    os.close(fd)
    time.sleep(0.002)
print(n)
"""


def git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@localhost", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "big.txt").write_text(BIG)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    return root


def task_diff(
    repo: Path, tmp_path: Path, task: str, edit: dict[str, str]
) -> tuple[Snapshot, list[FileDiff]]:
    """A snapshot of ``repo`` as it is now and the diff of a worker that replaced, in each
    named file, the text given as key... as value (``{"path": "old→new"}``)."""
    snap = take_snapshot(repo, task, state_home=tmp_path / "state")
    wt = create_worktree(snap, task, tmp_path / "worktrees")
    for path, change in edit.items():
        old, new = change.split("→")
        text = (wt / path).read_text()
        assert old in text
        (wt / path).write_text(text.replace(old, new, 1))
    return snap, compute_diff(snap, wt)


def temp_files(root: Path) -> list[Path]:
    return [p for p in root.rglob("*.baton-*.tmp") if ".git" not in p.parts]


@pytest.mark.parametrize("journaled", [False, True], ids=["plain", "journal"])
def test_lines_another_process_appends_during_accept_are_kept(
    repo: Path, tmp_path: Path, journaled: bool
) -> None:
    target = repo / "big.txt"
    for trial in range(6):
        snap, files = task_diff(
            repo, tmp_path, f"t{trial}", {"big.txt": f"line {1500 + trial}\n→worker {trial}\n"}
        )
        stop = tmp_path / f"stop-{trial}"
        size = target.stat().st_size
        writer = subprocess.Popen(
            [sys.executable, "-c", WRITER, str(target), str(stop), f"trial{trial}"],
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            deadline = time.monotonic() + 30
            while target.stat().st_size < size + 200:  # the writer is well under way
                assert time.monotonic() < deadline, "the writer did not start"
                time.sleep(0.005)
            journal = tmp_path / "state" / "accepts" / f"t{trial}.json" if journaled else None
            result = accept(snap, files, journal=journal) if journal else accept(snap, files)
            time.sleep(0.05)  # the writer goes on appending to the accepted file
        finally:
            stop.touch()
            out, _ = writer.communicate(timeout=30)
        written = int(out)
        lines = target.read_text().splitlines()
        assert result.applied == [files[0].hunks[0].id], result.conflicts
        assert f"worker {trial}" in lines and f"line {1500 + trial}" not in lines
        mine = [ln for ln in lines if ln.startswith(f"trial{trial} appended ")]
        assert mine == [f"trial{trial} appended {n}" for n in range(1, written + 1)], (
            f"trial {trial}: {written - len(mine)} of {written} appended lines lost"
        )
        assert not temp_files(repo)


# Accepts the diff a job file describes, with a journal (in a process a test may kill).
ACCEPT = """
import json, sys
from pathlib import Path
from baton.core.diff import FileDiff
from baton.workspace import Snapshot, accept
job = json.loads(Path(sys.argv[1]).read_text())
files = [FileDiff.from_json(f) for f in job["files"]]
accept(Snapshot.from_json(job["snap"]), files, journal=Path(job["journal"]))
"""

RECOVER = """
import sys
from pathlib import Path
from baton.workspace import recover_accept
recover_accept(Path(sys.argv[1]), Path(sys.argv[2]))
"""

MANY = 300
SMALL = "".join(f"row {i}\n" for i in range(1, 21))


def run_baton(script: str, *args: str | Path, crash_at: str = "") -> int:
    env = dict(os.environ, PYTHONPATH=str(Path(baton.__file__).parents[1]))
    env.pop("BATON_CRASH_AT", None)
    if crash_at:
        env["BATON_CRASH_AT"] = crash_at
    proc = subprocess.run(
        [sys.executable, "-c", script, *map(str, args)], env=env, capture_output=True, timeout=300
    )
    assert proc.returncode in (0, -9), proc.stderr.decode()
    return proc.returncode


@pytest.fixture
def many(
    tmp_path: Path,
) -> Iterator[tuple[Path, Snapshot, list[FileDiff], dict[str, bytes | None]]]:
    """A repository of 300 text files (and one to delete, one to rename, one binary), the
    diff of a worker that changed every one and added another, and the files it left."""
    root = tmp_path / "many"
    root.mkdir()
    for i in range(MANY):
        (root / "src" / f"d{i % 10}").mkdir(parents=True, exist_ok=True)
        (root / "src" / f"d{i % 10}" / f"f{i:03}.txt").write_text(SMALL)
    (root / "gone.txt").write_text("to be deleted\n")
    (root / "old name.txt").write_text("moving\ncontent\n")
    (root / "logo.bin").write_bytes(b"\x89PNG\0\1\2")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    snap = take_snapshot(root, "big", state_home=tmp_path / "state")
    wt = create_worktree(snap, "big", tmp_path / "worktrees")
    for i in range(MANY):
        path = wt / "src" / f"d{i % 10}" / f"f{i:03}.txt"
        path.write_text(SMALL.replace("row 5\n", f"worker {i}\n"))
    (wt / "gone.txt").unlink()
    (wt / "old name.txt").rename(wt / "new name.txt")
    (wt / "logo.bin").write_bytes(b"\x89PNG\0\3\4")
    (wt / "docs").mkdir()
    (wt / "docs" / "added.md").write_text("brand new\n")
    files = compute_diff(snap, wt)
    assert len(files) == MANY + 4
    expected = {
        p.relative_to(wt).as_posix(): p.read_bytes()
        for p in wt.rglob("*")
        if p.is_file() and ".git" not in p.parts
    }
    yield root, snap, files, {**expected, "gone.txt": None, "old name.txt": None}


def tree(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and ".git" not in p.parts
    }


def crash_accept(tmp_path: Path, snap: Snapshot, files: list[FileDiff], crash_at: str) -> Path:
    journal = tmp_path / "state" / "accepts" / "big.json"
    job = tmp_path / "job.json"
    job.write_text(
        json.dumps(
            {
                "snap": snap.to_json(),
                "files": [f.to_json() for f in files],
                "journal": str(journal),
            }
        )
    )
    assert run_baton(ACCEPT, job, crash_at=crash_at) == -9
    assert journal.exists()
    return journal


def all_hunks(files: list[FileDiff]) -> set[str]:
    return {h.id for f in files for h in f.hunks}


@pytest.mark.parametrize("crash_at", ["accept_journal", "accept_temp:150", "accept_file:150"])
def test_an_accept_killed_midway_is_finished_by_recovery(
    many: tuple[Path, Snapshot, list[FileDiff], dict[str, bytes | None]],
    tmp_path: Path,
    crash_at: str,
) -> None:
    root, snap, files, expected = many
    journal = crash_accept(tmp_path, snap, files, crash_at)
    on_disk = tree(root)
    written = sum(on_disk.get(p) == want for p, want in expected.items() if want is not None)
    if crash_at == "accept_journal":
        assert written == 0  # the journal is written before any user file
    else:
        assert 140 <= written <= 160  # killed in the middle, not at the start or the end
    if crash_at == "accept_temp:150":
        assert len(temp_files(root)) == 1  # the crash left the temporary file of file 150

    first = recover_accept(journal, root)
    assert first is not None
    assert set(first.applied) == all_hunks(files) and not first.not_applied
    assert tree(root) == {p: d for p, d in expected.items() if d is not None}
    assert not temp_files(root)
    again = recover_accept(journal, root)  # harmless a second time
    assert again is not None and sorted(again.applied) == sorted(first.applied)
    assert tree(root) == {p: d for p, d in expected.items() if d is not None}
    clear_journal(journal)
    assert recover_accept(journal, root) is None
    assert not list(journal.parent.iterdir())


def test_a_recovery_killed_midway_is_finished_by_the_next(
    many: tuple[Path, Snapshot, list[FileDiff], dict[str, bytes | None]], tmp_path: Path
) -> None:
    root, snap, files, expected = many
    journal = crash_accept(tmp_path, snap, files, "accept_file:100")
    assert run_baton(RECOVER, journal, root, crash_at="accept_recover_file:60") == -9
    assert run_baton(RECOVER, journal, root, crash_at="accept_temp:30") == -9
    recovered = recover_accept(journal, root)
    assert recovered is not None
    assert set(recovered.applied) == all_hunks(files) and not recovered.not_applied
    assert tree(root) == {p: d for p, d in expected.items() if d is not None}
    assert not temp_files(root)


def test_files_the_user_changed_after_the_crash_keep_the_user_s_content(
    many: tuple[Path, Snapshot, list[FileDiff], dict[str, bytes | None]], tmp_path: Path
) -> None:
    root, snap, files, expected = many
    journal = crash_accept(tmp_path, snap, files, "accept_temp:150")
    texts = [f for f in files if f.path.startswith("src/")]
    done = [f for f in texts if (root / f.path).read_bytes() == expected[f.path]]
    waiting = [f for f in texts if (root / f.path).read_bytes() == SMALL.encode()]
    assert done and waiting and len(done) + len(waiting) == len(texts)
    (temp,) = temp_files(root)  # beside the file the accept was replacing
    midway = (temp.parent / temp.name.split(".baton-")[0][1:]).relative_to(root).as_posix()
    # The user edits one file the accept had written, the one it was writing, one it had
    # not reached, and replaces the file the rename was about to remove.
    edited = {
        done[3].path: b"user 1\n",
        midway: b"user 2\n",
        waiting[7].path: SMALL.encode() + b"user 3\n",
        "old name.txt": b"the user's own version\n",
    }
    for path, data in edited.items():
        (root / path).write_bytes(data)
    by_path = {f.path: f for f in files}
    lost = {by_path[p].hunks[0].id for p in [*edited, "new name.txt"] if p in by_path}

    for _ in range(2):  # the second run finds the same and changes nothing
        recovered = recover_accept(journal, root)
        assert recovered is not None
        assert {h for h, _ in recovered.not_applied} == lost
        assert all(
            "changed after the accept was interrupted" in why for _, why in recovered.not_applied
        )
        assert set(recovered.applied) == all_hunks(files) - lost
        on_disk = tree(root)
        for path, data in edited.items():
            assert on_disk[path] == data
        assert "new name.txt" not in on_disk  # the half-done rename is put back
        for f in files:
            if f.path not in edited and f.path != "new name.txt" and expected[f.path]:
                assert on_disk[f.path] == expected[f.path], f.path
        assert not temp_files(root)


def test_a_rename_half_done_by_a_crash_is_put_back_when_its_source_changed(
    repo: Path, tmp_path: Path
) -> None:
    (repo / "old.txt").write_text("moving\n")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "more")
    snap = take_snapshot(repo, "mv", state_home=tmp_path / "state")
    wt = create_worktree(snap, "mv", tmp_path / "worktrees")
    (wt / "old.txt").rename(wt / "new.txt")
    files = compute_diff(snap, wt)
    assert [f.status for f in files] == [FileStatus.RENAMED]
    journal = crash_accept(tmp_path, snap, files, "accept_file:1")  # new.txt written
    assert (repo / "new.txt").read_text() == "moving\n" and (repo / "old.txt").exists()
    (repo / "old.txt").write_text("moving, edited\n")
    recovered = recover_accept(journal, root=repo)
    assert recovered is not None and not recovered.applied
    assert not (repo / "new.txt").exists()
    assert (repo / "old.txt").read_text() == "moving, edited\n"


@pytest.fixture
def full_disk(tmp_path: Path) -> Iterator[Path]:
    """A 64 KiB file system for Baton's state (skipped where tmpfs cannot be mounted)."""
    mnt = tmp_path / "small-state"
    mnt.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(mnt)], capture_output=True
    )
    if proc.returncode != 0:
        pytest.skip("cannot mount a small tmpfs here")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", str(mnt)], check=True)


def test_a_full_state_disk_refuses_the_accept_before_any_user_file_is_written(
    repo: Path, tmp_path: Path, full_disk: Path
) -> None:
    for i in range(3):  # three new contents of ~30 KiB each: more than the disk holds
        (repo / f"copy{i}.txt").write_text(f"copy {i}\n" + BIG)
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "copies")
    snap, files = task_diff(
        repo, tmp_path, "t1", {f"copy{i}.txt": "line 7\n→worker 7\n" for i in range(3)}
    )
    before = tree(repo)
    journal = full_disk / "accepts" / "t1.json"
    with pytest.raises(JournalError) as caught:
        accept(snap, files, journal=journal)
    assert caught.value.errno == 28  # ENOSPC
    assert tree(repo) == before and not temp_files(repo)
    assert recover_accept(journal, repo) is None
    clear_journal(journal)
    assert list((full_disk / "accepts").iterdir()) == []


def test_a_journal_that_cannot_be_written_or_is_still_there_refuses_the_accept(
    repo: Path, tmp_path: Path
) -> None:
    snap, files = task_diff(repo, tmp_path, "t1", {"big.txt": "line 7\n→worker 7\n"})
    before = tree(repo)
    blocked = tmp_path / "state-file"
    blocked.write_text("a file where the journal's folder should be\n")
    with pytest.raises(JournalError):
        accept(snap, files, journal=blocked / "t1.json")
    assert tree(repo) == before
    journal = tmp_path / "state" / "accepts" / "t1.json"
    journal.parent.mkdir(parents=True)
    journal.write_text("{}")  # an earlier accept's, not recovered yet
    with pytest.raises(JournalError, match="recover"):
        accept(snap, files, journal=journal)
    assert tree(repo) == before and not temp_files(repo)


def test_a_line_written_into_the_replaced_file_after_the_last_check_is_kept(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer that opened the file before the rename and writes just after it."""
    snap, files = task_diff(repo, tmp_path, "t1", {"big.txt": "line 7\n→worker 7\n"})
    real_put = userfile._put
    calls = []

    def racing_put(tmp: Path, held: userfile._Held, seen: contents.Content | None) -> bool:
        calls.append(tmp)
        if len(calls) > 1:
            return real_put(tmp, held, seen)
        fd = os.open(held.target, os.O_WRONLY | os.O_APPEND)
        try:
            put = real_put(tmp, held, seen)
            os.write(fd, b"written late\n")
        finally:
            os.close(fd)
        return put

    monkeypatch.setattr(userfile, "_put", racing_put)
    journal = tmp_path / "state" / "accepts" / "t1.json"
    result = accept(snap, files, journal=journal)
    assert result.applied == [files[0].hunks[0].id] and len(calls) == 2
    expected = BIG.replace("line 7\n", "worker 7\n") + "written late\n"
    assert (repo / "big.txt").read_text() == expected == result.texts["big.txt"]
    # The journal learnt the content before it was written: a recovery agrees.
    recovered = recover_accept(journal, repo)
    assert recovered is not None and recovered.applied == result.applied
    assert (repo / "big.txt").read_text() == expected and not temp_files(repo)


def test_an_editor_save_by_rename_just_before_baton_s_rename_is_kept(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap, files = task_diff(repo, tmp_path, "t1", {"big.txt": "line 7\n→worker 7\n"})
    real_exchange = userfile._exchange
    saved = BIG.replace("line 2000\n", "saved 2000\n")

    calls: list[Path] = []

    def save_then_exchange(a: Path, b: Path) -> bool:
        calls.append(a)
        if len(calls) == 1:
            (repo / ".saved").write_text(saved)
            os.replace(repo / ".saved", b)  # the editor's atomic save lands first
        return real_exchange(a, b)

    monkeypatch.setattr(userfile, "_exchange", save_then_exchange)
    result = accept(snap, files)
    assert result.applied == [files[0].hunks[0].id]
    assert (repo / "big.txt").read_text() == saved.replace("line 7\n", "worker 7\n")
    assert not temp_files(repo)


def test_a_failing_write_leaves_the_file_and_no_temporary_file(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    snap, files = task_diff(repo, tmp_path, "t1", {"big.txt": "line 7\n→worker 7\n"})

    def broken(a: Path, b: Path) -> bool:
        raise OSError(5, "Input/output error", str(b))

    monkeypatch.setattr(userfile, "_exchange", broken)
    result = accept(snap, files, journal=tmp_path / "state" / "accepts" / "t1.json")
    assert not result.applied and "could not write" in result.conflicts[0][1]
    assert (repo / "big.txt").read_text() == BIG and not temp_files(repo)
