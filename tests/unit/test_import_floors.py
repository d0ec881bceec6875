"""Imports inside ``baton`` only point down the floors, and no modules import each other in
a circle.

The floors, lowest first (docs/architecture.md, "Layout"): ``core`` (with the package's own
root modules: ``baton``, ``baton.errors``, ``baton.faults``) → ``config``, ``store``,
``workspace`` → ``agents`` → ``process``, ``acp`` → ``runtime`` → ``surfaces`` → ``cli``. A
module may import its own floor and the floors below. Every import counts: at the top of a
module, inside a function (a lazy import is still a dependency), under ``TYPE_CHECKING``,
relative or absolute. ``from pkg import name`` depends on ``pkg`` (its ``__init__`` runs)
and, when ``name`` is a module, on ``pkg.name`` too. The checker runs first on small
packages written here with one fault each, so it is seen to fail.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "server" / "baton"

FLOORS: dict[str, int] = {
    "core": 0,
    "config": 1,
    "store": 1,
    "workspace": 1,
    "agents": 2,
    "process": 3,
    "acp": 3,
    "runtime": 4,
    "surfaces": 5,
    "cli": 6,
}
#: Modules at the package's root sit on the lowest floor.
ROOT_FLOOR = 0


def modules_of(root: Path) -> dict[str, Path]:
    """Dotted name → file, for every module of the package at ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = (root.name, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def imports_of(name: str, path: Path, known: set[str]) -> Iterator[str]:
    """The package's modules that module ``name`` (file ``path``) imports, anywhere in it."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                source = ".".join([*base, node.module] if node.module else base)
            else:
                source = node.module or ""
            targets = [source] + [f"{source}.{alias.name}" for alias in node.names]
        else:
            continue
        for target in targets:
            if target in known and target != name:
                yield target


def floor_of(module: str, root: Path) -> int | None:
    """The floor of a module of the package at ``root``; None when it is on none."""
    parts = module.split(".")
    if len(parts) == 1 or (root / f"{parts[1]}.py").is_file():
        return ROOT_FLOOR
    return FLOORS.get(parts[1])


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """One circle (a path back to where it starts) per group of modules that import each
    other (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.add(member)
                if member == node:
                    break
            if len(group) > 1:
                found.append(_path_within(graph, group))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def _path_within(graph: dict[str, set[str]], group: set[str]) -> list[str]:
    """A circle through the group's first module, staying inside the group."""
    start = min(group)
    paths = {start: [start]}
    frontier = [start]
    while frontier:
        nxt_frontier = []
        for node in frontier:
            for nxt in sorted(graph.get(node, set()) & group):
                if nxt == start:
                    return [*paths[node], start]
                if nxt not in paths:
                    paths[nxt] = [*paths[node], nxt]
                    nxt_frontier.append(nxt)
        frontier = nxt_frontier
    raise AssertionError(f"no circle in {group}")


def problems(root: Path) -> list[str]:
    """Each import pointing up a floor, each module on no floor, and each import circle."""
    mods = modules_of(root)
    known = set(mods)
    graph: dict[str, set[str]] = defaultdict(set)
    out = []
    for name, path in mods.items():
        here = floor_of(name, root)
        if here is None:
            out.append(f"{name} is on no floor (add its package to FLOORS)")
            continue
        for target in imports_of(name, path, known):
            graph[name].add(target)
            there = floor_of(target, root)
            if there is not None and there > here:
                out.append(f"{name} imports {target}, a floor up")
    out += ["circle: " + " -> ".join(c) for c in circles(graph)]
    return out


def write_package(root: Path, files: dict[str, str]) -> Path:
    pkg = root / "baton"
    for rel, text in {"__init__.py": "", **files}.items():
        path = pkg / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        for parent in path.relative_to(pkg).parents:
            (pkg / parent / "__init__.py").touch()
        path.write_text(text, encoding="utf-8")
    return pkg


FAULTS = {
    "an import a floor up": (
        {"core/a.py": "from baton.cli.main import run\n", "cli/main.py": "def run(): ...\n"},
        "baton.core.a imports baton.cli.main, a floor up",
    ),
    "a lazy import a floor up, inside a function": (
        {
            "config/a.py": "def f():\n    from baton.agents import registry\n",
            "agents/registry.py": "",
        },
        "baton.config.a imports baton.agents.registry, a floor up",
    ),
    "a relative import a floor up": (
        {"store/a.py": "from ..runtime import book\n", "runtime/book.py": ""},
        "baton.store.a imports baton.runtime.book, a floor up",
    ),
    "two modules importing each other": (
        {
            "runtime/a.py": "import baton.runtime.b\n",
            "runtime/b.py": "from baton.runtime.a import x\n",
        },
        "circle: baton.runtime.a -> baton.runtime.b -> baton.runtime.a",
    ),
    "a circle through the package's face, under TYPE_CHECKING": (
        {
            "surfaces/lsp/__init__.py": "from baton.surfaces.lsp.server import S\n",
            "surfaces/lsp/server.py": (
                "from typing import TYPE_CHECKING\n"
                "if TYPE_CHECKING:\n    from baton.surfaces.lsp import notify\n"
            ),
            "surfaces/lsp/notify.py": "",
        },
        "circle: baton.surfaces.lsp -> baton.surfaces.lsp.server -> baton.surfaces.lsp",
    ),
    "a circle across packages of one floor": (
        {"config/a.py": "import baton.store.b\n", "store/b.py": "from baton.config import a\n"},
        "circle: baton.config.a -> baton.store.b -> baton.config.a",
    ),
    "a package on no floor": ({"gadgets/a.py": ""}, "baton.gadgets is on no floor"),
}


@pytest.mark.parametrize("fault", sorted(FAULTS))
def test_the_checker_finds_a_fault(tmp_path: Path, fault: str) -> None:
    files, expected = FAULTS[fault]
    found = problems(write_package(tmp_path, files))
    assert any(p.startswith(expected) for p in found), found


def test_the_checker_passes_a_package_that_points_down(tmp_path: Path) -> None:
    files = {
        "core/a.py": "import baton.core.b\n",
        "core/b.py": "from baton import faults\n",
        "faults.py": "",
        "cli/main.py": "from baton.core import a\ndef f():\n    from ..runtime import r\n",
        "runtime/r.py": "from baton.store.s import x\n",
        "store/s.py": "",
    }
    assert problems(write_package(tmp_path, files)) == []


def test_baton_imports_point_down_and_never_circle() -> None:
    assert modules_of(PACKAGE), PACKAGE
    assert problems(PACKAGE) == []
