"""The fake tasks the crash tests delegate: they stream text and edit files for a second or so."""

from __future__ import annotations

from pathlib import Path

from baton.core.lifecycle import TaskState
from tests.crash.invariants import Work


def edits_app(repo: Path, tag: str = "A") -> Work:
    """Two edits of app.py with streamed text between them."""
    return Work.of(
        repo,
        [
            {"say": f"{tag}: reading app.py"},
            {"edit": "app.py", "old": "    return 1\n", "new": "    return 10\n"},
            {"sleep": 0.4},
            {"stream": 6, "rate": 15, "size": 40},
            {"say": f"{tag}: second change"},
            {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
        ],
        f"{tag} done",
    )


def adds_notes(repo: Path, tag: str = "B") -> Work:
    """An append to notes.txt and a new file."""
    return Work.of(
        repo,
        [
            {"say": f"{tag}: starting"},
            {"append": "notes.txt", "text": "six\n"},
            {"sleep": 0.4},
            {"stream": 4, "rate": 15, "size": 40},
            {"write": "docs/new.md", "content": f"# new, by {tag}\n"},
            {"say": f"{tag}: finished"},
        ],
        f"{tag} done",
    )


def answers(repo: Path, tag: str = "C") -> Work:
    """Only text: the task ends answered, with no diff."""
    work = Work.of(
        repo,
        [{"say": f"{tag}: the answer is 42"}, {"stream": 3, "rate": 15, "size": 40}],
        f"{tag}: 42",
    )
    work.state = TaskState.ANSWERED
    return work
