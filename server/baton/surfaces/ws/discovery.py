"""Discovery files: how clients find the brokers running for this user.

One JSON file per broker, ``broker-<pid>.json`` in :func:`baton.store.runtime_dir`, holding
pid, port, token, workspace roots, version and the state home. The folder is 0700 and each
file 0600, written to a private temporary file and renamed into place (a reader never sees
half a file), and removed when the broker exits. A file whose broker is gone (pid dead or
reused) is stale: readers skip it and remove it when they can.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from baton.process.procfs import proc_available, proc_stat
from baton.store.paths import runtime_dir
from baton.surfaces import private_files

PREFIX = "broker-"


@dataclass(frozen=True, slots=True)
class Discovery:
    """What a client needs to reach one broker."""

    pid: int
    port: int
    token: str
    roots: list[str] = field(default_factory=list)
    version: str = ""
    home: str = ""  # the state home (database) the broker serves
    broker: str = ""  # the supervisor's id, ``pid:create_time``
    headless: bool = False  # ``baton serve`` (True) or inside ``baton lsp`` (False)
    started_at: float = 0.0

    @property
    def url(self) -> str:
        return f"ws://127.0.0.1:{self.port}"

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, obj: dict[str, Any]) -> Discovery:
        roots = obj.get("roots") or []
        return cls(
            pid=int(obj["pid"]),
            port=int(obj["port"]),
            token=str(obj["token"]),
            roots=[str(r) for r in roots],
            version=str(obj.get("version", "")),
            home=str(obj.get("home", "")),
            broker=str(obj.get("broker", "")),
            headless=bool(obj.get("headless", False)),
            started_at=float(obj.get("started_at", 0.0)),
        )

    def alive(self) -> bool:
        """The broker's process still runs (and is the same process: pids are reused)."""
        if proc_available():  # Linux: /proc, as a short command cannot afford psutil
            found = proc_stat(self.pid)
            if found is None or found.state == "Z":
                return False
            return self._same_start(found.create_time)
        import psutil

        try:
            proc = psutil.Process(self.pid)
            if proc.status() == psutil.STATUS_ZOMBIE:
                return False
            return self._same_start(float(proc.create_time()))
        except psutil.Error:
            return False

    def _same_start(self, created: float) -> bool:
        if not (self.broker and ":" in self.broker):
            return True
        try:
            return abs(created - float(self.broker.split(":", 1)[1])) < 0.01
        except ValueError:
            return False

    def serves(self, folder: Path) -> int:
        """How closely this broker serves ``folder``: the length of the deepest root holding
        it, or -1 when none does."""
        best = -1
        for root in self.roots:
            r = Path(root)
            if folder == r or r in folder.parents:
                best = max(best, len(r.parts))
        return best


def write(record: Discovery, folder: Path | None = None) -> Path:
    """Write (or replace) the broker's discovery file atomically; returns its path."""
    where = folder if folder is not None else runtime_dir()
    return private_files.write_json(where / f"{PREFIX}{record.pid}.json", record.to_json())


remove = private_files.remove


def read(path: Path) -> Discovery | None:
    """One discovery file, or None when it is unreadable or malformed."""
    try:
        obj = json.loads(path.read_text(encoding="utf-8"))
        return Discovery.from_json(obj) if isinstance(obj, dict) else None
    except (OSError, ValueError, KeyError, TypeError):
        return None


def live_brokers(folder: Path | None = None, *, home: Path | None = None) -> list[Discovery]:
    """The brokers whose discovery files are current, newest first.

    ``home`` keeps only the brokers serving that state home. Stale files are removed.
    """
    where = folder if folder is not None else runtime_dir()
    found: list[Discovery] = []
    try:
        paths = sorted(where.glob(f"{PREFIX}*.json"))
    except OSError:
        return []
    for path in paths:
        rec = read(path)
        if rec is None:
            continue
        if not rec.alive():
            remove(path)
            continue
        if home is not None and rec.home and Path(rec.home) != home:
            continue
        found.append(rec)
    found.sort(key=lambda r: r.started_at, reverse=True)
    return found


def broker_for(
    folder: Path, folder_dir: Path | None = None, *, home: Path | None = None
) -> Discovery | None:
    """The broker that serves ``folder``: the deepest matching root wins, then the newest."""
    best: tuple[int, Discovery] | None = None
    for rec in live_brokers(folder_dir, home=home):
        depth = rec.serves(folder)
        if depth >= 0 and (best is None or depth > best[0]):
            best = (depth, rec)
    return best[1] if best else None


def project_root(folder: Path) -> Path:
    """The top of the git work tree holding ``folder``, else ``folder`` itself."""
    folder = folder.resolve()
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder
