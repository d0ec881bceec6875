"""The surfaces and the CLI use the runtime through its face (``baton.runtime``) only.

They import no module of the runtime but the face (and ``baton.runtime.accounts``, which
``baton stats`` reads offline), only names the face exports, and they never reach past
the supervisor into its store, event bus or book.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import baton.runtime

PACKAGE = Path(baton.runtime.__file__).resolve().parents[1]
USERS = sorted([*(PACKAGE / "surfaces").rglob("*.py"), *(PACKAGE / "cli").rglob("*.py")])
#: A supervisor's parts a surface must not touch.
INSIDE = {"store", "bus", "book"}


def _name(node: ast.expr) -> str:
    """The last name of ``a.b.sup`` / ``sup`` (empty for anything else)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return ""


def offences(source: str) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("baton.runtime."):
                    found.append(f"line {node.lineno}: import {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module.startswith("baton.runtime."):
                found.append(f"line {node.lineno}: from {node.module} import …")
            elif node.module == "baton.runtime":
                for alias in node.names:
                    if alias.name not in baton.runtime.__all__:
                        found.append(f"line {node.lineno}: baton.runtime.{alias.name}")
        elif isinstance(node, ast.Attribute) and node.attr in INSIDE:
            owner = _name(node.value).lower()
            if "sup" in owner:
                found.append(f"line {node.lineno}: {owner}.{node.attr}")
    return sorted(found, key=lambda line: int(line.split(":")[0].split()[1]))


@pytest.mark.parametrize("path", USERS, ids=lambda p: str(p.relative_to(PACKAGE)))
def test_a_surface_uses_only_the_runtimes_face(path: Path) -> None:
    assert offences(path.read_text(encoding="utf-8")) == []


def test_the_check_sees_each_way_past_the_face() -> None:
    source = (
        "import baton.runtime.book\n"
        "from baton.runtime.supervisor import Supervisor\n"
        "from baton.runtime import Supervisor, Book\n"
        "async def f(sup, self):\n"
        "    await sup.store.call(len)\n"
        "    self.sup.bus.emit_nowait([])\n"
    )
    assert offences(source) == [
        "line 1: import baton.runtime.book",
        "line 2: from baton.runtime.supervisor import …",
        "line 3: baton.runtime.Book",
        "line 5: sup.store",
        "line 6: sup.bus",
    ]


def test_every_name_of_the_face_loads() -> None:
    for name in baton.runtime.__all__:
        assert getattr(baton.runtime, name) is not None, name
