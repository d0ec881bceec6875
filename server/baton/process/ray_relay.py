"""The local end of a remote attempt: ``python -m baton.process.ray_relay SPEC``.

The broker starts this relay exactly as it starts an agent (detached, under the wrapper,
its stdout the attempt's output file; :class:`baton.process.ray_runner.RayTransport`), so
following, adopting after a broker restart, the watchdog and cancel stay what they are for
a local attempt. The relay

1. bundles the task's files as its checkout holds them (one parentless commit, no history),
2. connects to the Ray cluster (``ray_address``) in the namespace of the broker's store,
3. re-attaches to the attempt's actor by name when one lives (a relay started again for the
   same attempt), or creates it: one short-lived, detached actor per attempt, asking for the
   profile's ``ray_resources`` (so only a node that advertises them takes it),
4. prints the agent's stdout lines as they come, in order (numbered by the node; after a
   lost stream it asks again from the next number: no gap, no duplicate),
5. at the end writes the node's result into the local checkout (the files only: the diff,
   the review and the accept are the broker's, as for a local attempt) and exits with the
   agent's exit code.

What the runtime must know beyond the agent's own stream — the node, the actor, or that the
node was lost (``lost``: the attempt is interrupted and may be retried elsewhere) — goes to
the state file beside the attempt's output (see :func:`baton.process.ray_runner.read_state`).
SIGTERM (a cancel, the watchdog) stops the remote agent's process tree before the relay
exits. Ray is imported only here and on the node: never by the broker.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from baton.process.ray_node import BASE_REF, LINGER, RESULT_REF, AttemptRun, git

#: Exit codes of the relay itself (the agent's own exit code otherwise).
LOST = 75  # the node or its actor was lost: interrupted
UNPLACEABLE = 78  # no node can take it, or the cluster cannot be reached
STOPPED = 143
#: Seconds with no item (the node beats every 2 s) before the relay asks the actor itself,
#: and at most as long for its answer (``BATON_RAY_IDLE`` changes it, for tests).
IDLE = float(os.environ.get("BATON_RAY_IDLE") or 15.0)


def write_state(path: Path, **fields: Any) -> None:
    """Merge ``fields`` into the JSON state file at ``path``, atomically."""
    state: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        state = json.loads(path.read_text())
    state.update(fields)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(state))
    os.replace(tmp, path)


def bundle_files(checkout: Path, out: Path) -> bytes:
    """A bundle of one parentless commit holding the checkout's files now (what the agent
    works on), at :data:`~baton.process.ray_node.BASE_REF` of the checkout."""
    index = out.with_suffix(".index")
    index.unlink(missing_ok=True)
    env = {"GIT_INDEX_FILE": str(index)}
    git(checkout, "add", "-A", ".", env=env)
    tree = git(checkout, "write-tree", env=env)
    index.unlink(missing_ok=True)
    commit = git(checkout, "commit-tree", tree, "-m", "baton: the task's files")
    git(checkout, "update-ref", BASE_REF, commit)
    git(checkout, "bundle", "create", "-q", str(out), BASE_REF)
    data = out.read_bytes()
    out.unlink()
    return data


def take_result(checkout: Path, bundle: bytes, path: Path) -> None:
    """Put the node's result into the checkout's files (not its HEAD): every file the agent
    wrote, added or deleted there is so here."""
    path.write_bytes(bundle)
    git(checkout, "fetch", "-q", "-f", str(path), f"{RESULT_REF}:{RESULT_REF}")
    git(checkout, "read-tree", BASE_REF)  # the index says what the files are now
    git(checkout, "read-tree", "-u", "--reset", RESULT_REF)


def loopback_only() -> None:
    """Keep Ray on 127.0.0.1 (a cluster of one host, as in the tests): Ray otherwise
    replaces that address by the host's routable one. Ray's private API: tests only."""
    import ray._private.services as services

    services.resolve_ip_for_localhost = lambda host: host


class Relay:
    def __init__(self, spec: dict[str, Any], spec_path: Path) -> None:
        self.spec = spec
        self.folder = spec_path.parent
        self.state = Path(spec["state"])
        self.name = f"{spec['task_id']}-{spec['attempt']}"
        self.seq = 0
        self.stopping = False
        self.actor: Any = None
        self.ended = False

    async def main(self) -> int:
        import ray

        if self.spec.get("loopback"):
            loopback_only()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, lambda: loop.create_task(self.stop()))
        try:
            ray.init(
                address=self.spec["address"], namespace=self.spec["namespace"],
                log_to_driver=False, logging_level=logging.ERROR,
            )  # fmt: skip
        except Exception as exc:
            return self.fail(UNPLACEABLE, f"could not reach the Ray cluster: {exc}")
        try:
            return await self.relay(ray)
        finally:
            if self.actor is not None and self.stopping:
                with contextlib.suppress(Exception):
                    ray.kill(self.actor)
            elif self.actor is not None and self.ended:
                with contextlib.suppress(Exception):
                    await asyncio.wait_for(self.actor.release.remote(), 5.0)

    def fail(self, code: int, message: str, key: str = "error") -> int:
        write_state(self.state, **{key: message})
        print(f"baton: {message}", file=sys.stderr, flush=True)
        return code

    async def relay(self, ray: Any) -> int:
        resources: dict[str, float] = dict(self.spec.get("resources") or {})
        try:
            self.actor = ray.get_actor(self.name)
            write_state(self.state, reattached=time.time())
        except ValueError:
            have = ray.cluster_resources()
            missing = sorted(k for k, v in resources.items() if have.get(k, 0) < v)
            if missing:
                return self.fail(
                    UNPLACEABLE, f"no node of the cluster has {', '.join(missing)} (ray_resources)"
                )
            bundle = await asyncio.to_thread(
                bundle_files, Path(self.spec["checkout"]), self.folder / f"{self.name}.base.bundle"
            )
            body = ray.remote(AttemptRun)
            self.actor = body.options(
                name=self.name, lifetime="detached", num_cpus=0, resources=resources,
                max_restarts=0, max_concurrency=4,
            ).remote({**self.spec, "linger": LINGER}, bundle)  # fmt: skip
        write_state(self.state, actor=self.name, namespace=self.spec["namespace"])
        try:
            where = await self.actor.where.remote()
        except ray.exceptions.RayActorError as exc:
            return self.fail(LOST, f"the node was lost before the agent started: {exc}", "lost")
        write_state(self.state, node=where)
        return await self.stream(ray)

    async def stream(self, ray: Any) -> int:
        out = sys.stdout.buffer
        failures = 0
        while True:
            gen = self.actor.run.options(num_returns="streaming").remote(self.seq)
            try:
                while True:
                    try:
                        ref = await asyncio.wait_for(gen.__anext__(), IDLE)
                    except TimeoutError:
                        if not await self.answers(ray):
                            return self.fail(LOST, "the node stopped answering", "lost")
                        break  # it answers: ask again from where we are
                    item = await ref
                    failures = 0
                    if "line" in item:
                        if item["seq"] == self.seq:  # a repeat after a reconnect is skipped
                            out.write(item["line"].encode("utf-8", "replace") + b"\n")
                            out.flush()
                            self.seq += 1
                    elif item.get("end"):
                        return self.finish(item)
            except StopAsyncIteration:
                pass
            except ray.exceptions.ActorDiedError as exc:
                if self.stopping:
                    return STOPPED
                return self.fail(LOST, f"the node running the agent was lost: {exc}", "lost")
            except (ray.exceptions.RayError, OSError) as exc:
                failures += 1
                if failures > 5:
                    return self.fail(LOST, f"the node's stream kept failing: {exc}", "lost")
                await asyncio.sleep(min(2.0, 0.2 * failures))

    async def answers(self, ray: Any) -> bool:
        try:
            await asyncio.wait_for(self.actor.where.remote(), min(10.0, IDLE))
            return True
        except (TimeoutError, ray.exceptions.RayError):
            with contextlib.suppress(Exception):
                ray.kill(self.actor)
            return False

    def finish(self, end: dict[str, Any]) -> int:
        self.ended = True
        if end.get("stderr"):
            sys.stderr.write(end["stderr"])
            sys.stderr.flush()
        if end.get("failure"):
            return self.fail(UNPLACEABLE, str(end["failure"]))
        if end.get("bundle"):
            path = self.folder / f"{self.name}.result.bundle"
            try:
                take_result(Path(self.spec["checkout"]), end["bundle"], path)
            except (OSError, subprocess.CalledProcessError) as exc:
                detail = getattr(exc, "stderr", "") or ""
                return self.fail(UNPLACEABLE, f"could not take the node's result: {exc} {detail}")
            finally:
                path.unlink(missing_ok=True)
        elif end.get("exit") is not None:
            return self.fail(UNPLACEABLE, "the node sent no result")
        write_state(self.state, ended=time.time(), lines=self.seq, sandbox=end.get("sandbox"))
        if end.get("stopped"):
            return STOPPED
        code = end.get("exit")
        return int(code) if code is not None else 1

    async def stop(self) -> None:
        """Stop the remote agent's tree (the relay exits once the node says it ended)."""
        if self.stopping:
            return
        self.stopping = True
        if self.actor is None:
            os._exit(STOPPED)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.actor.stop.remote(0.5), 5.0)
        await asyncio.sleep(3.0)  # the end normally arrives first, and the relay exits then
        import ray

        with contextlib.suppress(Exception):  # not placed yet, or its node frozen: never later
            ray.kill(self.actor)
        os._exit(STOPPED)


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: python -m baton.process.ray_relay SPEC", file=sys.stderr)
        return 2
    spec_path = Path(argv[0])
    spec = json.loads(spec_path.read_text())
    # Secrets the profile may ship come through our environment, never through the file.
    shipped = {n: os.environ[n] for n in spec.pop("ship_env", []) if n in os.environ}
    spec["profile"]["env"] = {**spec["profile"].get("env", {}), **shipped}
    return asyncio.run(Relay(spec, spec_path).main())


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
