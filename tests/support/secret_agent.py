"""An agent that leaks its secret every way it can, speaking the fake agent's JSON lines.

Run as the ``binary`` of a ``fake`` profile (the fake adapter's arguments are ignored). It
reads the secret from ``$API_TOKEN`` (never from its command line) and prints it: whole, in
pieces spread over several text deltas and over several writes, folded (``fold -w 8``) in a
delta and as plain lines, to stderr, in a tool's result and in its final answer; it writes
``token=<secret>`` into ``config.txt`` in its checkout. With ``$AGENT_GO`` set, it stops
halfway — just after a delta that ends with the secret's first characters — touches
``$AGENT_GO.ready`` and waits until ``$AGENT_GO`` exists (so a test can kill its broker and
start another), then prints the rest of that secret and the secret again.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

TOKEN = os.environ.get("API_TOKEN", "")


def emit(obj: dict[str, object]) -> None:
    os.write(1, (json.dumps(obj) + "\n").encode())


def delta(text: str) -> None:
    emit({"type": "delta", "text": text})


def fold(text: str, width: int = 8) -> str:
    return "".join(text[i : i + width] + "\n" for i in range(0, len(text), width))


def main() -> int:
    if len(TOKEN) < 30:
        emit({"type": "error", "kind": "auth", "message": "no API_TOKEN"})
        return 3
    emit({"type": "session", "id": "secret-agent-1"})
    delta("whole: " + TOKEN + "\n")
    for piece in ("pieces: " + TOKEN[:10], TOKEN[10:25], TOKEN[25:] + "\n"):
        delta(piece)
        time.sleep(0.05)
    delta("folded:\n" + fold(TOKEN))
    # One JSON line in two writes, the cut inside the secret: two chunks for the wrapper.
    line = (json.dumps({"type": "delta", "text": "cut: " + TOKEN + "\n"}) + "\n").encode()
    cut = line.index(TOKEN.encode()) + 6
    os.write(1, line[:cut])
    time.sleep(0.1)
    os.write(1, line[cut:])
    subprocess.run(["fold", "-w", "8"], input=TOKEN + "\n", text=True, check=True)
    os.write(2, ("stderr: " + TOKEN + "\n" + fold(TOKEN)).encode())
    Path("config.txt").write_text("token=" + TOKEN + "\n", encoding="utf-8")
    emit({"type": "tool", "name": "write", "path": "config.txt"})
    emit({"type": "tool_result", "name": "bash", "ok": True, "output": fold(TOKEN)})
    go = os.environ.get("AGENT_GO")
    if go:
        delta("next: " + TOKEN[:14])
        Path(go + ".ready").touch()
        deadline = time.monotonic() + 120
        while not Path(go).exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        delta(TOKEN[14:] + "\n")
        delta("after the restart: " + TOKEN + "\n")
    emit({"type": "done", "result": "finished; the token was " + TOKEN})
    return 0


if __name__ == "__main__":
    sys.exit(main())
