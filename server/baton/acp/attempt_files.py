"""The files of an ACP session's attempts: what the broker tails, as for a native agent.

For each prompt turn *k* the session runner writes Baton's normalized events as JSON lines
to ``attempt-<k>.out`` in the task's folder and, when the turn ends, an exit record to
``attempt-<k>.exit`` — exactly what the broker tails for a native agent, so following,
persisting and adopting an attempt work the same. It holds the claim of each turn it takes
(``attempt-<k>.lock`` / ``.pid``, naming its wrapper) for the rest of its life, so
:func:`baton.process.spawn.find_attempt` finds an ACP turn as it finds a native one; the
first turn's claim is the wrapper's own.

Secret values (named by ``BATON_MASK_ENV`` in the environment the runner shares with its
agent, as for the wrapper) are masked in every event line written; a secret spread over
several events is masked by the broker, which reads those lines as one text stream.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

import psutil

from baton.core.events import Event, EventType
from baton.core.masking import prepare, redact, values_from_env
from baton.process.wrap import take_lock, write_claim, write_exit


class AttemptFiles:
    """The attempt files of one task's session runner (``first``: the attempt it started for)."""

    def __init__(self, task_dir: Path, first: int) -> None:
        self.task_dir = task_dir
        self.first = first
        self.wrapper = os.getppid()  # the process a broker records for every turn of ours
        try:
            self.wrapper_created = float(psutil.Process(self.wrapper).create_time())
        except psutil.Error:
            self.wrapper_created = 0.0
        self._secrets = prepare(values_from_env(os.environ))  # masked in what is written
        self._out: BinaryIO | None = None
        self._claims: dict[int, int] = {}  # attempt → the descriptor holding its lock

    @property
    def err_path(self) -> str:
        """The wrapper's stderr file (the first attempt's): every turn's claim names it."""
        return str(self.task_dir / f"attempt-{self.first}.err")

    def emit(self, evs: Sequence[Event]) -> None:
        """Append ``evs`` to the open attempt's output (nothing when none is open)."""
        if self._out is None:
            return
        for e in evs:
            line = redact(e.to_json(), self._secrets)
            self._out.write(json.dumps(line).encode() + b"\n")
        self._out.flush()

    def log(self, message: str, level: str = "info") -> None:
        self.emit([Event(EventType.LOG, {"level": level, "message": message})])

    def claim(self, attempt: int) -> bool:
        """Hold attempt ``attempt``'s claim for the rest of this runner's life (as a wrapper
        holds its own), naming our wrapper, so a broker that lost its memory finds the turn.
        False when another process holds it."""
        if attempt == self.first or attempt in self._claims:
            return True
        stem = self.task_dir / f"attempt-{attempt}"
        fd = take_lock(f"{stem}.lock")
        if fd is None:
            return False
        self._claims[attempt] = fd
        write_claim(f"{stem}.pid", self.wrapper, self.wrapper_created, err_path=self.err_path)
        return True

    def open(self, attempt: int) -> None:
        """Point the event output at ``attempt-<n>.out`` (created now, so a tail can open it)."""
        (self.task_dir / f"attempt-{attempt}.exit").unlink(missing_ok=True)
        self.close_output()
        self._out = open(self.task_dir / f"attempt-{attempt}.out", "ab")  # noqa: SIM115

    def close(self, attempt: int) -> None:
        """The attempt ended: its output is closed, then its exit record written."""
        self.close_output()
        record = {"exit": 0, "signal": None, "received": None, "error": None}
        write_exit(
            str(self.task_dir / f"attempt-{attempt}.exit"), {**record, "ended_at": time.time()}
        )

    def close_output(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None
