"""What a project's file may not set: the trust rule of the config floor.

A project's ``.baton.toml`` is written by whoever wrote the repository; the user's secrets
and accounts are the user's. :func:`refusal` says, for one item a project's file sets, why it
may only be set in the user's config — or None when a project may set it. It is called by
:meth:`baton.config.values.Values.check_keys` for every item of the project layer, after the
schema's ``user_only`` keys. The rule, as ``docs/reference/config.md`` (What a project may
set) says it:

1. No ``keyring:`` reference anywhere in a project's file: a project's profile would hand
   the secret to a program the repository chooses.
2. A profile your user config or Baton defines keeps its provider: a project may not change
   it (an account's profile made a ``command`` would run the repository's program with the
   account's environment).
3. On a profile of an account CLI (:data:`ACCOUNT_PROVIDERS`) and on a profile your user
   config defines, a project sets only the keys the schema marks ``account_safe`` (provider,
   model, models, concurrency, enabled, label, network, ray_resources, worker_mcp, budget):
   never ``binary``, ``config_dir``, ``env`` or ``options``, which choose the program, its
   endpoint, its login and state folder, or code loaded into it.
4. On any profile, a project sets no environment variable :func:`forbidden_env` names
   (where a program finds its home, config, state, libraries, interpreter options, endpoint,
   proxy, CA certificates, git settings, or an account's variables).

The fake agent's, ``command``'s and ``external``'s profiles a project defines itself (or
Baton's built-in fake agent's) may set ``binary``, ``options`` and harmless ``env``: their
sandbox shows them no account's state folder (:mod:`baton.process.sandbox_paths` hides every
CLI's) and they get no account's credentials.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterator, Mapping
from typing import Any

from baton.config.field import Field
from baton.config.layers import Key, Source
from baton.config.profiles import DISCOVERABLE
from baton.config.secrets import REF_PREFIX

#: Providers whose CLI signs in to an account of the user's (its login, its API key).
ACCOUNT_PROVIDERS: tuple[str, ...] = tuple(provider for provider, _, _ in DISCOVERABLE)

#: Environment variables a project may never set on a profile (``fnmatch`` patterns, matched
#: on the upper-cased name): where a program finds its home, config, state and temp folders,
#: what it loads (libraries, interpreter and runtime options), where it connects (endpoints,
#: proxies, CA certificates), git's settings, Baton's own, and the variables of the account
#: CLIs and model APIs.
FORBIDDEN_ENV: tuple[str, ...] = (
    "HOME", "*HOME", "PATH", "*PATH", "SHELL", "USER", "LOGNAME", "TMPDIR", "TMP", "TEMP",
    "XDG_*", "*_CONFIG", "*_CONFIG_*", "*_DIR", "*_FILE", "*_SETTINGS*",
    "LD_*", "DYLD_*", "*PRELOAD*", "*_OPTIONS", "*_OPTS", "*OPT", "BASH_ENV", "ENV",
    "ZDOTDIR", "PROMPT_COMMAND", "PYTHON*", "NODE_*", "NPM_*", "DENO_*", "BUN_*", "PERL*",
    "RUBY*", "GEM_*", "JAVA_*", "_JAVA_*", "JDK_*",
    "*URL*", "*URI*", "*API_BASE*", "*ENDPOINT*", "*_HOST", "*PROXY*", "*_CA_*", "*CA_BUNDLE*",
    "*CA_CERT*", "*CERT*", "SSL_*", "TLS_*", "CURL_*", "REQUESTS_*", "GIT_*", "SSH_*", "GPG_*",
    "GNUPG*", "BATON_*", "KEYRING*", "ANTHROPIC_*", "CLAUDE_*", "OPENAI_*", "CODEX_*",
    "GEMINI_*", "GOOGLE_*", "VERTEX*", "CLOUD_ML_*", "OPENCODE_*", "PI_*", "AWS_*", "AZURE_*",
    "OPENROUTER_*", "OLLAMA_*", "MISTRAL_*", "GROQ_*", "DEEPSEEK_*", "XAI_*",
)  # fmt: skip

_USER_ONLY = "may only be set in your user config, not in a project"


def forbidden_env(name: str) -> bool:
    """Whether a project may not set the environment variable ``name`` on any profile."""
    upper = name.upper()
    return any(fnmatch.fnmatchcase(upper, pattern) for pattern in FORBIDDEN_ENV)


def refusal(
    key: Key,
    value: Any,
    items: Mapping[Key, tuple[Any, Source]],
    below: Mapping[Key, tuple[Any, Source]],
    fields: tuple[Field[Any], ...],
) -> tuple[Key, str] | None:
    """Why a project's file may not set ``key = value``: the key to name and the message, or
    None. ``items``: the merged items (value, source); ``below``: the items of the layers
    under the project (Baton's defaults and the user's config); ``fields``: the schema."""
    for where, text in _strings(key, value):
        if text.startswith(REF_PREFIX):
            inside = ".".join(where[len(key) :])
            return key, (
                (f"{inside}: " if inside else "")
                + f"a {REF_PREFIX} reference {_USER_ONLY}: a project's file would hand your"
                " secret to a program the repository chooses. Put it in your user config"
            )
    if len(key) < 3 or key[0] != "profiles":
        return None
    name, part = key[1], key[2]
    defined = _defined_below(name, below)
    provider = _provider(name, items)
    if part == "provider" and defined is not None and value != defined:
        return key, (
            f"{_USER_ONLY}: profile {name!r} is {defined!r} in your user config or Baton's"
            " defaults, and a project may not change what it runs. Name the project's"
            " profile differently"
        )
    if part == "env":
        for var in _env_names(key, value):
            if forbidden_env(var):
                return (*key[:3], var), (
                    f"{_USER_ONLY}: {var} chooses where a program finds its home, config,"
                    " libraries, endpoint, proxy or account. Set it in your user config's"
                    " profile if you mean it"
                )
    own = any(src.layer == "user" for k, (_, src) in below.items() if k[:2] == key[:2])
    if provider not in ACCOUNT_PROVIDERS and not own:
        return None
    if all(f.account_safe for f in _fields_of(key, fields)):
        return None
    safe = ", ".join(_safe_names(fields))
    whose = (
        f"profile {name!r} runs {provider}, which signs in to your account"
        if provider in ACCOUNT_PROVIDERS
        else f"profile {name!r} is defined in your user config"
    )
    instead = ", or give the project's profile a name of its own"
    instead = "" if provider in ACCOUNT_PROVIDERS else instead
    return key, (
        f"{_USER_ONLY}: {whose}; a project may set only {safe} on it. Set {part} in your"
        f" user config{instead}"
    )


def _strings(key: Key, value: Any) -> Iterator[tuple[Key, str]]:
    """Every string in ``value`` (nested tables and lists), with the key it sits under."""
    if isinstance(value, str):
        yield key, value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from _strings((*key, str(k)), v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(key, v)


def _env_names(key: Key, value: Any) -> list[str]:
    """The variables an item under ``profiles.NAME.env`` sets."""
    if len(key) > 3:
        return [key[3]]
    return [str(k) for k in value] if isinstance(value, dict) else []


def _provider(name: str, items: Mapping[Key, tuple[Any, Source]]) -> str:
    found = items.get(("profiles", name, "provider"))
    return str(found[0]) if found is not None else name


def _defined_below(name: str, below: Mapping[Key, tuple[Any, Source]]) -> str | None:
    """The provider of profile ``name`` in the layers under the project, or None."""
    if not any(k[:2] == ("profiles", name) for k in below):
        return None
    found = below.get(("profiles", name, "provider"))
    return str(found[0]) if found is not None else name


def _fields_of(key: Key, fields: tuple[Field[Any], ...]) -> list[Field[Any]]:
    """The profile keys an item sets: its own, or every key under the table it writes."""
    out = []
    for f in fields:
        n = min(len(f.path), len(key))
        if f.path[0] == "profiles" and all(
            a == b or a.isupper() for a, b in zip(f.path[1:n], key[1:n], strict=True)
        ):
            out.append(f)
    return out


def _safe_names(fields: tuple[Field[Any], ...]) -> list[str]:
    seen: dict[str, None] = {}
    for f in fields:
        if f.path[:2] == ("profiles", "NAME") and f.account_safe:
            seen.setdefault(f.path[2], None)
    return list(seen)
