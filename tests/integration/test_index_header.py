"""What is read of an index file without parsing its entries: the count in its header, and
whether a path may end in a name (so a snapshot of thousands of files skips the parse when
no attributes file can apply)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from baton.workspace.indexfile import entry_count, may_name, read_index


def git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True)


def repo_with(tmp_path: Path, names: list[str], version: int = 2) -> Path:
    repo = tmp_path / f"r{version}-{len(names)}"
    repo.mkdir()
    git(repo, "init", "-q")
    for name in names:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(f"{name}\n")
    git(repo, "add", "-A")
    git(repo, "update-index", "--index-version", str(version))
    return repo / ".git" / "index"


def test_the_header_counts_the_entries(tmp_path: Path) -> None:
    index = repo_with(tmp_path, ["a.txt", "sub/b.txt", "sub/deeper/c.txt"])
    assert entry_count(index) == 3 == len(read_index(index) or {})
    assert entry_count(tmp_path / "missing") is None
    (tmp_path / "junk").write_bytes(b"not an index at all")
    assert entry_count(tmp_path / "junk") is None


def test_a_name_is_found_at_the_end_of_any_path_and_only_there(tmp_path: Path) -> None:
    plain = repo_with(tmp_path, ["a.txt", "gitattributes.md", "x.gitattributes.bak"])
    assert not may_name(plain, b".gitattributes")
    nested = repo_with(tmp_path, ["a.txt", "deep/er/.gitattributes"])
    assert may_name(nested, b".gitattributes")
    top = repo_with(tmp_path, [".gitattributes", "b.txt"], version=3)
    assert may_name(top, b".gitattributes")


def test_what_cannot_be_told_without_parsing_says_maybe(tmp_path: Path) -> None:
    v4 = repo_with(tmp_path, ["a.txt", "b.txt"], version=4)  # paths share their beginnings
    assert may_name(v4, b".gitattributes")
    assert may_name(tmp_path / "missing", b".gitattributes")
