"""Snapshot: the exact state of the user's files a task starts from, kept as a git commit.

The snapshot is HEAD + uncommitted tracked changes + untracked non-ignored files + unsaved
editor buffers (overlays). It is built in a temporary index, so the user's index and work
tree are never touched, and kept alive by the ref ``refs/baton/snapshots/<task id>``.
File bytes are stored exactly as they are on disk: git's line-ending and filter attributes
are undone for Baton's trees (see :func:`stage_work_tree`).
A folder that is not a git repository is tracked in a private git directory under the
state home.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from baton.workspace.copied import COPY_MAX_FILES, Staged
from baton.workspace.git import GitError, common_dir_of, git_process, run_git, split_z
from baton.workspace.gitconfig import repo_config
from baton.workspace.head import read_top
from baton.workspace.indexfile import entry_count, may_name, read_index
from baton.workspace.objects import commit_tree, loose_objects, write_loose, write_tree
from baton.workspace.refs import update_ref
from baton.workspace.scope import normalize
from baton.workspace.warmseed import SEEDS, seed_of

SNAPSHOT_REF = "refs/baton/snapshots/"
RESULT_REF = "refs/baton/results/"
BRANCH_PREFIX = "baton/"

_TASK_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,99}$")
# Attributes that make git change bytes between the work tree and the object store.
_CONVERTING = ("text", "eol", "filter", "ident", "working-tree-encoding")
# What a privately tracked folder leaves out besides its own .gitignore files.
_PRIVATE_EXCLUDES = (
    ".git/",
    "node_modules/",
    "__pycache__/",
    ".venv/",
    ".mypy_cache/",
    ".pytest_cache/",
    ".ruff_cache/",
    ".DS_Store",
)


def check_task_id(task_id: str) -> str:
    """``task_id`` if it is safe in a branch name and a folder name; ValueError otherwise."""
    if not _TASK_ID.match(task_id) or ".." in task_id or task_id.endswith((".lock", ".")):
        raise ValueError(f"unusable task id for a branch or folder: {task_id!r}")
    return task_id


@dataclass(frozen=True)
class Snapshot:
    """A task's starting point: ``commit`` in the repository at ``git_dir`` for ``root``.

    ``root`` is the top of the work tree (file paths in diffs are relative to it);
    ``prefix`` is the folder the caller asked for, relative to ``root`` ("" when the same).
    ``base`` is the HEAD commit the snapshot sits on (None without one); ``private`` says
    the folder is not a git repository and Baton tracks it in a git directory of its own.
    ``staged``: what a small snapshot was made of, in the process that took it (never
    recorded), from which its checkout is copied (:mod:`baton.workspace.copied`).
    """

    root: Path
    git_dir: Path
    commit: str
    base: str | None
    private: bool
    notes: list[str] = field(default_factory=list)
    task_id: str = ""
    prefix: str = ""
    staged: Staged | None = field(default=None, compare=False, repr=False)

    @property
    def ref(self) -> str:
        """The ref that keeps the snapshot commit alive."""
        return SNAPSHOT_REF + self.task_id

    @property
    def result_ref(self) -> str:
        """The ref :func:`compute_diff` points at the worker's latest state."""
        return RESULT_REF + self.task_id

    @property
    def branch(self) -> str:
        return BRANCH_PREFIX + self.task_id

    def to_json(self) -> dict[str, Any]:
        return {
            "root": str(self.root),
            "gitDir": str(self.git_dir),
            "commit": self.commit,
            "base": self.base,
            "private": self.private,
            "notes": list(self.notes),
            "taskId": self.task_id,
            "prefix": self.prefix,
        }

    @classmethod
    def from_json(cls, obj: Mapping[str, Any]) -> Snapshot:
        return cls(
            root=Path(obj["root"]),
            git_dir=Path(obj["gitDir"]),
            commit=str(obj["commit"]),
            base=obj.get("base"),
            private=bool(obj.get("private", False)),
            notes=[str(n) for n in obj.get("notes", [])],
            task_id=str(obj.get("taskId", "")),
            prefix=str(obj.get("prefix", "")),
        )


def repo_key(path: Path) -> str:
    """A short stable name for a folder, used for private git directories."""
    return hashlib.sha256(str(path).encode("utf-8", "surrogateescape")).hexdigest()[:16]


