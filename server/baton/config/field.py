"""One key of the config schema (:class:`Field`), and the words the docs use for its type.

:mod:`baton.config.schema` holds the table of keys; :mod:`baton.config.sections` the keys of
the broker-wide sections. In a path, an upper-case part (``NAME``, ``KIND``) is a name the
user chooses; ``[]`` is an item of an array of tables.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from baton.config.layers import Key

V = TypeVar("V", covariant=True)


def choices_text(choices: Iterable[str]) -> str:
    quoted = [f'`"{c}"`' for c in choices]
    return " \\| ".join(quoted)


def either_text(choices: Sequence[str]) -> str:
    return ", ".join(choices[:-1]) + f" or {choices[-1]}" if len(choices) > 1 else choices[0]


@dataclass(frozen=True)
class Field(Generic[V]):
    """One key: how the docs describe it, and how the code checks and defaults it."""

    path: Key
    type: str  # as the doc says it
    default: str  # as the doc says it
    meaning: str
    check: Callable[[Any], V | None]
    want: str  # the error's "must be …"
    value: V  # the default the code uses
    user_only: bool = False  # refused in a project's file
    # A profile's key a project may set on a profile of an account CLI, or of your user
    # config (baton.config.trust): it changes neither the program, its endpoint nor its login.
    account_safe: bool = False
    builtin: bool = False  # its default is written into the defaults layer (shown with a source)

    @property
    def name(self) -> str:
        return ".".join(self.path).replace(".[]", "[]")

    def key(self, *names: str) -> Key:
        """The path with its user-chosen parts filled in, in order."""
        given = iter(names)
        return tuple(next(given) if chosen(p) else p for p in self.path)


def chosen(part: str) -> bool:
    """Whether a path's part is a name the user chooses (``NAME``, ``KIND``)."""
    return part.isupper()
