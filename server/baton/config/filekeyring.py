"""Baton's opt-in file backend for keyring: an unencrypted JSON file, readable only by the
user, for machines with no OS keyring (see :mod:`baton.config.secrets`, which imports this,
and with it the keyring library, only when a secret is read or written)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import keyring.errors
from keyring.backend import KeyringBackend
from keyring.compat import properties

from baton.config.secretsfile import opt_in_advice, opted_in, secrets_file


class FileKeyring(KeyringBackend):
    """An unencrypted JSON file (0600), for machines without a keyring; opt-in only.

    Not viable unless opted in, so keyring never picks it on its own.
    """

    def __init__(self) -> None:
        super().__init__()  # type: ignore[no-untyped-call]

    @properties.classproperty
    def priority(cls) -> float:
        if not opted_in():
            raise RuntimeError(f"Baton's file keyring is opt-in: {opt_in_advice()}")
        return 0.2

    def _load(self) -> dict[str, dict[str, str]]:
        path = secrets_file()
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise keyring.errors.KeyringError(f"cannot read {path}: {exc}") from exc
        return data if isinstance(data, dict) else {}

    def _save(self, data: dict[str, dict[str, str]]) -> None:
        path = secrets_file()
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".secrets-")
        try:
            os.fchmod(fd, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise

    def get_password(self, service: str, username: str) -> str | None:
        return self._load().get(service, {}).get(username)

    def set_password(self, service: str, username: str, password: str) -> None:
        data = self._load()
        data.setdefault(service, {})[username] = password
        self._save(data)

    def delete_password(self, service: str, username: str) -> None:
        data = self._load()
        if username not in data.get(service, {}):
            raise keyring.errors.PasswordDeleteError(f"no secret {service}/{username}")
        del data[service][username]
        self._save(data)
