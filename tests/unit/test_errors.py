"""One error root: every exception class of the package derives from
:class:`baton.errors.BatonError`, keeps the built-in base it had, and carries the JSON-RPC
code the surfaces answer with."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from baton import errors
from baton.config.layers import ConfigError
from baton.errors import BatonError, InvalidInput, NotFound, Unavailable, WrongState
from baton.store import AmbiguousTask, UnknownTask
from baton.surfaces import jsonrpc
from baton.surfaces.ws import protocol

PACKAGE = Path(errors.__file__).parent


def exception_classes() -> dict[str, type[BaseException]]:
    """Dotted name → class, for every exception class a module of the package defines."""
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if path.name == "__main__.py":
            continue
        classes = [n.name for n in ast.parse(path.read_text()).body if isinstance(n, ast.ClassDef)]
        if not classes:
            continue
        parts = (PACKAGE.name, *path.relative_to(PACKAGE).with_suffix("").parts)
        name = ".".join(parts).removesuffix(".__init__")
        module = importlib.import_module(name)
        for cls_name in classes:
            cls = getattr(module, cls_name)
            if isinstance(cls, type) and issubclass(cls, BaseException):
                out[f"{name}.{cls_name}"] = cls
    return out


def test_every_exception_class_derives_from_the_root() -> None:
    found = exception_classes()
    assert len(found) > 25, sorted(found)
    astray = {name for name, cls in found.items() if not issubclass(cls, BatonError)}
    assert astray == set()


@pytest.mark.parametrize(
    ("error", "kind", "builtin"),
    [
        (UnknownTask("8kd0"), NotFound, KeyError),
        (AmbiguousTask("8k", ["8kd0", "8kd1"]), NotFound, KeyError),
        (ConfigError("bad value", "/x/.baton.toml", 3), InvalidInput, ValueError),
    ],
)
def test_an_error_keeps_its_builtin_base_beside_its_kind(
    error: BaseException, kind: type[BatonError], builtin: type[BaseException]
) -> None:
    assert isinstance(error, kind) and isinstance(error, builtin)


def test_the_code_lives_on_the_class() -> None:
    assert BatonError.code == jsonrpc.INTERNAL_ERROR == -32603
    assert NotFound.code == protocol.UNKNOWN_TASK == -32002
    assert WrongState.code == protocol.WRONG_STATE == -32003
    assert InvalidInput.code == jsonrpc.INVALID_PARAMS == -32602
    assert Unavailable.code == BatonError.code
    assert UnknownTask("x").code == NotFound.code
    # a surface's RpcError is a BatonError whose code is its own
    err = protocol.RpcError(protocol.BUSY, "too many")
    assert isinstance(err, BatonError) and err.code == protocol.BUSY
