"""Secrets: profile env values that refer to the OS keyring, masking, and the opt-in file backend.

A profile's env value ``keyring:SERVICE/NAME`` (``keyring:NAME`` means service ``baton``) is
looked up in the keyring only when an agent is started, and only handed to that process: it
is never written to the database, a log, an event or any output. Values of secret-like
variables (names containing KEY, TOKEN, SECRET or PASS) are shown masked everywhere. What an
agent prints or writes is masked with :mod:`baton.core.masking` (whole, cut, in pieces); its
process wrapper finds the values through :data:`~baton.core.masking.MASK_ENV`
(:func:`with_mask_names`), so they are never written anywhere.

Where no keyring backend exists (headless Linux without Secret Service or KWallet), Baton
says so and uses :class:`FileKeyring` — an unencrypted JSON file readable only by the
user — only when the user opts in: ``[secrets] backend = "file"`` in the user config,
``BATON_KEYRING=file``, or ``PYTHON_KEYRING_BACKEND=baton.config.secrets.FileKeyring``.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from baton.config.secretsfile import OPT_IN, secrets_file
from baton.core import masking
from baton.core.masking import MASK, MASK_ENV
from baton.errors import BatonError, Unavailable

REF_PREFIX = "keyring:"
DEFAULT_SERVICE = "baton"
_SECRET_NAME = re.compile(r"KEY|TOKEN|SECRET|PASS", re.I)

if TYPE_CHECKING:
    from keyring.backend import KeyringBackend

    from baton.config.filekeyring import FileKeyring


@dataclass(frozen=True, slots=True)
class SecretRef:
    """A keyring entry: service and name (keyring's "username")."""

    service: str
    name: str

    def __str__(self) -> str:
        return f"{REF_PREFIX}{self.service}/{self.name}"

    @property
    def label(self) -> str:
        return f"{self.service}/{self.name}"


class SecretError(BatonError, RuntimeError):
    """A secret cannot be read or written; the message says what to do."""


class NoKeyring(Unavailable, SecretError):
    """No keyring backend is available and the file backend was not opted in to."""


def parse_ref(value: str) -> SecretRef | None:
    """The reference in an env value ``keyring:SERVICE/NAME``, or None for a plain value."""
    if not value.startswith(REF_PREFIX):
        return None
    return parse_name(value[len(REF_PREFIX) :])


def parse_name(text: str) -> SecretRef:
    """``SERVICE/NAME`` or ``NAME`` (service ``baton``) as a reference."""
    service, sep, name = text.strip().partition("/")
    if not sep:
        service, name = DEFAULT_SERVICE, service
    if not service or not name:
        raise SecretError(f"{text!r}: expected SERVICE/NAME or NAME, e.g. baton/claude-work")
    return SecretRef(service, name)


def is_secret_like(name: str) -> bool:
    """A variable or setting whose name says it holds a secret (KEY, TOKEN, SECRET, PASS)."""
    return bool(_SECRET_NAME.search(name))


def mask(name: str, value: Any) -> Any:
    """``value`` as it may be shown: references as they are, secret-like values masked."""
    if isinstance(value, str) and parse_ref(value) is not None:
        return value
    if is_secret_like(name) and value not in (None, ""):
        return MASK
    return value


# -- backends -----------------------------------------------------------------------------------


def __getattr__(name: str) -> Any:
    # The keyring library is imported only when a secret is read or written: a broker that
    # starts agents with no keyring reference never pays for it.
    if name == "FileKeyring":
        from baton.config.filekeyring import FileKeyring

        return FileKeyring
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def use_backend(choice: str | None) -> None:
    """Apply the user's ``[secrets] backend`` choice (``file`` opts in to the file backend)."""
    if choice == "file" or os.environ.get(OPT_IN) == "file":
        os.environ.setdefault(OPT_IN, "file")
        import keyring

        from baton.config.filekeyring import FileKeyring

        if not isinstance(keyring.get_keyring(), FileKeyring):
            keyring.set_keyring(FileKeyring())


def backend() -> KeyringBackend:
    """The keyring in use; :class:`NoKeyring` with what to do when there is none."""
    import keyring
    from keyring.backends import fail

    from baton.config.filekeyring import FileKeyring

    if os.environ.get(OPT_IN) == "file" and not isinstance(keyring.get_keyring(), FileKeyring):
        keyring.set_keyring(FileKeyring())
    kr = keyring.get_keyring()
    if isinstance(kr, fail.Keyring):
        raise NoKeyring(
            "no OS keyring is available here (no Secret Service, KWallet, macOS Keychain or "
            "Windows Credential Locker; usual on headless Linux). Start one (e.g. "
            "gnome-keyring-daemon), or opt in to Baton's unencrypted file backend "
            f"({secrets_file()}, readable only by you): set {OPT_IN}=file or add "
            '[secrets] backend = "file" to your user config'
        )
    return kr


def backend_name() -> str:
    kr = backend()
    return f"{type(kr).__module__}.{type(kr).__name__}"


def get_secret(ref: SecretRef) -> str | None:
    import keyring.errors

    try:
        return backend().get_password(ref.service, ref.name)
    except keyring.errors.KeyringError as exc:
        raise SecretError(f"could not read {ref.label} from the keyring: {exc}") from exc


def set_secret(ref: SecretRef, value: str) -> None:
    import keyring.errors

    try:
        backend().set_password(ref.service, ref.name, value)
    except keyring.errors.KeyringError as exc:
        raise SecretError(f"could not store {ref.label} in the keyring: {exc}") from exc


def delete_secret(ref: SecretRef) -> bool:
    """Remove a secret; False when there was none."""
    import keyring.errors

    kr = backend()
    if kr.get_password(ref.service, ref.name) is None:
        return False
    try:
        kr.delete_password(ref.service, ref.name)
    except keyring.errors.KeyringError as exc:
        raise SecretError(f"could not delete {ref.label}: {exc}") from exc
    return True


def resolve_env(env: Mapping[str, str], owner: str = "") -> tuple[dict[str, str], list[str]]:
    """``env`` with keyring references replaced by their values, and the secret values.

    Raises :class:`SecretError` naming the variable and the command that sets a missing one.
    """
    out: dict[str, str] = {}
    secrets: list[str] = []
    for key, value in env.items():
        ref = parse_ref(value)
        if ref is None:
            out[key] = value
            if is_secret_like(key) and len(value) >= 8:
                secrets.append(value)
            continue
        found = get_secret(ref)
        if found is None:
            who = f"profile {owner!r}: " if owner else ""
            raise SecretError(
                f"{who}env {key} refers to {ref}, which is not in the keyring; "
                f"set it with: baton secret set {ref.label}"
            )
        out[key] = found
        secrets.append(found)
    return out, secrets


def with_mask_names(env: Mapping[str, str], secrets: list[str]) -> dict[str, str]:
    """``env`` (resolved) plus :data:`~baton.core.masking.MASK_ENV` naming its variables that
    hold one of ``secrets``: the agent's wrapper masks their values in its output files."""
    out = {k: v for k, v in env.items() if k != MASK_ENV}
    names = sorted(k for k, v in out.items() if v and v in secrets)
    if names:
        out[MASK_ENV] = ",".join(names)
    return out


R = TypeVar("R")


def redact(obj: R, secrets: list[str]) -> R:
    """``obj`` (str, list, dict, nested) with every secret value masked in its strings —
    whole, or with whitespace between its pieces (see :mod:`baton.core.masking`)."""
    return masking.redact(obj, secrets)


__all__ = [
    "MASK",
    "FileKeyring",
    "NoKeyring",
    "SecretError",
    "SecretRef",
    "backend",
    "delete_secret",
    "get_secret",
    "is_secret_like",
    "mask",
    "parse_name",
    "parse_ref",
    "redact",
    "resolve_env",
    "set_secret",
    "use_backend",
    "with_mask_names",
]
