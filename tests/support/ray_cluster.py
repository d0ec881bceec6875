"""A real Ray cluster of three nodes on this host, loopback only, for the Ray runner's tests.

``ray.cluster_utils.Cluster`` (Ray's own multi-node-on-one-host harness): a head with no
agent resources, node A with ``{fake = 2, alpha = 1, claude = 1}``, node B with
``{fake = 2, beta = 1}``. Ray's files go to a short scratch folder (its socket paths must
fit), its listeners to 127.0.0.1 only (Ray otherwise takes the host's routable address), and
the relays the brokers start are told to do the same (``BATON_RAY_LOOPBACK``).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

A = {"fake": 2.0, "alpha": 1.0, "claude": 1.0}
B = {"fake": 2.0, "beta": 1.0}
IP = {"node_ip_address": "127.0.0.1"}


class Nodes:
    def __init__(self, cluster: Any, a: Any, b: Any) -> None:
        self.cluster, self.a, self.b = cluster, a, b
        self.resources = {a.node_id: dict(A), b.node_id: dict(B)}

    @property
    def address(self) -> str:
        return str(self.cluster.address)

    def by_id(self, node_id: str) -> Any:
        return next(n for n in (self.a, self.b) if n.node_id == node_id)

    def replace(self, lost: Any) -> None:
        """Add a node like ``lost`` (removed by a test), for the tests after it."""
        wants = self.resources[lost.node_id]
        node = self.cluster.add_node(num_cpus=1, resources=dict(wants), **IP)
        self.resources[node.node_id] = wants
        if lost is self.a:
            self.a = node
        else:
            self.b = node


@contextmanager
def three_nodes() -> Iterator[Nodes]:
    from ray.cluster_utils import Cluster

    from baton.process.ray_relay import loopback_only
    from baton.process.ray_runner import LOOPBACK_ENV

    scratch = Path(tempfile.mkdtemp(prefix="bray"))
    (scratch / "ray").mkdir()
    saved = dict(os.environ)
    os.environ.update(
        # A node that stops answering is marked dead in about 5 s, not a minute (generous
        # enough for a loaded machine; docs/reference/cluster.md says the same for clusters).
        RAY_health_check_initial_delay_ms="1000",
        RAY_health_check_period_ms="1000",
        RAY_health_check_timeout_ms="1000",
        RAY_health_check_failure_threshold="5",
        RAY_TMPDIR=str(scratch),
        RAY_USAGE_STATS_ENABLED="0",
        BATON_NODE_HOME=str(scratch / "nodes"),
        **{LOOPBACK_ENV: "1"},
    )
    loopback_only()
    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 0, "include_dashboard": False, **IP}
    )
    try:
        a = cluster.add_node(num_cpus=1, resources=dict(A), **IP)
        b = cluster.add_node(num_cpus=1, resources=dict(B), **IP)
        cluster.wait_for_nodes()
        yield Nodes(cluster, a, b)
    finally:
        cluster.shutdown()
        os.environ.clear()
        os.environ.update(saved)
        shutil.rmtree(scratch, ignore_errors=True)
