"""In-process git: the index reader gives what ``git ls-files -s`` gives (or declines), a commit
written in-process is the one ``git commit-tree`` writes, and a checkout's repository made
in-process is the one ``git init`` makes."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from baton.workspace.git import IDENTITY
from baton.workspace.indexfile import read_index
from baton.workspace.objects import commit_body, commit_tree, write_loose
from baton.workspace.skeleton import init_repository as _init
from baton.workspace.snapshot import index_entries
from tests.conftest import git


def _fill(root: Path) -> None:
    (root / "a.txt").write_text("a\n")
    deep = root / "dir" / ("long-" * 30)  # a path longer than most, and a shared prefix
    deep.mkdir(parents=True)
    (deep / "b.txt").write_text("b\n")
    (deep / "c.txt").write_text("c\n")
    (root / "run.sh").write_text("#!/bin/sh\n")
    (root / "run.sh").chmod(0o755)
    (root / "ünïcode name.txt").write_text("u\n")
    os.symlink("a.txt", root / "link")
    git(root, "add", "-A")
    (root / "later.txt").write_text("intent to add\n")
    git(root, "add", "-N", "later.txt")  # an extended entry (index version 3)


@pytest.mark.parametrize("version", [2, 3, 4])
def test_read_index_matches_ls_files(repo: Path, version: int) -> None:
    _fill(repo)
    git(repo, "update-index", "--index-version", str(version))
    got = read_index(repo / ".git" / "index")
    assert got is not None
    assert got == index_entries(repo)
    assert got["run.sh"][0] == "100755" and got["link"][0] == "120000"


def test_read_index_declines_what_it_cannot_read(repo: Path, tmp_path: Path) -> None:
    index = repo / ".git" / "index"
    data = index.read_bytes()
    cut = tmp_path / "cut"
    cut.write_bytes(data[: len(data) // 2])
    assert read_index(cut) is None
    other = tmp_path / "other"
    other.write_bytes(b"DIRC" + (9).to_bytes(4, "big") + data[8:])
    assert read_index(other) is None
    assert read_index(tmp_path / "missing") is None
    git(repo, "update-index", "--split-index")
    assert read_index(index) is None  # a split index: git must say


def test_a_commit_written_in_process_is_the_one_git_writes(repo: Path) -> None:
    git_dir = repo / ".git"
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    head = git(repo, "rev-parse", "HEAD").strip()
    when = 1_700_000_000.0
    body = commit_body(tree, [head], "Baton snapshot for task t1", when)
    zone = body.decode().split("\n")[2].rsplit(" ", 1)[1]
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": IDENTITY[0],
        "GIT_AUTHOR_EMAIL": IDENTITY[1],
        "GIT_COMMITTER_NAME": IDENTITY[0],
        "GIT_COMMITTER_EMAIL": IDENTITY[1],
        "GIT_AUTHOR_DATE": f"@{int(when)} {zone}",
        "GIT_COMMITTER_DATE": f"@{int(when)} {zone}",
    }
    by_git = subprocess.run(
        ["git", "commit-tree", tree, "-p", head, "-m", "Baton snapshot for task t1"],
        cwd=repo, env=env, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip
    ours = write_loose(git_dir, "commit", body)
    assert ours == by_git
    made = commit_tree(repo, git_dir, tree, [head], "Baton result of task t1")
    assert git(repo, "cat-file", "-t", made).strip() == "commit"
    assert git(repo, "rev-parse", f"{made}^{{tree}}").strip() == tree
    assert git(repo, "rev-parse", f"{made}^").strip() == head
    git(repo, "update-ref", "refs/baton/results/t1", made)
    git(repo, "fsck", "--strict", "--no-dangling")


def test_a_checkout_repository_made_in_process_is_what_git_init_makes(tmp_path: Path) -> None:
    ours, theirs = tmp_path / "ours", tmp_path / "theirs"
    assert _init(ours, "baton/t1")
    git(tmp_path, "init", "-q", "--template=", "-b", "baton/t1", str(theirs))

    def files(root: Path) -> dict[str, str]:
        return {str(p.relative_to(root)): p.read_text() for p in root.rglob("*") if p.is_file()}

    assert files(ours) == files(theirs)  # HEAD and config (what git found of the disk)
    # Only the folders git needs: it makes the others (refs/heads, objects/pack) itself.
    assert {p.name for p in (ours / ".git").rglob("*") if p.is_dir()} <= {
        p.name for p in (theirs / ".git").rglob("*") if p.is_dir()
    }
    assert git(ours, "symbolic-ref", "HEAD").strip() == "refs/heads/baton/t1"
    assert git(ours, "rev-parse", "--git-dir").strip() == ".git"
    (ours / "a.txt").write_text("a\n")
    git(ours, "add", "a.txt")
    git(ours, "commit", "-q", "-m", "first")
    assert git(ours, "rev-parse", "--abbrev-ref", "HEAD").strip() == "baton/t1"
    assert not _init(ours, "baton/t1")  # never over something that is there
    assert (ours / ".git" / "HEAD").exists()
    again = tmp_path / "again"  # the file system's answers, probed once, are kept
    assert _init(again, "baton/t2")
    assert (again / ".git" / "config").read_text() == (theirs / ".git" / "config").read_text()


def _refs(repo: Path) -> str:
    return git(repo, "for-each-ref", "--format=%(refname) %(objectname)", "refs/baton/")


def test_a_ref_written_in_process_is_the_one_git_writes(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from baton.workspace import refs
    from baton.workspace.refs import update_ref

    def no_git(*args: object, **kw: object) -> str:
        raise AssertionError(f"git was run: {args}")

    head = git(repo, "rev-parse", "HEAD").strip()
    monkeypatch.setattr(refs, "run_git", no_git)
    twin = tmp_path / "twin"
    subprocess.run(["git", "clone", "-q", str(repo), str(twin)], check=True)
    update_ref(repo / ".git", "refs/baton/snapshots/t1", head)
    git(twin, "update-ref", "refs/baton/snapshots/t1", head)
    ours, theirs = (r / ".git" / "refs" / "baton" / "snapshots" / "t1" for r in (repo, twin))
    assert ours.read_bytes() == theirs.read_bytes() == f"{head}\n".encode()
    assert _refs(repo) == f"refs/baton/snapshots/t1 {head}\n"
    assert not list((repo / ".git" / "refs" / "baton").rglob("*.lock"))
    # A packed value is overridden, as git overrides it; a delete removes both.
    git(repo, "pack-refs", "--all")
    tree = git(repo, "rev-parse", "HEAD^{tree}").strip()
    other = git(repo, "commit-tree", tree, "-m", "other").strip()
    update_ref(repo / ".git", "refs/baton/snapshots/t1", other)
    assert _refs(repo) == f"refs/baton/snapshots/t1 {other}\n"
    git(repo, "update-ref", "-d", "refs/baton/snapshots/t1")
    assert _refs(repo) == ""


def test_a_ref_git_must_write_is_left_to_git(repo: Path) -> None:
    from baton.workspace.git import GitError
    from baton.workspace.refs import update_ref

    head = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "config", "core.logAllRefUpdates", "always")
    update_ref(repo / ".git", "refs/baton/results/t1", head)  # git writes its reflog too
    assert (repo / ".git" / "logs" / "refs" / "baton" / "results" / "t1").is_file()
    git(repo, "config", "core.logAllRefUpdates", "true")
    lock = repo / ".git" / "refs" / "baton" / "results" / "t2.lock"
    lock.write_text("another writer\n")  # held by someone else: git says so
    with pytest.raises(GitError, match="lock"):
        update_ref(repo / ".git", "refs/baton/results/t2", head)
    assert lock.read_text() == "another writer\n"
    assert "refs/baton/results/t2" not in _refs(repo)


def test_a_tree_written_in_process_is_the_one_git_writes(
    repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from baton.workspace import objects
    from baton.workspace.objects import write_tree

    _fill(repo)
    git(repo, "rm", "-q", "--cached", "later.txt")  # no intent-to-add entry: a plain index
    # Names git orders with a folder's trailing "/": a, a-b, a.txt, a/…, a0.
    for rel in ("a-b", "a.txt", "a/x", "a/y/z", "a0", "dir/zz"):
        (repo / rel).parent.mkdir(parents=True, exist_ok=True)
        (repo / rel).write_text(rel + "\n")
    sub = git(repo, "rev-parse", "HEAD").strip()
    git(repo, "add", "-A")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sub},vendor/lib")  # a gitlink
    index = repo / ".git" / "index"
    want = git(repo, "write-tree").strip()
    empty_index = repo / ".git" / "empty-index"
    subprocess.run(
        ["git", "read-tree", "--empty"],
        cwd=repo,
        check=True,
        env={**os.environ, "GIT_INDEX_FILE": str(empty_index)},
    )

    def no_git(*args: object, **kw: object) -> str:
        raise AssertionError(f"git was run: {args}")

    monkeypatch.setattr(objects, "run_git", no_git)
    for tree in git(repo, "ls-tree", "-r", "-t", want).splitlines():  # written anew here
        if " tree " in tree:
            sha = tree.split()[2]
            (repo / ".git" / "objects" / sha[:2] / sha[2:]).unlink(missing_ok=True)
    assert write_tree(repo, repo / ".git", index) == want
    git(repo, "fsck", "--no-dangling")  # every tree written is whole
    empty = "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
    assert write_tree(repo, repo / ".git", empty_index) == empty


def test_a_tree_git_must_write_is_left_to_git(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from baton.workspace import objects
    from baton.workspace.objects import write_tree

    _fill(repo)  # later.txt is intent-to-add: write-tree leaves it out, git says how
    index = repo / ".git" / "index"
    assert read_index(index, plain=True) is None
    assert write_tree(repo, repo / ".git", index) == git(repo, "write-tree").strip()
    git(repo, "rm", "-q", "--cached", "later.txt")
    monkeypatch.setattr(objects, "TREE_IN_PROCESS_MAX", 2)  # a large index: git's cache helps
    called: list[object] = []
    real = objects.run_git

    def counting(*args: object, **kw: object) -> str:
        called.append(args)
        return real(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(objects, "run_git", counting)
    assert write_tree(repo, repo / ".git", index) == git(repo, "write-tree").strip()
    assert called


def test_unsaved_buffers_are_staged_without_a_git_process_each(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The blobs of unsaved buffers are written in-process, the modes read from the index:
    the snapshot holds the texts with each file's mode, as hash-object and ls-files gave."""
    import baton.workspace.snapshot as snapshot

    (repo / "run.sh").write_text("#!/bin/sh\n")
    (repo / "run.sh").chmod(0o755)
    git(repo, "add", "run.sh")
    git(repo, "commit", "-q", "-m", "script")
    ran: list[str] = []
    real_run = snapshot.run_git

    def counting(args: list[str], *a: object, **kw: object) -> object:
        ran.append(args[0])
        return real_run(args, *a, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(snapshot, "run_git", counting)
    texts = {"run.sh": "#!/bin/sh\necho unsaved\n", "new/draft.md": "ünsaved draft\n"}
    snap = snapshot.take_snapshot(repo, "t1", overlays=texts, state_home=tmp_path / "home")
    assert "hash-object" not in ran and "ls-files" not in ran
    listed = dict(
        (path, meta.split())
        for meta, _, path in (line.partition("\t") for line in
                              git(repo, "ls-tree", "-r", snap.commit).splitlines())
    )  # fmt: skip
    for path, text in texts.items():
        sha = subprocess.run(
            ["git", "hash-object", "--stdin"], input=text.encode(), cwd=repo,
            capture_output=True, check=True,
        ).stdout.decode().strip()  # fmt: skip
        assert listed[path][2] == sha
        assert git(repo, "show", f"{snap.commit}:{path}") == text
    assert listed["run.sh"][0] == "100755" and listed["new/draft.md"][0] == "100644"
