"""The settings cache of a broker: settings per project folder, re-read when a file changes.

:class:`SettingsCache` loads a folder's settings on first use and keeps them; a watcher
(watchfiles, non-recursive, on the folders whose config files decide each cached entry)
drops and re-reads an entry when one of its files is written, created or removed — so an
edited ``.baton.toml`` takes effect without restarting the broker. Each second without an
event the watcher also compares the config files' ``stat`` with what was read, which catches
what inotify cannot see: a config folder created after the broker started (the user's
``~/.config/baton`` on first use), a config file that is a symlink edited at its target, and
a write while the watcher was restarting. A broken file keeps its error in the cache
(``get`` raises it, naming file and line) and the last good settings stay available to tasks
already running.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Mapping
from pathlib import Path

from baton.config.layers import PROJECT_FILE, PYPROJECT, ConfigError, user_config_path
from baton.config.profiles import Profile
from baton.config.settings import Settings, load_settings

log = logging.getLogger(__name__)

#: How often (ms) the watcher compares the config files' stat when no event came.
POLL_MS = 1000

#: A config file's identity as read: (mtime_ns, size, inode), or None when it is missing.
Stamp = tuple[tuple[str, tuple[int, int, int] | None], ...]


def _stat(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()  # follows a symlink: an edit of its target changes this
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size, st.st_ino)


class SettingsCache:
    """Settings per project folder, invalidated by a file watcher."""

    def __init__(
        self,
        *,
        profiles: Mapping[str, Profile] | None = None,
        default_worker: str | None = None,
        user_config: Path | None = None,
        on_change: Callable[[Path], None] | None = None,
    ) -> None:
        self._profiles = profiles  # kept by reference: a broker may add profiles later
        self._default_worker = default_worker
        self._user_config = user_config
        self._on_change = on_change
        self._entries: dict[Path, Settings | ConfigError] = {}
        self._good: dict[Path, Settings] = {}
        self._stamps: dict[Path, Stamp] = {}
        self._seen = self._fingerprint()
        self._watcher: asyncio.Task[None] | None = None
        self._restart = asyncio.Event()
        self._closed = False
        self._watching: frozenset[Path] = frozenset()
        #: Bumped after every reload caused by a file change (tests wait on it).
        self.generation = 0
        self.changed = asyncio.Condition()

    def _load(self, root: Path) -> Settings | ConfigError:
        try:
            settings = load_settings(
                root,
                profiles=self._profiles,
                default_worker=self._default_worker,
                user_config=self._user_config,
            )
        except ConfigError as exc:
            return exc
        self._good[root] = settings
        return settings

    def _fingerprint(self) -> tuple[tuple[str, int], ...]:
        return tuple((k, id(v)) for k, v in (self._profiles or {}).items())

    def get(self, root: Path | str) -> Settings:
        """The settings of ``root``; raises :class:`ConfigError` when a file is broken."""
        key = Path(root).resolve()
        if self._fingerprint() != self._seen:  # the broker's own profiles changed
            self._seen = self._fingerprint()
            self._entries.clear()
        entry = self._entries.get(key)
        if entry is None:
            entry = self._store(key)
            self._kick()
        if isinstance(entry, ConfigError):
            raise entry
        return entry

    def user_level(self) -> Settings | None:
        """The settings of no project: the user's config over the defaults (what user-only
        keys say); None while the user's config is broken. Read anew each time."""
        try:
            return load_settings(
                None,
                profiles=self._profiles,
                default_worker=self._default_worker,
                user_config=self._user_config,
            )
        except ConfigError:
            return None

    def last_good(self, root: Path | str) -> Settings | None:
        """The settings ``root`` had before its file broke (None if it never loaded)."""
        key = Path(root).resolve()
        with contextlib.suppress(ConfigError):
            return self.get(key)
        return self._good.get(key)

    def invalidate(self, changed: Path | None = None) -> list[Path]:
        """Re-read the entries ``changed`` (a file) may decide, or all; returns their roots."""
        roots = [
            root
            for root in self._entries
            if changed is None or changed.parent in self._folders(root)
        ]
        self._reload(roots)
        return roots

    def _reload(self, roots: list[Path]) -> None:
        for root in roots:
            entry = self._store(root)
            if isinstance(entry, ConfigError):
                log.error("settings of %s: %s", root, entry)
            if self._on_change is not None:
                self._on_change(root)

    def _names(self) -> tuple[str, ...]:
        return (PROJECT_FILE, PYPROJECT, (self._user_config or user_config_path()).name)

    def _stamp(self, folders: tuple[Path, ...]) -> Stamp:
        names = self._names()
        return tuple(
            (str(folder / name), _stat(folder / name)) for folder in folders for name in names
        )

    def _store(self, root: Path) -> Settings | ConfigError:
        """Load ``root``'s settings into the cache, with the stamp of the files they come from
        (taken before reading them: a write during the read shows at the next comparison)."""
        before = self._stamp(self._folders(root))
        entry = self._entries[root] = self._load(root)
        after = self._folders(root)
        known = {path for path, _ in before}
        extra = tuple(item for item in self._stamp(after) if item[0] not in known)
        self._stamps[root] = before + extra
        return entry

    def changed_on_disk(self) -> list[Path]:
        """Re-read the entries whose config files differ from what was read (stat); returns
        their roots."""
        roots = []
        for root, stamp in list(self._stamps.items()):
            now = self._stamp(self._folders(root))
            if dict(now) != dict(stamp):
                roots.append(root)
        self._reload(roots)
        return roots

    def _folders(self, root: Path) -> tuple[Path, ...]:
        entry = self._entries.get(root)
        if isinstance(entry, Settings):
            return entry.watched
        good = self._good.get(root)
        user = (self._user_config or user_config_path()).parent
        return (*(good.watched if good else ()), user, root)

    # -- the watcher ------------------------------------------------------------------------

    def _wanted(self) -> frozenset[Path]:
        folders = {f for root in self._entries for f in self._folders(root)}
        return frozenset(f for f in folders if f.is_dir())

    def _kick(self) -> None:
        if self._watcher is not None and self._wanted() != self._watching:
            self._restart.set()

    def start(self) -> None:
        """Start watching (needs a running event loop)."""
        if self._watcher is None:
            self._watcher = asyncio.get_running_loop().create_task(
                self._watch(), name="settings watcher"
            )

    async def close(self) -> None:
        self._closed = True
        self._restart.set()
        if self._watcher is not None:
            self._watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._watcher

    async def _watch(self) -> None:
        from watchfiles import awatch

        names = set(self._names())

        def only_config(_change: object, path: str) -> bool:
            return Path(path).name in names

        while not self._closed:
            self._restart.clear()
            self._watching = self._wanted()
            if not self._watching:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self._restart.wait(), POLL_MS / 1000)
                await self._compare()
                continue
            try:
                async for changes in awatch(
                    *sorted(self._watching),
                    watch_filter=only_config,
                    recursive=False,
                    debounce=50,
                    step=20,
                    stop_event=self._restart,
                    rust_timeout=POLL_MS,
                    yield_on_timeout=True,
                ):
                    if not changes:  # a second without events: compare the files' stat
                        await self._compare()
                        continue
                    for _, path in changes:
                        self.invalidate(Path(path))
                    await self._bump()
            except (OSError, RuntimeError) as exc:  # a watched folder vanished
                log.warning("settings watcher: %s", exc)
                await asyncio.sleep(0.5)

    async def _compare(self) -> None:
        if self.changed_on_disk():
            await self._bump()
        if self._wanted() != self._watching:  # a config folder appeared (or went)
            self._restart.set()

    async def _bump(self) -> None:
        async with self.changed:
            self.generation += 1
            self.changed.notify_all()

    async def wait_for_change(self, after: int, timeout: float = 10.0) -> int:
        """Wait until a file change was handled after generation ``after``; return the new one."""
        async with self.changed:
            await asyncio.wait_for(self.changed.wait_for(lambda: self.generation > after), timeout)
            return self.generation
