"""A revision turn: the reviewer's comments on a proposed change, said back to its agent.

The user comments on a hunk, or on lines, of a task in review, and may give reasons for the
hunks they reject; :func:`revision_prompt` quotes each with its file and lines and the
proposed text, for the same session's next turn. When that turn's result is back,
:func:`interdiff` sorts its hunks against the previous review's: a hunk with the same id is
the same change (ids are derived from the path and the texts), so its decision stands; the
others are new since the last review.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from baton.core.diff import FileDiff, Hunk, HunkState, apply_hunks
from baton.core.relocate import at_place


@dataclass(frozen=True, slots=True)
class Comment:
    """A remark on ``path`` lines ``start`` to ``end`` (1-based, inclusive), or on one hunk."""

    path: str
    start: int
    end: int
    text: str
    hunk_id: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "path": self.path,
            "start": self.start,
            "end": self.end,
            "text": self.text,
        }
        if self.hunk_id:
            out["hunkId"] = self.hunk_id
        return out


@dataclass(frozen=True, slots=True)
class Interdiff:
    """The hunks of a revised result against the previous review's."""

    turn: int
    new: tuple[str, ...]  # hunk ids not in the previous review: changed since then
    kept: tuple[str, ...]  # the same change as before; its decision stands
    dropped: tuple[str, ...]  # in the previous review, gone from this result

    def to_json(self) -> dict[str, Any]:
        return {
            "turn": self.turn,
            "new": list(self.new),
            "kept": list(self.kept),
            "dropped": list(self.dropped),
        }


def proposed_lines(h: Hunk) -> tuple[int, int]:
    """The lines (1-based, inclusive) a hunk's new text occupies in the proposed file; for a
    pure deletion, the line it follows twice."""
    if h.new_count == 0:
        return h.new_start, h.new_start
    return h.new_start, h.new_start + h.new_count - 1


def _where(path: str, start: int, end: int) -> str:
    return f"{path}:{start}" if start == end else f"{path}:{start}-{end}"


def _quote(text: str) -> list[str]:
    if not text:
        return ["    (nothing: the lines are removed)"]
    return ["    " + line for line in text.splitlines()]


def _hunk_lines(h: Hunk) -> list[str]:
    out = ["  what you proposed there:", *_quote(h.new_text)]
    if h.old_text:
        out += ["  in place of:", *_quote(h.old_text)]
    return out


def revision_prompt(
    comments: Sequence[Comment],
    reasons: Sequence[tuple[Hunk, str, str]],
    hunks: dict[str, tuple[str, Hunk]],
    quoted: dict[int, str] | None = None,
) -> str:
    """The next turn's prompt: each comment with its file:lines and the lines it is about,
    then each rejected hunk (hunk, path, reason) with its reason.

    ``hunks`` maps hunk id → (path, hunk) for the comments that name one; ``quoted`` maps
    a comment's index → the lines it covers, for comments on lines outside any hunk.
    """
    out = ["The user reviewed your change and asks for a revision."]
    if comments:
        out += ["", "Comments on the proposed change:"]
    for n, c in enumerate(comments, 1):
        found = hunks.get(c.hunk_id or "")
        if found is not None:
            path, h = found
            start, end = proposed_lines(h)
            out += ["", f"{n}. {_where(path, start, end)}: {c.text}", *_hunk_lines(h)]
        else:
            out += ["", f"{n}. {_where(c.path, c.start, c.end)}: {c.text}"]
            lines = (quoted or {}).get(n - 1)
            if lines:
                out += ["  the lines:", *_quote(lines)]
    if reasons:
        out += [
            "",
            "Hunks the user rejected (not applied; do not propose them again as they were):",
        ]
    for h, path, why in reasons:
        start, end = proposed_lines(h)
        out += ["", f"- {_where(path, start, end)}: {why or 'rejected'}", *_hunk_lines(h)]
    out += [
        "",
        "Hunks the user already accepted are in their files; change them only where a comment "
        "asks. Edit the files in your working folder, then stop.",
    ]
    return "\n".join(out) + "\n"


def reviewed(files: Iterable[FileDiff]) -> dict[str, str]:
    """Each hunk's decision in a review (id → state), to compare the next result with."""
    return {h.id: str(h.state) for f in files for h in f.hunks}