def private_git_dir(root: Path, state_home: Path) -> Path:
    """The git directory (bare, created on first use) tracking a folder that has none."""
    git_dir = state_home / "repos" / repo_key(root)
    if not (git_dir / "HEAD").exists():
        git_dir.parent.mkdir(parents=True, exist_ok=True)
        run_git(["init", "--bare", "-q", str(git_dir)], git_dir.parent)
        info = git_dir / "info"
        info.mkdir(exist_ok=True)
        (info / "exclude").write_text("\n".join(_PRIVATE_EXCLUDES) + "\n", encoding="utf-8")
        # Highest-precedence attributes: store and check out bytes unchanged.
        (info / "attributes").write_text(
            "* -text -eol -filter -ident -working-tree-encoding\n", encoding="utf-8"
        )
        (git_dir / "baton-root").write_text(str(root), encoding="utf-8")
    return git_dir


def _register(state_home: Path, common_dir: Path) -> None:
    """Remember a repository Baton made refs in, so sweep_orphans can find it later."""
    known = state_home / "known-repos"
    known.mkdir(parents=True, exist_ok=True)
    entry = known / repo_key(common_dir)
    if not entry.exists():
        entry.write_text(str(common_dir), encoding="utf-8")


@dataclass(frozen=True)
class _Place:
    """Where a folder's files are tracked, as one ``rev-parse`` says."""

    top: Path  # the work tree's top
    git_dir: Path
    common: Path  # the common git dir
    private: bool
    notes: list[str]
    base: str | None = None  # HEAD's commit; None when unborn (or private)
    detached: bool = False


_WHERE = ["rev-parse", "--path-format=absolute", "--show-toplevel", "--git-dir", "--git-common-dir"]


def _locate(root: Path, state_home: Path) -> _Place:
    """Where ``root`` is tracked, with HEAD's commit and whether it is detached: read from
    the files of a repository whose top it is (:func:`~baton.workspace.head.read_top`), else
    one git process (two in a repository with no commit yet)."""
    read = read_top(root)
    if read is not None:
        return _Place(root, read.git_dir, read.git_dir, False, [], read.base, read.detached)
    proc = git_process(
        [*_WHERE, "HEAD^{commit}", "--symbolic-full-name", "HEAD", "--"], root, ok_codes=(0, 128)
    )
    lines = proc.stdout.decode("utf-8", "surrogateescape").splitlines()
    if proc.returncode == 0 and len(lines) >= 5:
        top, own, common, base, head = lines[:5]
        return _Place(Path(top), Path(own), Path(common), False, [], base, head == "HEAD")
    try:  # no commit yet, or no repository: ask again without HEAD
        top, own, common = run_git(_WHERE, root).splitlines()[:3]
        return _Place(Path(top), Path(own), Path(common), False, [])
    except (GitError, ValueError) as exc:
        private = private_git_dir(root, state_home)
        why = "not a git repository"
        stderr = getattr(exc, "stderr", "")
        if stderr and "not a git repository" not in stderr:
            why = f"git cannot use this folder ({stderr.splitlines()[0]})"
        notes = [f"{why}: tracked privately in {private}"]
        return _Place(root, private, private, True, notes)


def index_entries(cwd: Path, **kw: Any) -> dict[str, tuple[str, str]]:
    """Every stage-0 entry of the index git uses at ``cwd``: path → (mode, sha)."""
    entries: dict[str, tuple[str, str]] = {}
    for rec in split_z(run_git(["ls-files", "-s", "-z"], cwd, **kw)):
        meta, _, path = rec.partition("\t")
        mode, sha = meta.split(" ")[:2]
        entries[path] = (mode, sha)
    return entries


def _read_staged(env: Mapping[str, str], common_dir: Path | None) -> dict[str, tuple[str, str]]:
    """The entries of the index ``env`` names, read in-process; {} when git must say."""
    index = env.get("GIT_INDEX_FILE")
    if not index or common_dir is None:
        return {}
    if repo_config(common_dir).get("extensions.objectformat", "sha1").lower() != "sha1":
        return {}
    return read_index(Path(index)) or {}


def _may_have_attributes(cwd: Path, paths: Iterable[str], common_dir: Path | None) -> bool:
    """False only when no attributes file can apply (no check-attr run is needed)."""
    if any(p == ".gitattributes" or p.endswith("/.gitattributes") for p in paths):
        return True
    return _outside_attributes(common_dir)


def _outside_attributes(common_dir: Path | None) -> bool:
    """False only when no attributes file outside the tree can apply: the repository's
    ``info/attributes``, the user's and the system's, ``core.attributesFile``."""
    if common_dir is None or (common_dir / "info" / "attributes").exists():
        return True
    xdg = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    if (Path(xdg) / "git" / "attributes").exists() or Path("/etc/gitattributes").exists():
        return True
    return bool(repo_config(common_dir).get("core.attributesfile"))


