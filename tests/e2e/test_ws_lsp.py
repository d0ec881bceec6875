"""The language server's broker listens on the websocket too: with `baton lsp` running for a
folder, the CLI in that folder talks to the editor's broker instead of starting its own."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from baton.surfaces.ws import discovery
from tests.conftest import fake_script
from tests.e2e.test_cli import as_json, baton


def lsp_message(obj: dict[str, object]) -> bytes:
    body = json.dumps(obj).encode()
    return f"Content-Length: {len(body)}\r\n\r\n".encode() + body


def test_cli_uses_the_language_servers_broker(baton_home: Path, repo: Path, tmp_path: Path) -> None:
    lsp = subprocess.Popen(
        [sys.executable, "-m", "baton.cli", "lsp"],
        stdin=subprocess.PIPE,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=dict(os.environ),
    )
    run = tmp_path / "run" / "baton"
    try:
        assert lsp.stdin is not None
        init = {
            "processId": os.getpid(),
            "rootUri": repo.as_uri(),
            "capabilities": {},
            "workspaceFolders": [{"uri": repo.as_uri(), "name": "repo"}],
        }
        lsp.stdin.write(
            lsp_message({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
        )
        lsp.stdin.write(lsp_message({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        lsp.stdin.flush()
        deadline = time.monotonic() + 15
        while not (found := discovery.live_brokers(run)):
            assert time.monotonic() < deadline, "the language server wrote no discovery file"
            time.sleep(0.05)
        (rec,) = found
        assert rec.pid == lsp.pid and not rec.headless and rec.roots == [str(repo)]

        health = as_json(baton("health", "--json", cwd=repo))
        assert health["pid"] == lsp.pid and health["headless"] is False
        made = baton("delegate", "--cwd", str(repo), fake_script(summary="via the editor"))
        watched = baton("watch", "--json", "--timeout", "30", made.stdout.strip(), cwd=repo)
        assert watched.returncode == 0 and as_json(watched)["task"]["state"] == "answered"
        assert [b.pid for b in discovery.live_brokers(run)] == [lsp.pid]  # none started
    finally:
        lsp.terminate()
        lsp.wait(10)