def interdiff(turn: int, before: Iterable[str], files: Iterable[FileDiff]) -> Interdiff:
    """Sort the hunks of ``files`` against the ids of the previous review, ``before``."""
    earlier = set(before)
    now = [h.id for f in files for h in f.hunks]
    return Interdiff(
        turn=turn,
        new=tuple(h for h in now if h not in earlier),
        kept=tuple(h for h in now if h in earlier),
        dropped=tuple(sorted(earlier - set(now))),
    )


def nothing_to_review(since: Interdiff, files: Iterable[FileDiff]) -> str | None:
    """What to tell the user when a revision turn brought nothing to decide: it changed
    nothing (the same hunks as the review it answers), or no hunk is left pending (the agent
    reverted its change, or only decided hunks remain); None when there is something to
    review. The sentence is said in the editors and the task's transcript."""
    hunks = [h for f in files for h in f.hunks]
    pending = any(h.state == HunkState.PENDING for h in hunks)
    turn = f"the revision (turn {since.turn})"
    if not since.new and not since.dropped:
        return f"{turn} changed nothing" + ("" if pending else "; no hunks left to review")
    if not hunks:
        return f"{turn} left no hunks: the agent's result has no change any more"
    if not pending:
        return f"{turn} left no hunks pending; every hunk left is decided"
    return None


def _span(h: Hunk) -> tuple[int, int]:
    start = h.old_start - 1 if h.old_count else h.old_start
    return start, start + h.old_count


def over_accepted(hunks: Iterable[Hunk], accepted: Sequence[Hunk], base: str) -> dict[str, str]:
    """The pending hunks of a revised result that rewrite hunks accepted before the
    revision: hunk id → the lines at its place as those accepts left them (what the user's
    file holds there). All are against the snapshot text ``base``; ``accepted`` are the
    accepted hunks the new result no longer has. Such a hunk is a change of the accepted
    lines, not a conflict with them: it replaces them while they still are those lines.
    Only a hunk whose lines take in each accepted hunk it meets whole qualifies, so no
    accepted line outside it is ever dropped."""
    out: dict[str, str] = {}
    for h in hunks:
        if h.whole_file or h.state != HunkState.PENDING:
            continue
        first, end = _span(h)
        meets = [a for a in accepted if _span(a)[0] <= end and first <= _span(a)[1]]
        if not meets or any(not (first <= _span(a)[0] and _span(a)[1] <= end) for a in meets):
            continue
        try:
            text = apply_hunks(base, meets)
        except ValueError:  # not hunks of this text
            continue
        seen = at_place(h, base, text)
        if seen is not None:
            out[h.id] = seen
    return out


def comments_from_json(raw: Any) -> list[Comment]:
    """Comments as the protocol sends them: ``[{path, start, end?, text, hunkId?}]``
    (lines 1-based, inclusive); ValueError saying what is wrong."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise ValueError("comments: a list of {path, start, end, text, hunkId}")
    out = []
    for n, c in enumerate(raw):
        if not isinstance(c, dict):
            raise ValueError(f"comments[{n}]: an object {{path, start, end, text, hunkId}}")
        path, text, hunk = c.get("path"), c.get("text"), c.get("hunkId")
        start: Any = c.get("start", 1)
        end: Any = c.get("end", start)
        if not isinstance(path, str) or not path:
            raise ValueError(f"comments[{n}].path: the file's path relative to the root")
        if not isinstance(text, str) or not text.strip():
            raise ValueError(f"comments[{n}].text: a non-empty string")
        if not all(isinstance(v, int) and not isinstance(v, bool) for v in (start, end)):
            raise ValueError(f"comments[{n}].start/end: 1-based line numbers")
        if hunk is not None and (not isinstance(hunk, str) or not hunk):
            raise ValueError(f"comments[{n}].hunkId: a hunk id")
        out.append(Comment(path, int(start), int(end), text, hunk))
    return out


def rejections_from_json(raw: Any) -> dict[str, str]:
    """Reasons for rejected hunks: ``[{hunkId, reason}]`` → hunk id → reason."""
    if raw is None:
        return {}
    if not isinstance(raw, list):
        raise ValueError("rejections: a list of {hunkId, reason}")
    out: dict[str, str] = {}
    for n, r in enumerate(raw):
        hunk = r.get("hunkId") if isinstance(r, dict) else None
        reason = r.get("reason", "") if isinstance(r, dict) else None
        if not isinstance(hunk, str) or not hunk or not isinstance(reason, str):
            raise ValueError(f"rejections[{n}]: an object {{hunkId, reason}}")
        out[hunk] = reason
    return out
