"""Settings: the effective configuration of one project folder, with the source of every value.

``load_settings(root)`` merges built-in defaults (the fake agent and the agent CLIs found on
PATH), the user's config file and the project's file, highest last, checks every value, and
returns :class:`Settings`. When no file names a ``default_worker``, the best usable agent CLI
is the default (installed, logged in; :func:`baton.config.logins.choose_default`) and
``Settings.default_reason`` says why; the fake agent is never chosen on its own, so with no
usable CLI the default is empty and a delegation without a worker fails saying so.
Its ``provenance`` maps each setting (``profiles.work.model``) to
the :class:`~baton.config.layers.Source` it came from. A bad file raises
:class:`~baton.config.layers.ConfigError` naming the file and line.

The schema (TOML; every key optional)::

    default_worker = "claude-work"      # profile used when routing has no rule
    default_model = "claude-sonnet-4-5"
    only = ["claude-work", "claude-home"]  # the profiles this project may use
    isolation = "worktree"
    brief_rules = ["Run the tests before you finish."]
    on_rate_limit = "handoff"           # or "hold"
    repair_rounds = 1
    max_attempts = 6                    # attempts a task starts on its own, all causes
    sandbox = "auto"                    # auto | require | off (user file only; see security.md)

    [profiles.claude-work]              # one account of one agent CLI
    provider = "claude"
    model = "claude-sonnet-4-5"
    models = ["claude-sonnet-4-5", "claude-haiku-4-5"]
    config_dir = "~/.claude-work"
    env = { ANTHROPIC_API_KEY = "keyring:baton/claude-work" }
    concurrency = 2
    label = "work"
    enabled = true
    network = "allow"                   # or "none": its sandbox cuts it off the network
    options = { sandbox = { read = ["~/data"], write = ["~/.cache/tool"] } }  # user file only

    [routing.mechanical]
    allow = ["claude/claude-haiku-4-5", "codex/gpt-5-mini"]   # best first
    prefer = "order"                    # order | cheap | evidence
    min_quality = "fast"                # fast | standard | frontier

    [models]
    "claude-sonnet-4-5" = "frontier"    # override the guess from the name

    [cooldown]
    default = 60                        # seconds, when an error names no reset time
    claude = 300

    [[verify]]
    name = "tests"
    argv = ["pytest", "-q"]
    timeout = 600

    [review]
    worker = "codex"
    kinds = ["reasoning"]

    [secrets]
    backend = "file"                    # opt in to the unencrypted file backend (user file only)

    [pool]                              # checkouts made ahead of need (user file only)
    size = 2                            # ready checkouts per repository; 0: none
    max_bytes = 1073741824              # on disk, every repository together
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from baton.config.layers import (
    ConfigError,
    Key,
    Layer,
    Source,
    dotted,
    locate,
    project_config_path,
    read_layer,
    user_config_path,
)
from baton.config.logins import choose_default
from baton.config.profiles import NETWORKS, Profile, default_profiles
from baton.core.routing import (
    KINDS,
    ON_RATE_LIMIT,
    PREFERENCES,
    QUALITY_RANK,
    Account,
    KindRule,
    Policy,
)
from baton.core.settle import DEFAULT_MAX_ATTEMPTS

T = TypeVar("T")

ISOLATIONS = ("worktree",)
#: ``sandbox``: use the OS sandbox where it can run, refuse to start agents without it, or never.
SANDBOX_MODES = ("auto", "require", "off")
DEFAULT_COOLDOWN = 60.0
DEFAULT_VERIFY_TIMEOUT = 600.0
DEFAULT_REPAIR_ROUNDS = 2
#: The warm pool (``[pool]``): ready checkouts per repository, and bytes on disk for all.
DEFAULT_POOL_SIZE = 2
DEFAULT_POOL_MAX_BYTES = 1 << 30

_TOP = (
    "default_worker",
    "default_model",
    "only",
    "isolation",
    "brief_rules",
    "on_rate_limit",
    "repair_rounds",
    "max_attempts",
    "verify",
    "review",
    "profiles",
    "routing",
    "models",
    "cooldown",
    "secrets",
    "sandbox",
    "pool",
)
_PROFILE_FIELDS = (
    "provider",
    "binary",
    "model",
    "models",
    "env",
    "config_dir",
    "concurrency",
    "enabled",
    "label",
    "options",
    "network",
)


@dataclass(frozen=True, slots=True)
class VerifyStep:
    """A check run on a task's result (issue 9): a name, an argv list and a time limit."""

    name: str
    argv: tuple[str, ...]
    timeout: float = DEFAULT_VERIFY_TIMEOUT