def converted_paths(
    cwd: Path,
    entries: Mapping[str, tuple[str, str]],
    *,
    common_dir: Path | None,
    **kw: Any,
) -> list[str]:
    """Regular files among ``entries`` whose attributes let git change their bytes."""
    regular = [p for p, (mode, _) in entries.items() if mode in ("100644", "100755")]
    if not regular or not _may_have_attributes(cwd, entries, common_dir):
        return []
    out = split_z(
        run_git(
            ["check-attr", "-z", "--stdin", *_CONVERTING],
            cwd,
            input="\0".join(regular) + "\0",
            **kw,
        )
    )
    found: dict[str, None] = {}
    for i in range(0, len(out) - 2, 3):
        path, value = out[i], out[i + 2]
        if value in ("unspecified", "unset") or "\n" in path:
            continue
        with contextlib.suppress(OSError):
            if stat.S_ISREG(os.lstat(cwd / path).st_mode):
                found[path] = None
    return list(found)


def exact_fixup(
    cwd: Path,
    env: Mapping[str, str],
    *,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    common_dir: Path | None = None,
) -> int:
    """Re-store, byte for byte, the index entries git converted on the way in.

    ``git add`` applies ``text``/``eol``/``filter``/``ident`` attributes (``* text=auto``
    turns CRLF into LF). For every path where such an attribute is set, the file is hashed
    again with ``--no-filters`` and the index entry replaced. Returns how many were redone.
    """
    kw: dict[str, Any] = {"git_dir": git_dir, "work_tree": work_tree, "env": env}
    index = env.get("GIT_INDEX_FILE")
    if (
        index
        and not _outside_attributes(common_dir)
        and not may_name(Path(index), b".gitattributes")
    ):
        return 0  # no attributes file can apply: found without parsing thousands of entries
    entries = _read_staged(env, common_dir) or index_entries(cwd, **kw)
    touched = converted_paths(cwd, entries, common_dir=common_dir, **kw)
    if not touched:
        return 0
    shas = run_git(
        ["hash-object", "-w", "--no-filters", "--stdin-paths"],
        cwd,
        input="\n".join(touched) + "\n",
        **kw,
    ).split()
    info = "".join(f"{entries[p][0]} {sha}\t{p}\0" for p, sha in zip(touched, shas, strict=True))
    run_git(["update-index", "-z", "--index-info"], cwd, input=info, **kw)
    return len(touched)


def stage_work_tree(
    cwd: Path,
    index_file: Path,
    *,
    seed_index: Path | None,
    seed_tree: str | None,
    git_dir: Path | None = None,
    work_tree: Path | None = None,
    common_dir: Path | None = None,
) -> None:
    """Fill ``index_file`` with the whole work tree at ``cwd`` (tracked, changed, untracked).

    The index starts as a copy of ``seed_index`` (its stat data makes ``add -A`` fast) or,
    without one, as ``seed_tree`` (or empty).
    """
    env = {"GIT_INDEX_FILE": str(index_file)}
    kw: dict[str, Any] = {"git_dir": git_dir, "work_tree": work_tree, "env": env}

    def seed_from_tree() -> None:
        index_file.unlink(missing_ok=True)
        run_git(["read-tree", seed_tree or "--empty"], cwd, **kw)

    try:
        if seed_index is None:
            raise FileNotFoundError("no seed")
        shutil.copy2(seed_index, index_file)
    except FileNotFoundError:  # none, or a warm copy replaced or cleaned meanwhile
        seed_from_tree()
    try:
        run_git(["add", "-A"], cwd, **kw)
    except GitError:
        if seed_index is None:
            raise
        seed_from_tree()  # an index git cannot use as a seed (odd extension): start over
        run_git(["add", "-A"], cwd, **kw)
    exact_fixup(cwd, env, git_dir=git_dir, work_tree=work_tree, common_dir=common_dir)


def _index_modes(top: Path, git_dir: Path, env: Mapping[str, str]) -> dict[str, str]:
    """The mode of every entry of the index ``env`` names: read in-process, else from git."""
    staged = read_index(Path(env["GIT_INDEX_FILE"])) if env.get("GIT_INDEX_FILE") else None
    if staged is not None:
        return {path: mode for path, (mode, _) in staged.items()}
    modes: dict[str, str] = {}
    for rec in split_z(run_git(["ls-files", "-s", "-z"], top, git_dir=git_dir, env=env)):
        meta, _, path = rec.partition("\t")
        modes[path] = meta.split(" ", 1)[0]
    return modes


