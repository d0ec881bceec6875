"""Malformed requests to ``baton lsp``: each gets an LSP error and the server keeps serving.

Hypothesis builds ``workspace/executeCommand`` payloads and ``textDocument/codeAction``
params that are wrong in one way or another (wrong types, missing fields, unknown names,
ranges that end before they start or lie past the document) and sends them raw.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pygls.exceptions import JsonRpcException

from baton.surfaces.lsp.commands import COMMANDS
from tests.e2e.lsp_support import EDITORS, Session, counts_of, raw_request, start, stop

#: The commands about one task (their bad payloads are refused); the others take no task and
#: none of their arguments is required, so any payload is a valid (if odd) request.
TASK_COMMANDS = [
    c
    for c in COMMANDS
    if c
    not in ("baton.delegate", "baton.tasks", "baton.status", "baton.workers", "baton.dashboard")
]
INVALID_PARAMS, REQUEST_FAILED = -32602, -32803

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=6),
)
values = st.recursive(
    scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3)
    ),
    max_leaves=6,
)
not_object = values.filter(lambda v: not isinstance(v, dict))
not_list = values.filter(lambda v: not isinstance(v, list) and v is not None)
not_text = values.filter(lambda v: not (isinstance(v, str) and v.strip()))
bad_int = st.one_of(
    st.integers(max_value=-1),
    st.integers(min_value=2**31),
    st.text(max_size=3),
    st.floats(allow_nan=False, allow_infinity=False),
    st.booleans(),
    st.none(),
    st.lists(st.integers(), max_size=2),
)


def position(line: Any = 0, character: Any = 0) -> dict[str, Any]:
    return {"line": line, "character": character}


@st.composite
def bad_range(draw: st.DrawFn) -> Any:
    kind = draw(st.sampled_from(["type", "field", "backwards", "missing"]))
    if kind == "type":
        return draw(not_object.filter(lambda v: v is not None))  # None: no range, valid
    if kind == "field":
        which = draw(st.sampled_from(["start", "end"]))
        field = draw(st.sampled_from(["line", "character"]))
        pos = position()
        pos[field] = draw(bad_int)
        return {"start": position(), "end": position(), which: pos}
    if kind == "missing":
        return {draw(st.sampled_from(["start", "end"])): position()}
    a = draw(st.integers(1, 50))
    return {"start": position(a), "end": position(draw(st.integers(0, a - 1)))}


@st.composite
def bad_arguments(draw: st.DrawFn, optional: bool) -> Any:
    """The ``arguments`` of a command, wrong as a whole."""
    kind = draw(
        st.sampled_from(["not-list", "many", "not-object"] + ([] if optional else ["none"]))
    )
    if kind == "not-list":
        return draw(not_list)
    if kind == "none":
        return draw(st.sampled_from([None, []]))
    if kind == "many":
        return draw(st.lists(values, min_size=2, max_size=3))
    return [draw(not_object)]


@st.composite
def bad_command(draw: st.DrawFn, uri: str) -> tuple[str, Any]:
    """A command name and ``arguments`` that must be refused."""
    kind = draw(st.sampled_from(["unknown", "shape", "task", "delegate", "tasks"]))
    if kind == "unknown":
        name = draw(st.text(max_size=12).filter(lambda n: n not in COMMANDS))
        return name, draw(st.one_of(st.none(), st.lists(values, max_size=2)))
    if kind == "shape":
        name = draw(st.sampled_from(COMMANDS))
        return name, draw(bad_arguments(name in ("baton.tasks", "baton.status")))
    if kind == "task":
        name = draw(st.sampled_from(TASK_COMMANDS))
        payload: dict[str, Any] = {"taskId": draw(st.one_of(not_text, st.text(max_size=20)))}
        if draw(st.booleans()):
            payload["text"] = draw(values)
        if draw(st.booleans()):
            payload["hunkIds"] = draw(values)
        return name, [payload]
    if kind == "tasks":
        field, bad = draw(
            st.sampled_from(
                [
                    ("states", st.one_of(not_list, st.lists(st.text(max_size=5), min_size=1))),
                    (
                        "limit",
                        st.one_of(
                            bad_int.filter(lambda v: v is not None),
                            st.just(0),
                            st.integers(1001, 10**6),
                        ),
                    ),
                    ("query", not_text.filter(lambda v: v is not None)),
                    ("root", not_text.filter(lambda v: v is not None)),
                ]
            )
        )
        return "baton.tasks", [{field: draw(bad)}]
    payload = {"uri": uri, "range": {"start": position(), "end": position(1)}, "kind": "fix"}
    payload["instruction"] = "do it"
    payload["diagnostics"] = [{"range": payload["range"], "message": "m"}]
    field = draw(
        st.sampled_from(["uri", "range", "kind", "instruction", "diagnostics", "scope", "past-end"])
    )
    if field == "uri":
        payload["uri"] = draw(
            st.one_of(
                not_text, st.sampled_from(["http://x/a.py", "file:relative.py", "untitled:1"])
            )
        )
    elif field == "range":
        payload["range"] = draw(bad_range())
    elif field == "kind":
        payload["kind"] = draw(
            values.filter(lambda v: v not in (None, "delegate", "fix", "explain", "tests"))
        )
    elif field == "instruction":
        payload["instruction"] = draw(not_text.filter(lambda v: v is not None))
    elif field == "diagnostics":
        payload["diagnostics"] = draw(
            st.one_of(
                st.just([]),
                not_list,
                st.lists(
                    st.one_of(not_object, st.fixed_dictionaries({"range": bad_range()})), min_size=1
                ),
            )
        )
    elif field == "scope":
        payload["scope"] = draw(st.one_of(not_list, st.lists(not_text, min_size=1)))
    else:
        line = draw(st.integers(8, 2**31 - 1))
        payload["range"] = {"start": position(line), "end": position(line)}
    return "baton.delegate", [payload]


@st.composite
def bad_code_action(draw: st.DrawFn, uri: str) -> Any:
    params: dict[str, Any] = {
        "textDocument": {"uri": uri},
        "range": {"start": position(), "end": position(1)},
        "context": {"diagnostics": []},
    }
    kind = draw(
        st.sampled_from(["missing", "uri", "range", "past-end", "context", "diagnostics", "only"])
    )
    if kind == "missing":
        del params[draw(st.sampled_from(sorted(params)))]
    elif kind == "uri":
        params["textDocument"] = draw(
            st.one_of(
                not_object,
                st.fixed_dictionaries({"uri": not_text.filter(lambda v: not isinstance(v, str))}),
            )
        )
    elif kind == "range":
        params["range"] = draw(bad_range())
    elif kind == "past-end":
        line = draw(st.integers(8, 2**31 - 1))
        params["range"] = {"start": position(line), "end": position(line)}
    elif kind == "context":
        params["context"] = draw(not_object)
    elif kind == "diagnostics":
        params["context"]["diagnostics"] = draw(
            st.one_of(
                not_list,
                st.lists(
                    st.one_of(
                        not_object, st.fixed_dictionaries({"range": bad_range(), "message": values})
                    ),
                    min_size=1,
                ),
            )
        )
    else:
        params["context"]["only"] = draw(
            st.one_of(
                not_list, st.lists(not_text.filter(lambda v: not isinstance(v, str)), min_size=1)
            )
        )
    return params


def run(loop: asyncio.AbstractEventLoop, coro: Any) -> Any:
    # Generous: on a loaded 2-core machine one answer can take seconds; a hang still fails.
    return loop.run_until_complete(asyncio.wait_for(coro, 60))


@pytest.mark.parametrize("editor", EDITORS)
def test_malformed_requests_get_errors_and_the_server_keeps_serving(
    editor: str, repo: Path, baton_home: Path
) -> None:
    loop = asyncio.new_event_loop()
    lsp: Session = run(loop, start(editor, repo, baton_home))
    try:
        doc = lsp.open("app.py")  # 6 lines: line 8 and beyond are past its end
        sent = {"command": 0, "codeAction": 0}

        def refused(method: str, params: Any) -> JsonRpcException:
            with pytest.raises(JsonRpcException) as info:
                run(loop, raw_request(lsp.client, method, params))
            return info.value

        @settings(
            max_examples=120,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=bad_command(doc.uri))
        def commands(case: tuple[str, Any]) -> None:
            name, arguments = case
            params: dict[str, Any] = {"command": name}
            if arguments is not None:
                params["arguments"] = arguments
            error = refused("workspace/executeCommand", params)
            assert error.code in (INVALID_PARAMS, REQUEST_FAILED), error
            sent["command"] += 1

        @settings(
            max_examples=80,
            deadline=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        @given(params=bad_code_action(doc.uri))
        def code_actions(params: Any) -> None:
            error = refused("textDocument/codeAction", params)
            assert error.code == INVALID_PARAMS, error
            sent["codeAction"] += 1

        commands()
        code_actions()
        assert sum(sent.values()) >= 200
        # Still serving, and nothing was delegated by any of it.
        assert counts_of(run(loop, lsp.status())) == {
            "running": 0,
            "needsInput": 0,
            "review": 0,
            "failed": 0,
        }
        assert run(loop, lsp.command("baton.tasks")) == {"tasks": []}
        valid = {
            "textDocument": {"uri": doc.uri},
            "range": {"start": position(), "end": position(1)},
            "context": {"diagnostics": []},
        }
        actions = run(loop, raw_request(lsp.client, "textDocument/codeAction", valid))
        assert len(actions) == 3
    finally:
        run(loop, stop(lsp))
        loop.close()
