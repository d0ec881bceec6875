"""The language server's hover and "Reply to" action, pure parts: which lines a hunk's hover
covers (an insertion: the line it goes before), what the hover says, which lines a question's
action sits on, and that a permission request is not a question."""

from __future__ import annotations

from pathlib import Path

from lsprotocol import types

from baton.core.diff import FileDiff, FileStatus, Hunk, HunkState
from baton.core.lifecycle import TaskState
from baton.core.task import Target, Task
from baton.surfaces.lsp import asking, hover, placement
from baton.surfaces.lsp.documents import path_to_uri

ROOT = Path("/repo")
BASE = "def a():\n    return 1\n\n\ndef b():\n    return 2\n"
URI = path_to_uri(ROOT / "app.py")


def task_diff(*hunks: Hunk, state: TaskState = TaskState.REVIEW) -> placement.TaskDiff:
    task = Task(id="8kd0m2qh3xz", instruction="x", root=str(ROOT), title="Bigger", state=state)
    files = [FileDiff("app.py", FileStatus.MODIFIED, tuple(hunks))]
    return placement.TaskDiff(task, ROOT, files, True, {"app.py": BASE})


CHANGE = Hunk("h1", 2, 1, 2, 2, "    return 1\n", "    return 10\n    # ten\n")
INSERT = Hunk("h2", 4, 0, 5, 1, "", "# inserted\n")  # goes after line 4, before line 5


def text_at(td: placement.TaskDiff, line: int, current: str | None = None) -> str | None:
    return hover.hover_text([td], [], URI, current, "utf-16", line)


def test_a_hunks_hover_is_its_diff_and_how_to_decide_it() -> None:
    td = task_diff(CHANGE, INSERT)
    text = text_at(td, 1)
    assert text is not None
    assert "```diff\n-    return 1\n+    return 10\n+    # ten\n```" in text
    assert '`baton.accept` with `{"taskId": "8kd0m2qh3xz", "hunkIds": ["h1"]}`' in text
    assert "Bigger" in text and "edited since" not in text
    assert text_at(td, 0) is None and text_at(td, 2) is None
    inserted = text_at(td, 4)
    assert inserted is not None and "+# inserted" in inserted and "h1" not in inserted
    # The user edited the hunk's line: it says so; moved down by a line above: it follows.
    edited = text_at(td, 1, BASE.replace("return 1", "return 100"))
    assert edited is not None and "You edited these lines since" in edited
    assert text_at(td, 2, "# top\n" + BASE) is not None


def test_decided_hunks_and_tasks_not_in_review_have_no_hover() -> None:
    accepted = Hunk("h1", 2, 1, 2, 1, "    return 1\n", "    return 10\n", HunkState.ACCEPTED)
    assert text_at(task_diff(accepted), 1) is None
    assert text_at(task_diff(CHANGE, state=TaskState.RUNNING), 1) is None


def test_a_fence_is_longer_than_the_backticks_inside() -> None:
    code = Hunk("h3", 1, 1, 1, 1, "x = 1\n", "doc = '```'\n")
    text = text_at(task_diff(code), 0)
    assert text is not None and "````diff\n" in text and "\n````" in text


def test_long_sides_are_cut_and_counted() -> None:
    many = "".join(f"line {i}\n" for i in range(100))
    big = Hunk("h4", 1, 1, 1, 100, "def a():\n", many)
    text = text_at(task_diff(big), 0)
    assert text is not None and "+line 59\n" in text and "+line 60\n" not in text
    assert "+… 40 more lines" in text


def question(*targets: Target, message: str = "Which value?") -> Task:
    return Task(
        id="9ab",
        instruction="x",
        root=str(ROOT),
        title="Pick",
        state=TaskState.NEEDS_INPUT,
        message=message,
        targets=list(targets),
    )


def rng(a: int, b: int) -> types.Range:
    return types.Range(types.Position(a, 0), types.Position(b, 0))


def test_reply_sits_on_the_target_lines_and_a_whole_file_target_anywhere() -> None:
    lines = question(Target("app.py", 2, 3))  # 1-based: LSP lines 1-2
    assert [a.title for a in asking.reply_actions([lines], URI, rng(1, 1))] == [
        "Baton: Reply to Pick"
    ]
    assert asking.reply_actions([lines], URI, rng(3, 5)) == []
    assert asking.reply_actions([lines], URI, rng(0, 0)) == []
    (action,) = asking.reply_actions([lines], URI, rng(0, 2))
    assert action.kind == asking.REPLY_KIND and action.command is not None
    assert action.command.arguments == [{"taskId": "9ab"}]
    whole = question(Target("app.py"))
    assert len(asking.reply_actions([whole], URI, rng(40, 40))) == 1
    other = path_to_uri(ROOT / "b.py")
    assert asking.reply_actions([whole], other, rng(0, 0)) == []


def test_a_permission_request_is_not_a_question() -> None:
    waiting = question(Target("app.py"), message="asks permission: Run ls")
    assert not asking.asks(waiting)
    assert asking.reply_actions([waiting], URI, rng(0, 0)) == []
    questions = asking.Questions()
    questions.update(question(Target("app.py")))
    assert list(questions.tasks) == ["9ab"]
    questions.update(waiting)
    assert questions.tasks == {}
    hovered = hover.hover_text([], [question(Target("app.py", 1, 1))], URI, BASE, "utf-16", 0)
    assert hovered is not None and "Which value?" in hovered and "baton.reply" in hovered


def test_a_hover_names_the_other_tasks_changing_the_same_file() -> None:
    mine = task_diff(CHANGE, INSERT)
    other_task = Task(
        id="7zz0m2qh3xq", instruction="y", root=str(ROOT), title="Other", state=TaskState.REVIEW
    )
    same_line = Hunk("k1", 2, 1, 2, 1, "    return 1\n", "    return 11\n")
    far = Hunk("k2", 6, 1, 6, 1, "    return 2\n", "    return 22\n")
    files = [FileDiff("app.py", FileStatus.MODIFIED, (same_line, far))]
    other = placement.TaskDiff(other_task, ROOT, files, True, {"app.py": BASE})
    on_change = hover.hover_text([mine, other], [], URI, None, "utf-16", 1)
    assert on_change is not None
    assert (
        "Also changed by task `7zz0m2qh3xq` (Other): its k1 changes these lines too." in on_change
    )
    on_insert = hover.hover_text([mine, other], [], URI, None, "utf-16", 4)
    assert (
        on_insert is not None and "Task `7zz0m2qh3xq` (Other) also changes this file." in on_insert
    )
    # From another version of the file, the lines do not compare: only the file is named.
    moved = placement.TaskDiff(other_task, ROOT, files, True, {"app.py": "# new\n" + BASE})
    text = hover.hover_text([mine, moved], [], URI, None, "utf-16", 1)
    assert text is not None and "(Other) also changes this file." in text
    assert "its k1 changes these lines" not in text
    assert "Also changed" not in (text_at(mine, 1) or "")
