"""One attempt on a node of a Ray cluster: the checkout, the agent, its lines, its result.

:class:`AttemptRun` is the body of the short-lived actor the relay
(:mod:`baton.process.ray_relay`) creates for one attempt, on a node that has the resources
the profile asks for. It imports nothing of Ray: the relay makes it an actor. On its first
:meth:`AttemptRun.run` it

- makes a checkout from the git bundle it was given (one parentless commit of the task's
  files as the broker's checkout holds them: no history travels),
- starts the agent exactly as a local attempt starts (the adapter's launch for a turn whose
  folders are the node's, the same sandbox setting, :func:`baton.process.spawn.spawn`: the
  wrapper, its claim and exit record in a task folder on the node), with a tether that ends
  the agent's tree if the actor's process dies,
- and keeps every line of the agent's stdout, numbered from 0.

``run(from_seq)`` streams ``{"seq", "line"}`` items from ``from_seq`` (a reader that lost
its stream asks again from where it stopped), ``{"beat"}`` every few seconds of silence, and
last ``{"end", "exit", "stderr", "bundle"}``: the exit code and a bundle of one commit whose
tree is the checkout's files after the agent (parent: the commit it was given). A newer reader
ends an older one's stream (the relay asks again after a silence it cannot explain, and a
relay started again replaces a dead one), so no thread of the actor is held by a stream
nobody reads. :meth:`AttemptRun.stop` ends the agent's
process tree.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from baton.agents.base import Turn
from baton.agents.registry import adapter_for
from baton.config.profiles import Profile
from baton.process.spawn import ProcessRecord, is_alive, kill_tree, read_exit, spawn
from baton.process.transport import confinement_for

#: The ref of the commit the broker sent, and of the result, in the node's checkout.
BASE_REF = "refs/baton/remote-base"
RESULT_REF = "refs/baton/remote-result"
#: Seconds of silence after which ``run`` says it is still there.
BEAT = 2.0
#: Seconds an ended attempt waits for a reader to take its result before its actor's process
#: exits (the relay asks for it in the spec: ``linger``).
LINGER = 120.0
_STDERR_LIMIT = 64 * 1024


def node_home() -> Path:
    """Where this node keeps its attempts' checkouts: ``BATON_NODE_HOME`` or
    ``~/.local/state/baton-node``."""
    given = os.environ.get("BATON_NODE_HOME")
    return Path(given) if given else Path.home() / ".local" / "state" / "baton-node"


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    """Run git in ``cwd``; its stdout. The node's git identity and hooks play no part."""
    full = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    full.update(env or {})
    return subprocess.run(
        ["git", "-c", "core.hooksPath=/dev/null", "-c", "user.name=Baton",
         "-c", "user.email=baton@localhost", *args],
        cwd=cwd, env=full, check=True, capture_output=True, text=True,
    ).stdout.strip()  # fmt: skip


