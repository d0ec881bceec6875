"""What the IDE server asks of the editor side: the :class:`IdeHost` a caller implements.

Claude Code (the CLI in a terminal) calls tools on "the IDE"; the server turns each call into
one method of the host. Only two are required: :meth:`IdeHost.open_diff` (show a proposed edit
and wait for the user's decision) and :meth:`IdeHost.closed` (the diff's tab is gone). The other
methods have safe defaults (no editor state: no diagnostics, no selection, nothing open), so a
host overrides only what it can answer.

The tab lifecycle, which the server guarantees:

- every :class:`DiffRequest` given to ``open_diff`` is followed by exactly one
  ``closed(tab_name, by)`` call for its tab, whether or not the host decided it;
- when the tab closes while ``open_diff`` is still running, that call is cancelled first (the
  ``CancelledError`` lands at the host's next ``await``), then ``closed`` is called;
- ``by`` says who closed it: ``"cli"`` (Claude Code closed the tab: after writing an accepted
  diff, or because the user answered in the terminal first), ``"replaced"`` (a new diff came with
  the same tab name), ``"disconnect"`` (the CLI's connection dropped) or ``"shutdown"`` (the
  server is closing).
"""

from __future__ import annotations

import abc
import os
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import quote

from baton.errors import Unavailable

ClosedBy = Literal["cli", "replaced", "disconnect", "shutdown"]
Severity = Literal["Error", "Warning", "Information", "Hint"]

_LSP_SEVERITY: dict[int, Severity] = {1: "Error", 2: "Warning", 3: "Information", 4: "Hint"}


def file_uri(path: str) -> str:
    """``file://`` URI of an absolute path, as VS Code writes them."""
    return "file://" + quote(path, safe="/:@!$&'()*+,;=-._~")


@dataclass(frozen=True, slots=True)
class DiffRequest:
    """One proposed edit: the whole new contents of a file, shown as a diff until decided.

    ``old_contents`` is the file as it was on disk when the request arrived (None when the file
    did not exist or could not be read as a regular file: a new file for the CLI's Write).
    ``client_pid`` is the pid of the Claude Code process that asked, when it said so.
    """

    tab_name: str
    old_file_path: str
    new_file_path: str
    new_file_contents: str
    old_contents: str | None
    client_pid: int | None = None

    @property
    def is_new_file(self) -> bool:
        return self.old_contents is None


@dataclass(frozen=True, slots=True)
class DiffDecision:
    """The user's answer to a :class:`DiffRequest`.

    ``saved`` holds the final contents when the edit is accepted (they may differ from the
    proposal: the user may have edited it; the CLI writes exactly these contents and tells the
    model the user modified them). ``None`` means rejected: the CLI writes nothing and stops the
    turn.
    """

    saved: str | None

    @classmethod
    def accept(cls, contents: str) -> DiffDecision:
        return cls(contents)

    @classmethod
    def reject(cls) -> DiffDecision:
        return cls(None)

    @property
    def accepted(self) -> bool:
        return self.saved is not None


class DiffUnavailable(Unavailable):
    """Raised by :meth:`IdeHost.open_diff` when it cannot show this diff (e.g. the file has
    unsaved edits in the editor). The CLI gets a tool error and keeps its own terminal dialog."""


@dataclass(frozen=True, slots=True)
class Position:
    """A 0-based line and character (UTF-16 code units, as in LSP)."""

    line: int
    character: int

    def to_json(self) -> dict[str, int]:
        return {"line": self.line, "character": self.character}


@dataclass(frozen=True, slots=True)
class Diagnostic:
    """One diagnostic in the shape Claude Code reads (VS Code's)."""

    message: str
    severity: Severity
    start: Position
    end: Position
    source: str | None = None
    code: str | int | None = None

    @classmethod
    def from_lsp(cls, diag: dict[str, Any]) -> Diagnostic:
        """From an LSP ``Diagnostic`` object (numeric severity, ``range`` with start/end)."""
        rng = diag.get("range") or {}
        start = rng.get("start") or {}
        end = rng.get("end") or start
        code = diag.get("code")
        return cls(
            message=str(diag.get("message", "")),
            severity=_LSP_SEVERITY.get(int(diag.get("severity") or 1), "Error"),
            start=Position(int(start.get("line", 0)), int(start.get("character", 0))),
            end=Position(int(end.get("line", 0)), int(end.get("character", 0))),
            source=str(diag["source"]) if diag.get("source") is not None else None,
            code=code if isinstance(code, str | int) and not isinstance(code, bool) else None,
        )

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "message": self.message,
            "severity": self.severity,
            "range": {"start": self.start.to_json(), "end": self.end.to_json()},
        }
        if self.source is not None:
            out["source"] = self.source
        if self.code is not None:
            out["code"] = self.code
        return out


