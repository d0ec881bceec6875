"""``baton/plan``'s nodes: whatever a planner wrote is shown in one shape (its problems say
what is wrong), so an editor never has to guess."""

from __future__ import annotations

from baton.surfaces.lsp.planning import node_payload


def test_a_node_is_shown_with_its_title_prerequisites_and_scope() -> None:
    node = {"key": "api", "instruction": "Add the endpoint\nwith its tests", "after": ["db"]}
    assert node_payload(0, node | {"scope": ["api/**"], "worker": "w", "kind": "tests"}) == {
        "key": "api",
        "title": "Add the endpoint",
        "instruction": "Add the endpoint\nwith its tests",
        "worker": "w",
        "after": ["db"],
        "scope": ["api/**"],
        "kind": "tests",
    }
    assert node_payload(0, node)["scope"] is None  # no scope: it may write anywhere


def test_a_malformed_node_is_shown_without_its_wrong_parts() -> None:
    shown = node_payload(2, {"key": 7, "instruction": ["x"], "after": "db", "scope": [1, "a/*"]})
    assert shown == {
        "key": "node 3",
        "title": "(no instruction)",
        "instruction": "",
        "worker": None,
        "after": [],
        "scope": ["a/*"],
        "kind": None,
    }
    assert node_payload(0, "not a node")["key"] == "node 1"
