"""Claude Code, the real CLI, as a worker on a node of a Ray cluster: Supervisor → relay →
actor on the node that advertises ``claude`` → the CLI → the scripted model server on
127.0.0.1; the diff comes back, is reviewed and accepted here. A reply resumes the same
session (the node's login folder is the profile's, on this one host).

Needs the Ray extra and the CLI (``scripts/install-agents``); skipped loudly without them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from baton.config.profiles import Profile
from baton.process import ray_runner
from tests.e2e.test_worker_claude import (
    ROUND_TRIP,
    check_round_trip,
    claude_profile,
    require,
    world,
)
from tests.support.modelserver import ModelServer, Script
from tests.support.ray_cluster import Nodes, three_nodes

ray = pytest.importorskip("ray")
pytestmark = [pytest.mark.agents, pytest.mark.slow]


@pytest.fixture(scope="module")
def nodes() -> Iterator[Nodes]:
    with three_nodes() as cluster:
        yield cluster


async def test_claude_on_a_ray_node_round_trip(
    nodes: Nodes, baton_home: Path, tmp_path: Path, repo: Path
) -> None:
    require("claude")

    def on_the_cluster(srv: ModelServer, home: Path, proxy: str) -> Profile:
        return dataclasses.replace(
            claude_profile(srv, home, proxy),
            runner="ray",
            ray_address=nodes.address,
            ray_resources={"claude": 1.0},
        )

    async with world(baton_home, tmp_path, Script.of(*ROUND_TRIP), on_the_cluster) as w:
        task_id = await check_round_trip(w, repo, "Now also create second.txt.")
        attempts = await w.sup.attempts(task_id)
        folder = baton_home / "tasks" / task_id
        for a in attempts:  # both turns ran on node A, the one with a Claude login
            node = ray_runner.read_state(folder, a.n).get("node") or {}
            assert node.get("node_id") == nodes.a.node_id, node
