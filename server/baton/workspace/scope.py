"""Write scope: which paths a task may change when its hunks are accepted.

A scope is a list of globs relative to the root (``**`` any number of folders, ``*`` and
``?`` inside one path segment, ``src/`` a folder and everything under it, a plain name
the file or folder of that name). An empty scope allows the whole tree.

Some paths are refused whatever the scope says: anything escaping the root and anything
inside a ``.git`` folder. The paths in :data:`PROTECTED` are refused unless a scope glob
names them explicitly: the glob covers the path and spells out the protected name (see
:func:`names`), so ``.github/workflows/ci.yml`` or ``**/.envrc`` allow those files while
``**``, ``*.yml`` or ``.github/`` do not. A symlink is refused when its target leaves the
tree or enters ``.git`` (:func:`link_refusal`).

What is protected: files that make code run without the user choosing to run it — on a
push (CI, with the repository's secrets), on a git command (hooks, attribute drivers,
submodules), on opening or entering the folder (editor tasks and settings, dev containers,
direnv), or by swapping the programs the user's tools start — and that a reviewer does not
read as the project's code. A ``Makefile``, ``package.json`` scripts, ``build.rs``, a
``conftest.py`` or a test are not protected: they are the project's code, shown in review
like any other, and run when the user runs them; refusing them would refuse the ordinary
work a task is asked to do.
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache


@dataclass(frozen=True, slots=True)
class Protected:
    """Paths refused unless the scope names them, and why they are protected.

    ``globs`` use the scope syntax and are matched against the lowercased path (the
    user's file system may not tell case apart); ``reason`` completes "<path> is …".
    """

    globs: tuple[str, ...]
    reason: str


_CI = "run by CI on push, with the repository's secrets"

#: Every protected path, with what it is and when it runs. One row per kind of file.
PROTECTED: tuple[Protected, ...] = (
    # git runs these on the user's own git commands
    Protected((".githooks/",), "a git hook folder: git runs its scripts on commit and push"),
    Protected((".husky/",), "a git hook folder (husky): git runs its scripts on commit and push"),
    Protected((".pre-commit-config.yaml",), "pre-commit's hook list, run on every commit"),
    Protected(("lefthook*", ".lefthook*"), "lefthook's git hook settings, run on commit"),
    Protected(
        ("**/.gitattributes",),
        "git attributes: they choose the filter, diff and merge programs git runs",
    ),
    Protected((".gitmodules",), "the submodule list: code git fetches from elsewhere"),
    Protected((".lfsconfig",), "git LFS settings: where large files' content is fetched from"),
    # CI services
    Protected((".github/workflows/",), f"a GitHub Actions workflow, {_CI}"),
    Protected((".github/actions/",), f"a GitHub action of this repository, {_CI}"),
    Protected(("action.yml", "action.yaml"), "the action this repository publishes to CI"),
    Protected((".gitea/workflows/",), f"a Gitea Actions workflow, {_CI}"),
    Protected((".forgejo/workflows/",), f"a Forgejo Actions workflow, {_CI}"),
    Protected((".gitlab-ci.yml", ".gitlab/ci/"), f"GitLab CI configuration, {_CI}"),
    Protected((".circleci/",), f"CircleCI configuration, {_CI}"),
    Protected(
        ("azure-pipelines.yml", "azure-pipelines.yaml", ".azure-pipelines/"),
        f"an Azure Pipelines definition, {_CI}",
    ),
    Protected((".travis.yml",), f"Travis CI configuration, {_CI}"),
    Protected(("jenkinsfile",), f"a Jenkins pipeline, {_CI}"),
    Protected(("bitbucket-pipelines.yml",), f"Bitbucket Pipelines configuration, {_CI}"),
    Protected((".drone.yml", ".drone.yaml"), f"Drone CI configuration, {_CI}"),
    Protected((".buildkite/",), f"a Buildkite pipeline, {_CI}"),
    Protected(
        (".woodpecker.yml", ".woodpecker.yaml", ".woodpecker/"),
        f"Woodpecker CI configuration, {_CI}",
    ),
    Protected(("appveyor.yml", ".appveyor.yml"), f"AppVeyor configuration, {_CI}"),
    Protected((".cirrus.yml", ".cirrus.star"), f"Cirrus CI configuration, {_CI}"),
    Protected((".semaphore/",), f"Semaphore CI configuration, {_CI}"),
    Protected((".teamcity/",), f"TeamCity build settings, {_CI}"),
    Protected((".tekton/",), f"a Tekton pipeline, {_CI}"),
    Protected(("buildspec.yml",), f"an AWS CodeBuild build spec, {_CI}"),
    Protected(
        ("cloudbuild.yaml", "cloudbuild.yml", "cloudbuild.json"),
        f"a Google Cloud Build config, {_CI}",
    ),
    Protected((".ci/",), f"a CI folder, {_CI}"),
    # editors and shells run these on opening or entering the folder
    Protected(
        ("**/.vscode/", "**/*.code-workspace"),
        "VS Code settings: tasks run on folder open, and settings name the programs "
        "extensions start",
    ),
    Protected(
        ("**/.idea/", ".run/"),
        "JetBrains project settings: run configurations, startup tasks, the interpreter",
    ),
    Protected(
        (".devcontainer/", ".devcontainer.json"),
        "a dev container: its image and commands run when the folder opens in a container",
    ),
    Protected((".gitpod.yml",), "Gitpod tasks, run when a workspace starts"),
    Protected(("**/.envrc",), "a direnv file: shell code run on entering the folder"),
    Protected(("**/mise.toml", "**/.mise.toml"), "mise settings: hooks run on entering the folder"),
    # tool settings that swap in the programs a tool starts
    Protected(("**/.npmrc",), "npm settings: node-options and script-shell start programs"),
    Protected(("**/.yarnrc.yml",), "Yarn settings: yarnPath runs a script on every yarn command"),
    Protected(
        ("**/.cargo/config", "**/.cargo/config.toml"),
        "Cargo settings: wrappers and runners cargo starts on every build",
    ),
)


def normalize(path: str) -> str | None:
    """``path`` as a clean relative POSIX path, or None when it is absolute or escapes."""
    if not path or "\0" in path:
        return None
    p = path.replace("\\", "/")
    if p.startswith("/") or re.match(r"^[A-Za-z]:", p):
        return None
    parts = [s for s in p.split("/") if s not in ("", ".")]
    if not parts or ".." in parts:
        return None
    return "/".join(parts)


def _clean_glob(glob: str) -> str:
    g = glob.replace("\\", "/")
    while g.startswith(("./", "/")):
        g = g[2:] if g.startswith("./") else g[1:]
    return g


@lru_cache(maxsize=512)
def _glob_regex(glob: str) -> re.Pattern[str]:
    g = _clean_glob(glob)
    directory = g.endswith("/")
    g = g.rstrip("/")
    out: list[str] = []
    i = 0
    while i < len(g):
        c = g[i]
        if g.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif g.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        else:
            out.append(re.escape(c))
            i += 1
    body = "".join(out)
    # A folder glob (``src/``) or a plain name also covers everything below it.
    tail = "/.*" if directory else "(?:/.*)?"
    return re.compile(f"^{body}{tail}$", re.DOTALL)


def matches(path: str, glob: str) -> bool:
    """Whether the normalized relative ``path`` is covered by ``glob``."""
    return bool(_glob_regex(glob).match(path))


def _key(glob: str) -> str:
    """The literal name in a protected glob that a scope glob must spell out to name it."""
    g = glob.removeprefix("**/").lstrip("*")
    cut = min((i for i, c in enumerate(g) if c in "*?"), default=len(g))
    return g[:cut].rstrip("/")


def _protections(path: str) -> list[tuple[Protected, str]]:
    """The entries of :data:`PROTECTED` covering ``path``, each with the glob that does."""
    lowered = path.lower()
    found: list[tuple[Protected, str]] = []
    for entry in PROTECTED:
        glob = next((g for g in entry.globs if matches(lowered, g)), None)
        if glob is not None:
            found.append((entry, glob))
    return found


def names(scope_glob: str, path: str, protected_glob: str) -> bool:
    """Whether ``scope_glob`` allows the protected ``path`` (covered by ``protected_glob``):
    it covers the path and spells out the protected name (``.github/workflows``,
    ``.envrc``), so a broad glob (``**``, ``*.yml``, ``.github/``) never does."""
    clean = _clean_glob(scope_glob).lower()
    return _key(protected_glob) in clean and matches(path, scope_glob)


def refusal(path: str, scope: Sequence[str] = ()) -> str | None:
    """Why a change to ``path`` must be refused under ``scope``, or None when it is allowed."""
    clean = normalize(path)
    if clean is None:
        return f"{path!r} is outside the workspace"
    if any(part.lower() == ".git" for part in clean.split("/")):
        return f"{clean} is inside a .git folder"
    protections = _protections(clean)
    for entry, glob in protections:
        if not any(names(g, clean, glob) for g in scope):
            return (
                f"{clean} is protected ({entry.reason}); name it in the task's scope "
                f"to allow it (e.g. --scope {clean})"
            )
    if protections:
        return None
    if scope and not any(matches(clean, g) for g in scope):
        return f"{clean} is outside the task's scope ({', '.join(scope)})"
    return None


def link_refusal(path: str, target: str) -> str | None:
    """Why a symlink at ``path`` pointing at ``target`` must be refused, or None.

    Refused: an absolute target, one that climbs out of the tree, and one that leads into
    a ``.git`` folder (judged on the text of the target, from the link's folder).
    """
    clean = normalize(path) or path
    where = f"{clean} is a symlink to {target!r}"
    if not target or "\0" in target:
        return f"{where}, which is not a path"
    t = target.replace("\\", "/")
    if t.startswith("/") or re.match(r"^[A-Za-z]:", t):
        return f"{where}, outside the workspace"
    joined = posixpath.normpath(posixpath.join(posixpath.dirname(clean), t))
    if joined == ".." or joined.startswith("../"):
        return f"{where}, outside the workspace"
    if any(part.lower() == ".git" for part in joined.split("/")):
        return f"{where}, into a .git folder"
    return None
