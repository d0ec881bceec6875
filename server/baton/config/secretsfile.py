"""Where Baton's opt-in file backend keeps secrets, and whether the user opted in to it.

Standard library only: the sandbox hides the file from agents, and :mod:`baton.config.secrets`
says where it is, without importing the keyring library.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The variable that opts in to the file backend (``BATON_KEYRING=file``).
OPT_IN = "BATON_KEYRING"
#: The backend's names for ``PYTHON_KEYRING_BACKEND``.
_THIS = ("baton.config.secrets.FileKeyring", "baton.config.filekeyring.FileKeyring")


def secrets_file() -> Path:
    """Where the opt-in file backend keeps secrets (``$BATON_SECRETS_FILE`` or XDG data)."""
    explicit = os.environ.get("BATON_SECRETS_FILE")
    if explicit:
        return Path(explicit).expanduser()
    xdg = os.environ.get("XDG_DATA_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else Path.home() / ".local" / "share"
    return base / "baton" / "secrets.json"


def opted_in() -> bool:
    """Whether the user opted in to the file backend."""
    return os.environ.get(OPT_IN) == "file" or os.environ.get("PYTHON_KEYRING_BACKEND") in _THIS


def opt_in_advice() -> str:
    return f'set {OPT_IN}=file or [secrets] backend = "file" in your user config'
