"""The websocket's published schema (``baton schema``) names exactly the methods the broker
registers, with exactly the parameters each accepts."""

from __future__ import annotations

import inspect
import re
import subprocess
import sys
from typing import Any

import jsonschema

from baton.surfaces.ws import endpoint, schema, subscribing
from baton.surfaces.ws.methods import Methods


def _registered() -> set[str]:
    table = Methods(None, [], dict).table  # type: ignore[arg-type]
    return set(table) | set(schema.SESSION_METHODS)


def test_schema_names_every_registered_method_and_no_other() -> None:
    doc = schema.load()
    assert doc["openrpc"].startswith("1.")
    assert [m["name"] for m in doc["methods"]] != []
    assert {m["name"] for m in doc["methods"]} == _registered()
    for name in schema.SESSION_METHODS:  # the connection answers these itself
        assert f'"{name}"' in inspect.getsource(endpoint)


def _accepted(fn: Any) -> set[str]:
    """The parameter names a handler passes to ``p.known`` (its whole vocabulary)."""
    src = inspect.getsource(fn)
    names: set[str] = set()
    for call in re.findall(r"p\.known\(\s*(?:params|item)\s*,?(.*?)\)", src, re.S):
        names |= set(re.findall(r'"([A-Za-z]+)"', call))
    return names


def test_schema_parameters_are_the_ones_each_method_accepts() -> None:
    methods = Methods(None, [], dict)  # type: ignore[arg-type]
    by_name = {m["name"]: m for m in schema.load()["methods"]}
    extra = {"delegate": _accepted(Methods._request) | {"workers"}}
    for name, handler in methods.table.items():
        if name in ("models",):
            continue  # an alias: same handler as workers
        want = extra.get(name, _accepted(handler))
        got = {p["name"] for p in by_name[name]["params"]}
        assert got == want, name
    assert {p["name"] for p in by_name["models"]["params"]} == set()
    for name in ("watch", "subscribe"):
        got = {p["name"] for p in by_name[name]["params"]}
        assert got == _accepted(subscribing.watch)
    unsub = {p["name"] for p in by_name["unsubscribe"]["params"]}
    assert unsub == _accepted(subscribing.unsubscribe)
    for m in by_name.values():
        for param in m["params"]:
            assert param["description"], (m["name"], param["name"])
            jsonschema.Draft202012Validator.check_schema(param["schema"])


def test_baton_schema_prints_it() -> None:
    out = subprocess.run(
        [sys.executable, "-m", "baton.cli", "schema"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0 and out.stdout == schema.text()
