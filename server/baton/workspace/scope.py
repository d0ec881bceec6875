"""Write scope: which paths a task may change when its hunks are accepted.

A scope is a list of globs relative to the root (``**`` any number of folders, ``*`` and
``?`` inside one path segment, ``src/`` a folder and everything under it, a plain name
the file or folder of that name). An empty scope allows the whole tree. Some paths are
refused whatever the scope says: anything escaping the root and anything inside a ``.git``
folder. Git hooks and CI workflows are refused unless a scope glob names them explicitly
(starts with their prefix, e.g. ``.github/workflows/*.yml``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache

# Paths refused unless a glob starting with the same prefix allows them.
PROTECTED: tuple[tuple[str, str], ...] = (
    (".githooks/", "git hooks"),
    (".husky/", "git hooks"),
    (".github/workflows/", "a CI workflow"),
    (".gitlab-ci.yml", "a CI workflow"),
    (".circleci/", "a CI workflow"),
    (".ci/", "a CI workflow"),
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


def _protection(path: str) -> tuple[str, str] | None:
    """The protected prefix covering ``path`` (without a trailing slash) and what it is."""
    lowered = path.lower()
    for prefix, what in PROTECTED:
        if lowered == prefix.rstrip("/") or lowered.startswith(prefix):
            return prefix.rstrip("/"), what
    return None


def refusal(path: str, scope: Sequence[str] = ()) -> str | None:
    """Why a change to ``path`` must be refused under ``scope``, or None when it is allowed."""
    clean = normalize(path)
    if clean is None:
        return f"{path!r} is outside the workspace"
    if any(part.lower() == ".git" for part in clean.split("/")):
        return f"{clean} is inside a .git folder"
    protection = _protection(clean)
    if protection is not None:
        prefix, what = protection
        named = [g for g in scope if _clean_glob(g).lower().startswith(prefix)]
        if not any(matches(clean, g) for g in named):
            return f"{clean} is {what}; name it in the task's scope to allow it"
        return None
    if scope and not any(matches(clean, g) for g in scope):
        return f"{clean} is outside the task's scope ({', '.join(scope)})"
    return None