@dataclass(frozen=True, slots=True)
class ReviewPolicy:
    """Which worker reviews the results of which kinds (none by default)."""

    worker: str | None = None
    kinds: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class LayerInfo:
    name: str  # default | user | project
    path: str | None
    exists: bool

    def to_json(self) -> dict[str, Any]:
        return {"layer": self.name, "path": self.path, "exists": self.exists}


@dataclass(frozen=True)
class Settings:
    """The effective settings of one project folder."""

    root: Path | None
    profiles: dict[str, Profile]
    default_worker: str  # "" when none is configured and no agent CLI can run
    default_model: str | None = None
    only: tuple[str, ...] | None = None
    isolation: str = "worktree"
    brief_rules: tuple[str, ...] = ()
    kinds: dict[str, KindRule] = field(default_factory=dict)
    qualities: dict[str, str] = field(default_factory=dict)
    on_rate_limit: str = "handoff"
    cooldowns: dict[str, float] = field(default_factory=dict)  # provider → s; "default"
    verify: tuple[VerifyStep, ...] = ()
    repair_rounds: int = DEFAULT_REPAIR_ROUNDS
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    review: ReviewPolicy = ReviewPolicy()
    secrets_backend: str | None = None
    sandbox: str = "auto"  # auto | require | off
    pool_size: int = DEFAULT_POOL_SIZE
    pool_max_bytes: int = DEFAULT_POOL_MAX_BYTES
    provenance: dict[str, Source] = field(default_factory=dict)
    values: dict[str, Any] = field(default_factory=dict)  # dotted key → effective value
    layers: tuple[LayerInfo, ...] = ()
    watched: tuple[Path, ...] = ()  # folders whose config files decide these settings
    default_reason: str = ""  # why ``default_worker`` is the default

    def policy(self) -> Policy:
        return Policy(
            default_worker=self.default_worker,
            default_model=self.default_model,
            kinds=self.kinds,
            only=self.only,
            on_rate_limit=self.on_rate_limit,
            qualities=self.qualities,
        )

    def accounts(self) -> list[Account]:
        return [
            Account(p.name, p.provider, p.model, tuple(p.models), p.enabled)
            for p in self.profiles.values()
        ]

    def allowed_profiles(self) -> dict[str, Profile]:
        """The enabled profiles this project may use."""
        return {
            n: p
            for n, p in self.profiles.items()
            if p.enabled and (self.only is None or n in self.only)
        }

    def cooldown_for(self, provider: str) -> float:
        """Seconds to cool down when a rate-limit error names neither a reset nor a retry."""
        return self.cooldowns.get(provider, self.cooldowns.get("default", DEFAULT_COOLDOWN))


# -- merging --------------------------------------------------------------------------------


