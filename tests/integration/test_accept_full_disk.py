"""A full state disk refuses an accept before any user file is written (issue 14, case 4).

Before the journal, accept wrote the user's files and then answered "could not save hunk
decisions": the files had changed and the task still said every hunk was pending.
"""

from __future__ import annotations

import subprocess
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from baton.core.diff import HunkState
from baton.core.lifecycle import TaskState
from baton.runtime.requests import DelegateRequest
from baton.runtime.supervisor import Limits, Supervisor, TaskError
from tests.conftest import fake_script, settle

S = TaskState


@pytest.fixture
async def small_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[Path]:
    """Baton's state on a file system of its own, small enough to fill."""
    mnt = tmp_path / "state"
    mnt.mkdir()
    proc = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", str(mnt)], capture_output=True
    )
    if proc.returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    monkeypatch.setenv("BATON_HOME", str(mnt))
    monkeypatch.setenv("BATON_CONFIG", str(tmp_path / "no-user-config.toml"))
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(tmp_path / "run"))
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(folder: Path) -> Path:
    """Write until the file system is full; the file, to free the space again."""
    ballast = folder / "ballast"
    with open(ballast, "wb") as f:
        try:
            while True:
                f.write(b"\0" * (1 << 20))
                f.flush()
        except OSError:
            pass
    return ballast


async def test_a_full_state_disk_refuses_the_accept_and_writes_no_user_file(
    small_home: Path, repo: Path
) -> None:
    sup = Supervisor(small_home, limits=Limits(stall_after=30, kill_grace=1.0))
    await sup.start()
    try:
        big = "".join(f"line {i} of the worker's new file\n" for i in range(20_000))
        steps = [
            {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
            {"write": "big.txt", "content": big},
        ]
        req = DelegateRequest(instruction=fake_script(*steps), root=str(repo))
        task = await sup.delegate(req)
        assert await settle(sup, task.id) == S.REVIEW
        before = {p.name: p.read_bytes() for p in repo.iterdir() if p.is_file()}
        ballast = fill(small_home)
        with pytest.raises(TaskError, match="could not record the accept, so nothing was written"):
            await sup.accept(task.id)
        after = {p.name: p.read_bytes() for p in repo.iterdir() if p.is_file()}
        assert after == before, "a user file changed although the accept was refused"
        assert not list(repo.glob(".*.baton-*.tmp"))
        files, _ = await sup.diff(task.id)
        assert {h.state for f in files for h in f.hunks} == {HunkState.PENDING}
        ballast.unlink()  # with room again, the same accept goes through
        result = await sup.accept(task.id)
        assert not result.conflicts and (repo / "big.txt").read_text() == big
        assert (await sup.get(task.id)).state == S.APPLIED
    finally:
        await sup.close()