class AttemptRun:
    """One attempt, run on this node (see the module's docstring)."""

    def __init__(self, spec: dict[str, Any], bundle: bytes) -> None:
        self.spec = spec  # task_id, attempt, namespace, turn (Turn's fields), profile (Profile's)
        self.bundle = bundle
        self.lines: list[str] = []
        self.ended: dict[str, Any] | None = None
        self.record: ProcessRecord | None = None
        self.failure: str | None = None
        self._cv = threading.Condition()
        self._started = False
        self._stopping = False
        self._reader = 0  # the newest reader streams; an older one's stream ends
        self._linger_for = float(spec.get("linger") or LINGER)
        self.checkout = Path()  # set once the checkout is made
        self.sandbox_note = ""

    # ------------------------------------------------------------------ the actor's methods

    def where(self) -> dict[str, Any]:
        """Which node this is (``node_id`` when Ray says), and how far the attempt is."""
        node = ""
        with contextlib.suppress(Exception):
            import ray

            if ray.is_initialized():  # inside an actor; never start a Ray of our own
                node = ray.get_runtime_context().get_node_id()
        return {"node_id": node, "host": os.uname().nodename, "pid": os.getpid(),
                "lines": len(self.lines), "ended": self.ended is not None}  # fmt: skip

    def run(self, from_seq: int = 0) -> Iterator[dict[str, Any]]:
        """Stream the attempt's lines from ``from_seq``, then its end (starting it once)."""
        self._start_once()
        with self._cv:
            self._reader += 1
            me = self._reader
        seq = from_seq
        while True:
            with self._cv:
                if seq >= len(self.lines) and self.ended is None:
                    self._cv.wait(BEAT)
                if self._reader != me:  # a newer reader took over (ours is gone or slow)
                    return
                batch, ended = self.lines[seq:], self.ended
            for line in batch:
                yield {"seq": seq, "line": line}
                seq += 1
            if ended is not None and seq >= len(self.lines):
                yield ended
                return
            if not batch:
                yield {"beat": time.time()}

    def release(self, within: float = 0.5) -> None:
        """A reader has the result: the actor's process ends ``within`` seconds from now
        (time for another reader of the same attempt to finish)."""
        self._linger_for = min(self._linger_for, within)
        with self._cv:
            self._cv.notify_all()

    def stop(self, grace: float = 3.0) -> bool:
        """End the agent's process tree (TERM, KILL after ``grace``); whether one ran."""
        self._stopping = True
        record = self.record
        if record is None:
            return False
        asyncio.run(kill_tree(record.pid, grace, record.create_time))
        return True

    # ------------------------------------------------------------------ the attempt

    def _start_once(self) -> None:
        with self._cv:
            if self._started:
                return
            self._started = True
        try:
            self._launch()
        except Exception as exc:  # the reader gets it as the end, with the reason
            self._end(None, f"could not start on this node: {type(exc).__name__}: {exc}")
            return
        threading.Thread(target=self._follow, name="attempt-lines", daemon=True).start()

    def _folder(self) -> Path:
        """The task's folder on this node: one checkout for all its attempts here, so a CLI
        that keys its sessions by folder resumes them in the next turn."""
        node = self.where()["node_id"][:12] or "local"
        return node_home() / node / str(self.spec["namespace"]) / str(self.spec["task_id"])

    def _launch(self) -> None:
        folder = self._folder()
        checkout, task_dir = folder / "checkout", folder / "task"
        task_dir.mkdir(parents=True, exist_ok=True)
        checkout.mkdir(parents=True, exist_ok=True)
        bundle = folder / f"base-{self.spec['attempt']}.bundle"
        bundle.write_bytes(self.bundle)
        if not (checkout / ".git").exists():
            git(checkout, "init", "-q")
        git(checkout, "fetch", "-q", "-f", str(bundle), f"{BASE_REF}:{BASE_REF}")
        git(checkout, "checkout", "-q", "-f", "-B", f"baton/{self.spec['task_id']}", BASE_REF)
        git(checkout, "clean", "-q", "-f", "-d")  # what an earlier turn left: not in the base
        bundle.unlink()
        self.checkout = checkout
        fields = dict(self.spec["turn"])
        fields["cwd"] = str(checkout / fields.pop("subdir", ""))
        fields["task_dir"] = str(task_dir)
        for key in ("files", "scope", "hide"):
            fields[key] = tuple(fields.get(key) or ())
        turn = Turn(**fields)
        profile = Profile(**self.spec["profile"])
        launch = adapter_for(profile.provider).launch(turn, profile)
        confinement = confinement_for(launch, task_dir, turn, profile)
        n = int(self.spec["attempt"])
        self.record = spawn(launch, task_dir, n, confinement)
        self.sandbox_note = confinement.note
        tether = [sys.executable, "-P", "-m", "baton.process.ray_node", "tether",
                  str(os.getpid()), str(self.record.pid), str(self.record.create_time)]  # fmt: skip
        subprocess.Popen(
            tether, start_new_session=True, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, close_fds=True,
        )  # fmt: skip

    def _follow(self) -> None:
        """Read the agent's stdout file as it grows, until its wrapper is gone."""
        record = self.record
        assert record is not None
        pending, checked = b"", time.monotonic()
        with open(record.out_path, "rb") as out:
            while True:
                done = record.exit_path.exists()
                if not done and time.monotonic() - checked > 0.5:
                    checked = time.monotonic()
                    done = not is_alive(record.pid, record.create_time)
                chunk = out.read()  # after ``done``: everything the agent wrote
                pending += chunk
                *whole, pending = pending.split(b"\n")
                if whole:
                    with self._cv:
                        self.lines.extend(w.decode("utf-8", "replace") for w in whole)
                        self._cv.notify_all()
                if done:
                    break
                if not chunk:
                    time.sleep(0.005)
        if pending:
            with self._cv:
                self.lines.append(pending.decode("utf-8", "replace"))
        time.sleep(0.05)  # the exit record may be in flight
        exit_record = read_exit(record.exit_path) if record.exit_path.exists() else None
        self._end(exit_record.code if exit_record else None, None)

    def _end(self, code: int | None, failure: str | None) -> None:
        bundle: bytes | None = None
        stderr = failure or ""
        if self.record is not None:
            with contextlib.suppress(OSError):
                stderr = self.record.err_path.read_bytes()[-_STDERR_LIMIT:].decode(
                    "utf-8", "replace"
                )
            try:
                bundle = self._result()
            except (OSError, subprocess.CalledProcessError) as exc:
                stderr += f"\nbaton: the result could not be bundled on the node: {exc}\n"
        with self._cv:
            self.ended = {"end": True, "exit": code, "stderr": stderr, "bundle": bundle,
                          "failure": failure, "stopped": self._stopping,
                          "sandbox": self.sandbox_note}  # fmt: skip
            self._cv.notify_all()
        if self.spec.get("linger"):  # an actor's process ends itself; a test's never does
            threading.Thread(target=self._linger, name="attempt-linger", daemon=True).start()

    def _result(self) -> bytes:
        """A bundle of one commit: the checkout's files now, on top of the base."""
        checkout = self.checkout
        folder = checkout.parent
        index = folder / "result.index"
        index.unlink(missing_ok=True)
        env = {"GIT_INDEX_FILE": str(index)}
        git(checkout, "add", "-A", ".", env=env)
        tree = git(checkout, "write-tree", env=env)
        commit = git(checkout, "commit-tree", tree, "-p", BASE_REF, "-m", "result")
        git(checkout, "update-ref", RESULT_REF, commit)
        out = folder / "result.bundle"
        git(checkout, "bundle", "create", "-q", str(out), RESULT_REF, f"^{BASE_REF}")
        data = out.read_bytes()
        out.unlink()
        return data

    def _linger(self) -> None:
        """The result waits for its reader a while; then the actor's process ends."""
        ended = time.monotonic()
        while time.monotonic() - ended < self._linger_for:
            time.sleep(0.2)
        os._exit(0)


def tether(actor_pid: int, wrapper_pid: int, create_time: float) -> None:
    """End the agent's tree once the actor's process is gone (a node's worker killed, the
    actor killed): the wrapper runs in a session of its own and would outlive it."""
    while is_alive(wrapper_pid, create_time):
        if not is_alive(actor_pid):
            asyncio.run(kill_tree(wrapper_pid, 2.0, create_time))
            return
        time.sleep(0.5)


def _main(argv: list[str]) -> int:
    if len(argv) == 4 and argv[0] == "tether":
        tether(int(argv[1]), int(argv[2]), float(argv[3]))
        return 0
    print("usage: python -m baton.process.ray_node tether ACTOR_PID WRAPPER_PID CREATE_TIME")
    return 2


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))


__all__ = ["BASE_REF", "RESULT_REF", "AttemptRun", "node_home", "tether"]
