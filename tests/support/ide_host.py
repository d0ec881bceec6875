"""A scripted `IdeHost` for tests: it records what the IDE server asked and decides each diff
the way the test says (at once through `policy`, or later through `decide`)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field

from baton.surfaces.ide import (
    ClosedBy,
    DiffDecision,
    DiffRequest,
    DiffUnavailable,
    FileDiagnostics,
    IdeClient,
    IdeHost,
    OpenEditor,
    OpenFileRequest,
    Selection,
)

#: Decides a diff at once (a DiffDecision), refuses it (DiffUnavailable), or leaves it pending
#: for `RecordingHost.decide` (None).
Policy = Callable[[DiffRequest], DiffDecision | DiffUnavailable | None]


@dataclass
class RecordingHost(IdeHost):
    policy: Policy | None = None
    requests: list[DiffRequest] = field(default_factory=list)
    closed_tabs: list[tuple[str, ClosedBy]] = field(default_factory=list)
    cancelled: list[str] = field(default_factory=list)  # open_diff calls that were cancelled
    connected: list[IdeClient] = field(default_factory=list)
    disconnected: list[IdeClient] = field(default_factory=list)
    # what the optional providers answer
    files: list[FileDiagnostics] = field(default_factory=list)
    selection: Selection | None = None
    editors: list[OpenEditor] = field(default_factory=list)
    dirty: dict[str, bool] = field(default_factory=dict)
    opened: list[OpenFileRequest] = field(default_factory=list)
    diagnostics_asked: list[str | None] = field(default_factory=list)
    slow: float = 0.0  # seconds every provider takes
    _pending: dict[str, asyncio.Future[DiffDecision]] = field(default_factory=dict)
    _changed: asyncio.Event = field(default_factory=asyncio.Event)

    # -- the diff lifecycle ------------------------------------------------------------------

    async def open_diff(self, request: DiffRequest) -> DiffDecision:
        self.requests.append(request)
        self._changed.set()
        if self.policy is not None:
            verdict = self.policy(request)
            if isinstance(verdict, DiffUnavailable):
                raise verdict
            if verdict is not None:
                return verdict
        future: asyncio.Future[DiffDecision] = asyncio.get_running_loop().create_future()
        self._pending[request.tab_name] = future
        try:
            return await future
        except asyncio.CancelledError:
            self.cancelled.append(request.tab_name)
            self._changed.set()
            raise
        finally:
            if self._pending.get(request.tab_name) is future:
                del self._pending[request.tab_name]

    def closed(self, tab_name: str, by: ClosedBy) -> None:
        self.closed_tabs.append((tab_name, by))
        self._changed.set()

    def client_connected(self, client: IdeClient) -> None:
        self.connected.append(client)
        self._changed.set()

    def client_disconnected(self, client: IdeClient) -> None:
        self.disconnected.append(client)
        self._changed.set()

    def decide(self, tab_name: str, decision: DiffDecision) -> None:
        self._pending[tab_name].set_result(decision)

    def pending(self) -> list[str]:
        return [name for name, f in self._pending.items() if not f.done()]

    async def until(self, check: Callable[[], bool], timeout: float = 10.0) -> None:
        """Wait until `check()` holds (re-checked whenever the host records something)."""
        async with asyncio.timeout(timeout):
            while not check():
                self._changed.clear()
                try:
                    await asyncio.wait_for(self._changed.wait(), 0.2)
                except TimeoutError:
                    pass

    async def next_request(self, count: int = 1, timeout: float = 10.0) -> DiffRequest:
        """The `count`-th diff request, once it arrived."""
        await self.until(lambda: len(self.requests) >= count, timeout)
        return self.requests[count - 1]

    async def closed_by(self, tab_name: str, timeout: float = 10.0) -> ClosedBy:
        """How the tab was closed, once it was."""
        await self.until(lambda: any(name == tab_name for name, _ in self.closed_tabs), timeout)
        return next(by for name, by in self.closed_tabs if name == tab_name)

    # -- the optional providers --------------------------------------------------------------

    async def diagnostics(self, uri: str | None) -> list[FileDiagnostics]:
        self.diagnostics_asked.append(uri)
        await asyncio.sleep(self.slow)
        return [f for f in self.files if uri is None or f.uri == uri]

    async def current_selection(self) -> Selection | None:
        await asyncio.sleep(self.slow)
        return self.selection

    async def latest_selection(self) -> Selection | None:
        return self.selection

    async def open_editors(self) -> list[OpenEditor]:
        return list(self.editors)

    async def document_dirty(self, file_path: str) -> bool | None:
        return self.dirty.get(file_path)

    async def save_document(self, file_path: str) -> bool | None:
        if file_path not in self.dirty:
            return None
        self.dirty[file_path] = False
        return True

    async def open_file(self, request: OpenFileRequest) -> bool:
        self.opened.append(request)
        return True
