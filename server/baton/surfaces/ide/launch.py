"""How to start Claude Code so that it connects to an IDE server."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path


def claude_env(
    port: int,
    base: Mapping[str, str] | None = None,
    *,
    config_dir: Path | None = None,
) -> dict[str, str]:
    """The environment for launching ``claude`` (interactive) against the server on ``port``.

    ``CLAUDE_CODE_SSE_PORT`` is what makes the CLI connect (it reads the lock file of that
    port); ``ENABLE_IDE_INTEGRATION=true`` is what IDE extensions also set. ``base`` (e.g.
    ``os.environ``) is copied first; ``config_dir``, when the server wrote its lock somewhere
    other than the CLI's default, is passed as ``CLAUDE_CONFIG_DIR``. Print mode (``-p``) never
    connects to an IDE.
    """
    env = dict(base or {})
    env["CLAUDE_CODE_SSE_PORT"] = str(port)
    env["ENABLE_IDE_INTEGRATION"] = "true"
    env.pop("CLAUDE_CODE_AUTO_CONNECT_IDE", None)  # "false" there would switch the connection off
    if config_dir is not None:
        env["CLAUDE_CONFIG_DIR"] = str(config_dir)
    return env
