"""What the broker tells a new ACP runner: kept apart from the runner so that the broker does
not import the ACP SDK (a heavy import) until a runner actually runs."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(slots=True)
class Spec:
    """What the broker tells a new runner (``acp-spec-<n>.json`` in the task's folder)."""

    argv: list[str]
    cwd: str
    task_dir: str
    attempt: int
    prompt_file: str
    reason: str = "first"
    session_id: str | None = None  # continue this session (load it, or carry its context)
    brief_file: str = ""
    policy: dict[str, str] = field(default_factory=dict)
    fresh_session_after_abort: bool = False
    guard_repeats: bool = False
    flag_zero_usage: bool = False
    idle_exit: float = 1800.0
    socket: str = ""

    @classmethod
    def load(cls, path: str | Path) -> Spec:
        obj = json.loads(Path(path).read_text(encoding="utf-8"))
        return cls(**{k: v for k, v in obj.items() if k in cls.__dataclass_fields__})

    def to_json(self) -> dict[str, Any]:
        return {k: getattr(self, k) for k in self.__dataclass_fields__}
