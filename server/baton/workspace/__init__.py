"""Git-backed isolation for tasks: snapshots, worktrees, diffs, accept and write scope.

All functions are synchronous (the runtime calls them from a worker thread) and run git
through :mod:`baton.workspace.git`.
"""

from baton.workspace.apply import AcceptResult, Redone, accept
from baton.workspace.diffing import (
    compute_diff,
    decode_text,
    result_diff,
    snapshot_bytes,
    snapshot_text,
    worktree_text,
)
from baton.workspace.git import GitError, run_git
from baton.workspace.journal import JournalError, Recovered, clear_journal, recover_accept
from baton.workspace.scope import matches, normalize, refusal
from baton.workspace.snapshot import Snapshot, take_snapshot
from baton.workspace.worktree import Swept, create_worktree, remove_worktree, sweep_orphans

__all__ = [
    "AcceptResult",
    "GitError",
    "JournalError",
    "Recovered",
    "Redone",
    "Snapshot",
    "Swept",
    "accept",
    "clear_journal",
    "compute_diff",
    "create_worktree",
    "decode_text",
    "matches",
    "normalize",
    "recover_accept",
    "refusal",
    "remove_worktree",
    "result_diff",
    "run_git",
    "snapshot_bytes",
    "snapshot_text",
    "sweep_orphans",
    "take_snapshot",
    "worktree_text",
]