def _default_items(
    profiles: Mapping[str, Profile], default_worker: str | None
) -> dict[Key, tuple[Any, Source]]:
    builtin = Source("default", note="built in")
    items: dict[Key, tuple[Any, Source]] = {
        ("isolation",): ("worktree", builtin),
        ("on_rate_limit",): ("handoff", builtin),
        ("repair_rounds",): (DEFAULT_REPAIR_ROUNDS, builtin),
        ("max_attempts",): (DEFAULT_MAX_ATTEMPTS, builtin),
        ("cooldown", "default"): (DEFAULT_COOLDOWN, builtin),
        ("sandbox",): ("auto", builtin),
    }
    if default_worker is not None and default_worker in profiles:
        items[("default_worker",)] = (default_worker, builtin)
    blank = Profile(name="", provider="")
    for name, p in profiles.items():
        found = p.provider not in ("fake", "command") and p.binary and name == p.provider
        src = Source("default", note=f"found on PATH: {p.binary}") if found else builtin
        for f in _PROFILE_FIELDS:
            value = getattr(p, f)
            if f == "env":
                for k, v in value.items():
                    items[("profiles", name, "env", k)] = (v, src)
                continue
            if f == "provider" or value != getattr(blank, f):
                items[("profiles", name, f)] = (value, src)
    return items


def _merge(base: dict[Key, tuple[Any, Source]], layer: Layer) -> dict[Key, tuple[Any, Source]]:
    merged = dict(base)
    for key, value in layer.items.items():
        # A value replaces anything written below or above it in a lower layer.
        for old in [k for k in merged if k[: len(key)] == key or key[: len(k)] == k]:
            del merged[old]
        merged[key] = (value, layer.source(key))
    return merged


# -- checking ---------------------------------------------------------------------------------


class _Values:
    """The merged items, read with type checks whose errors name the file and line."""

    def __init__(
        self, items: dict[Key, tuple[Any, Source]], lines: Mapping[str, Mapping[Key, int]]
    ) -> None:
        self.items = items
        self.lines = lines  # file → where each key is written

    def fail(self, key: Key, message: str) -> ConfigError:
        src = self.items[key][1] if key in self.items else None
        line = src.line if src else None
        if src is None:  # a table: name the file of what is under it, and its header's line
            below = [k for k in self.items if k[: len(key)] == key]
            src = self.items[below[-1]][1] if below else None
            line = locate(self.lines.get(src.path or "", {}), key) if src else None
        return ConfigError(f"{dotted(key)}: {message}", src.path if src else None, line)

    def has(self, key: Key) -> bool:
        return key in self.items

    def children(self, key: Key) -> list[str]:
        """Names one level below ``key`` (profile names, kinds, …), in file order."""
        seen: dict[str, None] = {}
        for k in self.items:
            if len(k) > len(key) and k[: len(key)] == key:
                seen.setdefault(k[len(key)], None)
        return list(seen)

    def get(self, key: Key, check: Callable[[Any], T | None], want: str, default: T) -> T:
        if key not in self.items:
            if any(k[: len(key)] == key for k in self.items):
                raise self.fail(key, f"must be {want}, not a table")
            return default
        value = self.items[key][0]
        out = check(value)
        if out is None:
            raise self.fail(key, f"must be {want}, not {_show(value)}")
        return out


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _str(v: Any) -> str | None:
    return v if isinstance(v, str) else None


def _opt_str(v: Any) -> str | None:
    return v if isinstance(v, str) and v else None


def _bool(v: Any) -> bool | None:
    return v if isinstance(v, bool) else None