def _add_overlays(
    top: Path, git_dir: Path, env: Mapping[str, str], prefix: str, overlays: Mapping[str, str]
) -> dict[str, bytes]:
    """Stage the unsaved texts ``overlays`` (path under ``prefix`` → text) in the index
    ``env`` names, each file's mode kept: the blobs written in-process where git would write
    the same loose objects (else by ``hash-object``), then one ``update-index``. The bytes
    staged, by their path in the index."""
    common = common_dir_of(git_dir)
    modes = _index_modes(top, git_dir, env)
    own = loose_objects(common)
    lines: list[str] = []
    staged: dict[str, bytes] = {}
    for rel, text in overlays.items():
        clean = normalize(f"{prefix}/{rel}" if prefix else rel)
        if clean is None or ".git" in clean.split("/"):
            raise ValueError(f"overlay path outside the workspace: {rel!r}")
        data = text.encode("utf-8", "surrogateescape")
        if own:
            sha = write_loose(common, "blob", data)
        else:
            sha = run_git(
                ["hash-object", "-w", "--no-filters", "--stdin"], top, git_dir=git_dir, input=data
            ).strip()
        mode = modes.get(clean, "100644")
        if mode not in ("100644", "100755"):
            mode = "100644"
        lines.append(f"{mode} {sha}\t{clean}\0")
        staged[clean] = data
    if lines:
        run_git(
            ["update-index", "-z", "--index-info"],
            top,
            git_dir=git_dir,
            env=env,
            input="".join(lines),
        )
    return staged


def take_snapshot(
    root: Path,
    task_id: str,
    *,
    overlays: Mapping[str, str] | None = None,
    state_home: Path,
) -> Snapshot:
    """Record the user's files under ``root`` (plus ``overlays``: path → unsaved text)."""
    check_task_id(task_id)
    root = root.resolve()
    if not root.is_dir():
        raise FileNotFoundError(f"not a folder: {root}")
    state_home.mkdir(parents=True, exist_ok=True)
    place = _locate(root, state_home)
    top, git_dir, common, private, notes = (
        place.top, place.git_dir, place.common, place.private, place.notes
    )  # fmt: skip
    prefix = root.relative_to(top).as_posix() if root != top else ""
    if prefix:
        notes.append(f"{root} is inside the git repository at {top}")
    work_tree = top if private else None
    base = place.base
    if not private:
        if base is None:
            notes.append("the repository has no commit yet: the snapshot has no parent")
        elif place.detached:
            notes.append(f"detached HEAD at {base[:12]}")
    # A private folder's index is Baton's own; a repository's, the user's or Baton's warm
    # copy of it (:mod:`baton.workspace.warmseed`).
    seed_index = git_dir / "index" if private else seed_of(git_dir, state_home / SEEDS)
    tmp_root = state_home / "tmp"
    tmp_root.mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="snapshot-", dir=tmp_root) as tmp:
        index = Path(tmp) / "index"
        stage_work_tree(
            top,
            index,
            seed_index=seed_index,
            seed_tree=base,
            git_dir=git_dir,
            work_tree=work_tree,
            common_dir=common,
        )
        env = {"GIT_INDEX_FILE": str(index)}
        if private:
            # Baton's own index for this folder: keeps the stat cache for the next snapshot.
            shutil.copy2(index, Path(tmp) / "keep")
            os.replace(Path(tmp) / "keep", seed_index)
        texts = _add_overlays(top, git_dir, env, prefix, overlays) if overlays else {}
        count = entry_count(index)  # a large index is not parsed only to be found large
        entries = None
        if count is not None and count <= COPY_MAX_FILES and loose_objects(common):
            entries = read_index(index, plain=True)
        tree = write_tree(top, git_dir, index, entries)
    parents = [base] if base else []
    commit = commit_tree(top, git_dir, tree, parents, f"Baton snapshot for task {task_id}")
    update_ref(git_dir, SNAPSHOT_REF + task_id, commit)
    _register(state_home, common)
    return Snapshot(
        root=top,
        git_dir=git_dir,
        commit=commit,
        base=base,
        private=private,
        notes=notes,
        task_id=task_id,
        prefix=prefix,
        staged=Staged(entries, texts) if entries is not None else None,
    )