@dataclass(frozen=True, slots=True)
class FileDiagnostics:
    """The diagnostics of one file; ``uri`` is a ``file://`` URI (see :func:`file_uri`)."""

    uri: str
    diagnostics: list[Diagnostic] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"uri": self.uri, "diagnostics": [d.to_json() for d in self.diagnostics]}


@dataclass(frozen=True, slots=True)
class Selection:
    """The selected text (or cursor, when ``start == end``) in an editor."""

    file_path: str
    text: str
    start: Position
    end: Position

    def to_json(self) -> dict[str, Any]:
        return {
            "success": True,
            "text": self.text,
            "filePath": self.file_path,
            "fileUrl": file_uri(self.file_path),
            "selection": {
                "start": self.start.to_json(),
                "end": self.end.to_json(),
                "isEmpty": self.start == self.end,
            },
        }


@dataclass(frozen=True, slots=True)
class OpenEditor:
    """One open editor tab."""

    file_path: str
    is_active: bool = False
    is_dirty: bool = False
    language_id: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "uri": file_uri(self.file_path),
            "isActive": self.is_active,
            "label": os.path.basename(self.file_path),
            "languageId": self.language_id,
            "isDirty": self.is_dirty,
        }


@dataclass(frozen=True, slots=True)
class OpenFileRequest:
    """``openFile``: show a file, optionally selecting from ``start_text`` to ``end_text``."""

    file_path: str
    preview: bool = False
    start_text: str = ""
    end_text: str = ""
    select_to_end_of_line: bool = False
    make_frontmost: bool = True


@dataclass(frozen=True, slots=True)
class IdeClient:
    """A connected Claude Code session, as it introduced itself."""

    id: int  # this server's number for the connection
    pid: int | None  # the CLI's process id (from ``ide_connected``)
    name: str  # clientInfo.name, e.g. "claude-code"
    version: str  # clientInfo.version
    protocol_version: str  # the MCP version agreed on


class IdeHost(abc.ABC):
    """The editor side of the IDE server. Subclass it; override what the editor can answer.

    Methods are called on the server's event loop; none may block it. The optional ones are
    given a time limit (``IdeLimits.provider_timeout``); ``open_diff`` has none (a review may
    take minutes).
    """

    @abc.abstractmethod
    async def open_diff(self, request: DiffRequest) -> DiffDecision:
        """Show the proposed edit and return the user's decision (may take minutes).

        Cancelled when the tab closes first (see the module docstring); raise
        :class:`DiffUnavailable` to refuse showing it.
        """

    @abc.abstractmethod
    def closed(self, tab_name: str, by: ClosedBy) -> None:
        """The diff tab ``tab_name`` is gone: stop showing it. Called once per opened diff."""

    def client_connected(self, client: IdeClient) -> None:
        """A Claude Code session connected: it sent ``ide_connected`` and got the tool list."""
        return None

    def client_disconnected(self, client: IdeClient) -> None:
        """That session's connection ended (its open diffs were closed just before)."""
        return None

    async def diagnostics(self, uri: str | None) -> list[FileDiagnostics]:
        """Diagnostics of the file at ``uri`` (a ``file://`` URI), or of every file."""
        return []

    async def current_selection(self) -> Selection | None:
        """The selection in the active editor; None when no editor is active."""
        return None

    async def latest_selection(self) -> Selection | None:
        """The most recent selection, even if its editor is no longer active."""
        return None

    async def open_editors(self) -> list[OpenEditor]:
        return []

    async def workspace_folders(self) -> list[str] | None:
        """The folders open in the editor; None to use those the server was started with."""
        return None

    async def document_dirty(self, file_path: str) -> bool | None:
        """Whether the open document has unsaved changes; None when it is not open."""
        return None

    async def save_document(self, file_path: str) -> bool | None:
        """Save the open document; True when saved, None when it is not open."""
        return None

    async def open_file(self, request: OpenFileRequest) -> bool:
        """Show a file in the editor; True when it was opened."""
        return False
