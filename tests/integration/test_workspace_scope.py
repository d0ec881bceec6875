"""Write-scope checks: globs, always-refused paths and explicitly allowed protected ones."""

from __future__ import annotations

import pytest

from baton.workspace.scope import matches, normalize, refusal


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
        ".github/workflows/ci.yml",
        ".gitlab-ci.yml",
        ".circleci/config.yml",
        ".ci/build.sh",
        ".githooks/pre-commit",
        ".husky/pre-push",
    ],
)
def test_always_refused_without_an_explicit_scope(path: str) -> None:
    assert refusal(path, ()) is not None
    assert refusal(path, ["**"]) is not None


@pytest.mark.parametrize(
    ("path", "scope"),
    [
        (".github/workflows/ci.yml", [".github/workflows/*.yml"]),
        (".husky/pre-push", [".husky/**"]),
        (".gitlab-ci.yml", [".gitlab-ci.yml"]),
    ],
)
def test_protected_paths_allowed_when_named(path: str, scope: list[str]) -> None:
    assert refusal(path, scope) is None


def test_git_folder_is_refused_even_when_named() -> None:
    assert refusal(".git/hooks/x", [".git/**"]) is not None


def test_a_broader_glob_does_not_name_a_protected_path() -> None:
    assert refusal(".github/workflows/ci.yml", [".github/"]) is not None
    assert refusal(".github/workflows/ci.yml", ["**/*.yml"]) is not None
    assert refusal(".github/dependabot.yml", [".github/"]) is None


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