def _count(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def _positive_int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v > 0 else None


def _seconds(v: Any) -> float | None:
    ok = isinstance(v, int | float) and not isinstance(v, bool) and v > 0
    return float(v) if ok else None


def _strings(v: Any) -> list[str] | None:
    if isinstance(v, list) and all(isinstance(x, str) for x in v):
        return list(v)
    return None


def _table(v: Any) -> dict[str, Any] | None:
    return dict(v) if isinstance(v, dict) else None


def _one_of(choices: Iterable[str]) -> Callable[[Any], str | None]:
    allowed = tuple(choices)
    return lambda v: v if isinstance(v, str) and v in allowed else None


def _check_keys(values: _Values) -> None:
    for key in values.items:
        top = key[0]
        if top not in _TOP:
            raise values.fail(
                key[:1], f"unknown setting; known settings: {', '.join(sorted(_TOP))}"
            )
        if top == "profiles" and len(key) >= 3 and key[2] not in _PROFILE_FIELDS:
            raise values.fail(
                key[:3], f"unknown profile field; known: {', '.join(_PROFILE_FIELDS)}"
            )
        if top == "routing":
            if len(key) >= 2 and key[1] not in KINDS:
                raise values.fail(key[:2], f"unknown task kind; kinds: {', '.join(KINDS)}")
            if len(key) >= 3 and key[2] not in ("allow", "prefer", "min_quality"):
                raise values.fail(key[:3], "unknown field; known: allow, prefer, min_quality")
        if top == "review" and len(key) >= 2 and key[1] not in ("worker", "kinds"):
            raise values.fail(key[:2], "unknown field; known: worker, kinds")
        if top == "secrets" and len(key) >= 2 and key[1] != "backend":
            raise values.fail(key[:2], "unknown field; known: backend")
        if top == "pool" and len(key) >= 2 and key[1] not in ("size", "max_bytes"):
            raise values.fail(key[:2], "unknown field; known: size, max_bytes")


def _providers() -> list[str]:
    from baton.agents.registry import providers  # the registry imports this package

    return providers()


def _profiles(values: _Values) -> dict[str, Profile]:
    known = _providers()
    out: dict[str, Profile] = {}
    for name in values.children(("profiles",)):
        k: Key = ("profiles", name)
        provider = values.get(
            (*k, "provider"),
            _one_of(known),
            f"one of {', '.join(known)}",
            name if name in known else "",
        )
        if not provider:
            raise values.fail(k, f"needs a provider (one of {', '.join(known)})")
        env: dict[str, str] = {}
        for var in values.children((*k, "env")):
            env[var] = values.get((*k, "env", var), _str, "a string", "")
        out[name] = Profile(
            name=name,
            provider=provider,
            binary=values.get((*k, "binary"), _opt_str, "a path or command name", None),
            model=values.get((*k, "model"), _opt_str, "a model name", None),
            models=values.get((*k, "models"), _strings, "a list of model names", []),
            env=env,
            config_dir=values.get((*k, "config_dir"), _opt_str, "a folder", None),
            concurrency=values.get((*k, "concurrency"), _positive_int, "a positive integer", 4),
            enabled=values.get((*k, "enabled"), _bool, "true or false", True),
            label=values.get((*k, "label"), _str, "a string", ""),
            options=values.get((*k, "options"), _table, "a table", {}),
            network=values.get((*k, "network"), _one_of(NETWORKS), "allow or none", "allow"),
        )
    return out


def _check_sandbox_paths(values: _Values) -> None:
    """A profile's ``options.sandbox`` (more paths its sandbox shows) only from the user's own
    config: a repository must not be able to open the sandbox of the agents it is given to."""
    for key, (value, src) in values.items.items():
        if key[0] != "profiles" or "sandbox" not in key[2:] + tuple(
            value if isinstance(value, dict) and key[2:] == ("options",) else ()
        ):
            continue
        if src.layer == "project":
            raise values.fail(key, "options.sandbox may only be set in your user config")


def _kinds(values: _Values) -> dict[str, KindRule]:
    qualities = ", ".join(QUALITY_RANK)
    rules = {}
    for kind in values.children(("routing",)):
        k: Key = ("routing", kind)
        rules[kind] = KindRule(
            allow=tuple(values.get((*k, "allow"), _strings, "a list of provider/model", [])),
            prefer=values.get(
                (*k, "prefer"), _one_of(PREFERENCES), f"one of {', '.join(PREFERENCES)}", "order"
            ),
            min_quality=values.get(
                (*k, "min_quality"), _one_of(QUALITY_RANK), f"one of {qualities}", None
            ),
        )
    return rules


def _verify(values: _Values) -> tuple[VerifyStep, ...]:
    key: Key = ("verify",)
    empty: list[Any] = []
    raw = values.get(key, lambda v: v if isinstance(v, list) else None, "a list of tables", empty)
    steps = []
    for i, item in enumerate(raw):
        where = f"verify[{i}]"
        if not isinstance(item, dict):
            raise values.fail(key, f"{where} must be a table {{name, argv, timeout}}")
        unknown = set(item) - {"name", "argv", "timeout"}
        if unknown:
            raise values.fail(key, f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        name, argv = item.get("name"), item.get("argv")
        if not isinstance(name, str) or not name:
            raise values.fail(key, f"{where}.name must be a non-empty string")
        if isinstance(argv, str):
            raise values.fail(
                key, f"{where}.argv must be a list of strings, not a shell string: {argv!r}"
            )
        if not argv or not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
            raise values.fail(key, f"{where}.argv must be a non-empty list of strings")
        timeout = _seconds(item.get("timeout", DEFAULT_VERIFY_TIMEOUT))
        if timeout is None:
            raise values.fail(key, f"{where}.timeout must be a positive number of seconds")
        steps.append(VerifyStep(name, tuple(argv), timeout))
    return tuple(steps)


def _build(
    values: _Values,
    root: Path | None,
    layers: tuple[LayerInfo, ...],
    watched: tuple[Path, ...],
    fallback_worker: str | None,
) -> Settings:
    _check_keys(values)
    _check_sandbox_paths(values)
    profiles = _profiles(values)
    names = ", ".join(sorted(profiles)) or "none"

    def profile_name(v: Any) -> str | None:
        return v if isinstance(v, str) and v in profiles else None

    only_list = values.get(("only",), _strings, "a list of profile names", None)
    only_names = set(only_list) if only_list is not None else None

    if values.has(("default_worker",)):
        src = values.items[("default_worker",)][1]
        reason = f"set in {src.path}" if src.path else f"given by the broker ({src.note})"
    elif fallback_worker is not None:
        reason = "given by the broker"
    else:
        fallback_worker, reason = choose_default(
            {n: p for n, p in profiles.items() if only_names is None or n in only_names}
        )
    default_worker = values.get(
        ("default_worker",), profile_name, f"a configured profile ({names})", fallback_worker or ""
    )
    if only_list is not None:
        for name in only_list:
            if name not in profiles:
                raise values.fail(("only",), f"names unknown profile {name!r}; profiles: {names}")
    kinds = _kinds(values)
    qualities = {}
    for model in values.children(("models",)):
        qualities[model] = values.get(
            ("models", model), _one_of(QUALITY_RANK), f"one of {', '.join(QUALITY_RANK)}", ""
        )
    cooldowns = {
        p: values.get(("cooldown", p), _seconds, "a positive number of seconds", DEFAULT_COOLDOWN)
        for p in values.children(("cooldown",))
    }
    no_kinds: list[str] = []
    review_kinds = values.get(("review", "kinds"), _strings, "a list of task kinds", no_kinds)
    for kind in review_kinds:
        if kind not in KINDS:
            raise values.fail(
                ("review", "kinds"), f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}"
            )
    review = ReviewPolicy(
        worker=values.get(("review", "worker"), profile_name, f"a profile ({names})", None),
        kinds=tuple(review_kinds),
    )
    backend = None
    if values.has(("secrets", "backend")):
        src = values.items[("secrets", "backend")][1]
        if src.layer == "project":
            raise values.fail(
                ("secrets", "backend"), "may only be set in your user config, not in a project"
            )
        backend = values.get(("secrets", "backend"), _one_of(("file", "os")), "file or os", None)
    sandbox = "auto"
    if values.has(("sandbox",)):
        if values.items[("sandbox",)][1].layer == "project":
            # A repository must not be able to let its agents out of the sandbox.
            raise values.fail(("sandbox",), "may only be set in your user config, not in a project")
        sandbox = values.get(("sandbox",), _one_of(SANDBOX_MODES), "auto, require or off", "auto")
    for key in (("pool", "size"), ("pool", "max_bytes")):
        if values.has(key) and values.items[key][1].layer == "project":
            # How much of the disk Baton keeps is the user's to say, not a repository's.
            raise values.fail(key, "may only be set in your user config, not in a project")
    return Settings(
        root=root,
        profiles=profiles,
        default_worker=default_worker,
        default_model=values.get(("default_model",), _opt_str, "a model name", None),
        only=tuple(only_list) if only_list is not None else None,
        isolation=values.get(
            ("isolation",), _one_of(ISOLATIONS), f"one of {', '.join(ISOLATIONS)}", "worktree"
        ),
        brief_rules=tuple(values.get(("brief_rules",), _strings, "a list of strings", [])),
        kinds=kinds,
        qualities=qualities,
        on_rate_limit=values.get(
            ("on_rate_limit",), _one_of(ON_RATE_LIMIT), "handoff or hold", "handoff"
        ),
        cooldowns=cooldowns,
        verify=_verify(values),
        repair_rounds=values.get(
            ("repair_rounds",), _count, "a whole number ≥ 0", DEFAULT_REPAIR_ROUNDS
        ),
        max_attempts=values.get(
            ("max_attempts",), _positive_int, "a whole number ≥ 1", DEFAULT_MAX_ATTEMPTS
        ),
        review=review,
        secrets_backend=backend,
        sandbox=sandbox,
        pool_size=values.get(("pool", "size"), _count, "a whole number ≥ 0", DEFAULT_POOL_SIZE),
        pool_max_bytes=values.get(
            ("pool", "max_bytes"), _count, "a whole number of bytes ≥ 0", DEFAULT_POOL_MAX_BYTES
        ),
        provenance={dotted(k): src for k, (_, src) in values.items.items()},
        values={dotted(k): v for k, (v, _) in values.items.items()},
        layers=layers,
        watched=watched,
        default_reason=reason,
    )


def load_settings(
    root: Path | None = None,
    *,
    profiles: Mapping[str, Profile] | None = None,
    default_worker: str | None = None,
    user_config: Path | None = None,
) -> Settings:
    """The effective settings for ``root`` (a project folder; None = user and defaults only).

    ``profiles`` and ``default_worker`` form the defaults layer (default: the fake agent and
    the agent CLIs on PATH; no default worker, so the best usable agent CLI is chosen when no
    file names one). ``user_config`` overrides where the user's file is looked for.
    Raises :class:`ConfigError` naming file and line when a file is broken or a value bad.
    """
    base = dict(profiles) if profiles is not None else default_profiles()
    items = _default_items(base, default_worker)
    layers = [LayerInfo("default", None, True)]
    user_path = user_config or user_config_path()
    user = read_layer("user", user_path)
    items = _merge(items, user)
    layers.append(LayerInfo("user", str(user_path), user.exists))
    watched = [user_path.parent]
    lines = {str(user.path): user.lines}
    if root is not None:
        found, looked = project_config_path(root)
        watched.extend(looked)
        if found is not None:
            project = read_layer("project", found)
            items = _merge(items, project)
            lines[str(project.path)] = project.lines
            layers.append(LayerInfo("project", str(found), True))
        else:
            layers.append(LayerInfo("project", None, False))
    return _build(_Values(items, lines), root, tuple(layers), tuple(watched), default_worker)


def with_profiles(settings: Settings, extra: Mapping[str, Profile]) -> Settings:
    """``settings`` with more profiles (tests and embedders)."""
    return dataclasses.replace(settings, profiles={**settings.profiles, **extra})


__all__ = [
    "ConfigError",
    "LayerInfo",
    "ReviewPolicy",
    "Settings",
    "Source",
    "VerifyStep",
    "load_settings",
]
