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

Every key, its type, default and meaning is written once, in :mod:`baton.config.schema`,
which checks the files and generates the key table of ``docs/reference/config.md``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import baton.config.schema as S
from baton.config.budgets import Budgets, read_budgets
from baton.config.checks import one_of
from baton.config.layers import (
    ConfigError,
    Key,
    Layer,
    Source,
    dotted,
    project_config_path,
    read_layer,
    user_config_path,
)
from baton.config.logins import choose_default
from baton.config.profiles import PROVIDERS, Profile, default_profiles
from baton.config.values import Values
from baton.core.groups import Group
from baton.core.routing import KINDS, Account, KindRule, Policy
from baton.core.usage import DEFAULT_PRICES, Price, price_for

#: A profile's fields (its budget is read apart: baton.config.budgets).
_PROFILE_FIELDS = tuple(f for f in S.fields_under(("profiles", "NAME")) if f != "budget")


@dataclass(frozen=True, slots=True)
class VerifyStep:
    """A check run on a task's result (issue 9): a name, an argv list and a time limit."""

    name: str
    argv: tuple[str, ...]
    timeout: float = S.VERIFY_TIMEOUT.value


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
    isolation: str = S.ISOLATION.value
    brief_rules: tuple[str, ...] = ()
    kinds: dict[str, KindRule] = field(default_factory=dict)
    qualities: dict[str, str] = field(default_factory=dict)
    on_rate_limit: str = S.ON_RATE_LIMIT.value
    cooldowns: dict[str, float] = field(default_factory=dict)  # provider → s; "default"
    prices: dict[str, Price] = field(default_factory=dict)  # model → price, over the defaults
    groups: tuple[Group, ...] = ()  # [groups.NAME]: caps, shifts, shared quotas
    verify: tuple[VerifyStep, ...] = ()
    repair_rounds: int = S.REPAIR_ROUNDS.value
    max_attempts: int = S.MAX_ATTEMPTS.value
    review: ReviewPolicy = ReviewPolicy()
    secrets_backend: str | None = None
    pool_size: int = S.POOL_SIZE.value
    pool_max_bytes: int = S.POOL_MAX_BYTES.value
    keep_days: int = S.RETENTION_KEEP_DAYS.value
    checkout_days: int = S.RETENTION_CHECKOUT_DAYS.value
    sandbox: str = S.SANDBOX.value  # auto | require | off
    notify_desktop: bool = S.NOTIFY_DESKTOP.value  # the broker sends desktop notifications
    notify_on: tuple[str, ...] = tuple(S.NOTIFY_ON.value)  # of S.NOTIFY_KINDS
    budgets: Budgets = field(default_factory=Budgets)
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

    def price_for(self, model: str | None) -> Price | None:
        """What ``model``'s tokens cost: the config's ``[prices]``, else the shipped price."""
        return price_for(model, self.prices)

    def cooldown_for(self, provider: str) -> float:
        """Seconds to cool down when a rate-limit error names neither a reset nor a retry."""
        return self.cooldowns.get(provider, self.cooldowns.get("default", S.COOLDOWN_DEFAULT.value))


# -- merging --------------------------------------------------------------------------------


def _default_items(
    profiles: Mapping[str, Profile], default_worker: str | None
) -> dict[Key, tuple[Any, Source]]:
    builtin = Source("default", note="built in")
    items = {key: (value, builtin) for key, value in S.builtin_items().items()}
    if default_worker is not None and default_worker in profiles:
        items[("default_worker",)] = (default_worker, builtin)
    blank = Profile(name="", provider="")
    for name, p in profiles.items():
        own = p.provider in ("fake", "command", "external")  # never found on PATH
        found = not own and p.binary and name == p.provider
        src = Source("default", note=f"found on PATH: {p.binary}") if found else builtin
        for f in _PROFILE_FIELDS:
            value = getattr(p, f)
            if f in ("env", "ray_resources", "worker_mcp"):  # tables written key by key
                for k, v in value.items():
                    items[("profiles", name, f, k)] = (v, src)
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


def _providers() -> list[str]:
    return list(PROVIDERS)


def _profiles(values: Values) -> dict[str, Profile]:
    known = _providers()
    out: dict[str, Profile] = {}
    for name in values.children(("profiles",)):
        k: Key = ("profiles", name)
        provider = values.get(
            S.PROVIDER.key(name),
            one_of(known),
            f"one of {', '.join(known)}",
            name if name in known else "",
        )
        if not provider:
            raise values.fail(k, f"needs a provider (one of {', '.join(known)})")
        out[name] = Profile(
            name=name,
            provider=provider,
            binary=values.field(S.BINARY, name),
            model=values.field(S.MODEL, name),
            models=values.field(S.MODELS, name),
            env={var: values.field(S.ENV, name, var) for var in values.children((*k, "env"))},
            config_dir=values.field(S.CONFIG_DIR, name),
            concurrency=values.field(S.CONCURRENCY, name),
            enabled=values.field(S.ENABLED, name),
            label=values.field(S.LABEL, name),
            options=values.field(S.OPTIONS, name),
            network=values.field(S.NETWORK, name),
            runner=values.field(S.RUNNER, name),
            ray_address=values.field(S.RAY_ADDRESS, name),
            ray_resources={
                r: values.field(S.RAY_RESOURCES, name, r)
                for r in values.children((*k, "ray_resources"))
            },
            ray_ship_secrets=values.field(S.RAY_SHIP_SECRETS, name),
            worker_mcp=_worker_mcp(values, name),
        )
    return out


def _worker_mcp(values: Values, name: str) -> dict[str, Any]:
    """A profile's ``[worker_mcp]``, only the parts it sets (empty: the CLI's own servers)."""
    out: dict[str, Any] = {}
    disable, add = values.field(S.WORKER_MCP_DISABLE, name), values.field(S.WORKER_MCP_ADD, name)
    if disable:
        out["disable"] = disable
    if add:
        out["add"] = add
        key = S.WORKER_MCP_ADD.key(name)
        if key in values.items and values.items[key][1].layer == "project":
            out["added_by_project"] = True  # baton.agents.worker_mcp.ADDED_BY_PROJECT
    return out


def _kinds(values: Values) -> dict[str, KindRule]:
    return {
        kind: KindRule(
            allow=tuple(values.field(S.ALLOW, kind)),
            prefer=values.field(S.PREFER, kind),
            min_quality=values.field(S.MIN_QUALITY, kind),
        )
        for kind in values.children(("routing",))
    }


def _groups(values: Values) -> tuple[Group, ...]:
    """The ``[groups.NAME]`` tables; a group matches by provider and/or model, and a shift
    needs both of its ends."""
    out = []
    for name in values.children(("groups",)):
        g = Group(
            name,
            provider=values.field(S.GROUP_PROVIDER, name),
            model=values.field(S.GROUP_MODEL, name),
            max=values.field(S.GROUP_MAX, name),
            shift_from=values.field(S.GROUP_FROM, name),
            shift_to=values.field(S.GROUP_TO, name),
            timezone=values.field(S.GROUP_TIMEZONE, name),
            grace=values.field(S.GROUP_GRACE, name),
            shared_quota=values.field(S.GROUP_SHARED_QUOTA, name),
        )
        if g.provider is None and g.model is None:
            raise values.fail(("groups", name), "needs provider or model (which accounts)")
        if (g.shift_from is None) != (g.shift_to is None):
            raise values.fail(("groups", name), "a shift needs both from and to")
        out.append(g)
    return tuple(out)


def _prices(values: Values) -> dict[str, Price]:
    """The ``[prices."MODEL"]`` tables; a key left out keeps the shipped price's."""
    out: dict[str, Price] = {}
    for model in values.children(("prices",)):
        shipped = DEFAULT_PRICES.get(model)
        given_in = values.field(S.PRICE_INPUT, model)
        given_out = values.field(S.PRICE_OUTPUT, model)
        given_cached = values.field(S.PRICE_CACHED, model)
        inp = given_in if given_in is not None else shipped.input if shipped else None
        outp = given_out if given_out is not None else shipped.output if shipped else None
        if inp is None or outp is None:
            missing = "input" if inp is None else "output"
            raise values.fail(
                S.PRICE_INPUT.key(model)[:2],
                f"needs {missing} (there is no shipped price for {model!r})",
            )
        if given_cached is not None:
            cached = given_cached
        elif shipped is not None and given_in is None:
            cached = shipped.cached_input
        else:
            cached = inp
        out[model] = Price(inp, cached, outp)
    return out


def _verify(values: Values) -> tuple[VerifyStep, ...]:
    key = S.VERIFY.path
    known = S.fields_under((*key, "[]"))
    steps = []
    for i, item in enumerate(values.field(S.VERIFY)):
        where = f"verify[{i}]"
        if not isinstance(item, dict):
            raise values.fail(key, f"{where} must be a table {{{', '.join(known)}}}")
        unknown = set(item) - set(known)
        if unknown:
            raise values.fail(key, f"{where}: unknown field(s) {', '.join(sorted(unknown))}")
        name, argv = S.VERIFY_NAME.check(item.get("name")), item.get("argv")
        if name is None:
            raise values.fail(key, f"{where}.name must be {S.VERIFY_NAME.want}")
        if isinstance(argv, str):
            raise values.fail(
                key, f"{where}.argv must be a list of strings, not a shell string: {argv!r}"
            )
        argv = S.VERIFY_ARGV.check(argv)
        if not argv:
            raise values.fail(key, f"{where}.argv must be {S.VERIFY_ARGV.want}")
        timeout = S.VERIFY_TIMEOUT.check(item.get("timeout", S.VERIFY_TIMEOUT.value))
        if timeout is None:
            raise values.fail(key, f"{where}.timeout must be {S.VERIFY_TIMEOUT.want}")
        steps.append(VerifyStep(name, tuple(argv), timeout))
    return tuple(steps)


def _build(
    values: Values,
    root: Path | None,
    layers: tuple[LayerInfo, ...],
    watched: tuple[Path, ...],
    fallback_worker: str | None,
) -> Settings:
    values.check_keys()
    profiles = _profiles(values)
    names = ", ".join(sorted(profiles)) or "none"

    def profile_name(v: Any) -> str | None:
        return v if isinstance(v, str) and v in profiles else None

    only_list = values.field(S.ONLY)
    only_names = set(only_list) if only_list is not None else None

    if values.has(S.DEFAULT_WORKER.path):
        src = values.items[S.DEFAULT_WORKER.path][1]
        reason = f"set in {src.path}" if src.path else f"given by the broker ({src.note})"
    elif fallback_worker is not None:
        reason = "given by the broker"
    else:
        fallback_worker, reason = choose_default(
            {n: p for n, p in profiles.items() if only_names is None or n in only_names}
        )
    default_worker = values.get(
        S.DEFAULT_WORKER.path,
        profile_name,
        f"{S.DEFAULT_WORKER.want} ({names})",
        fallback_worker or "",
    )
    if only_list is not None:
        for name in only_list:
            if name not in profiles:
                raise values.fail(S.ONLY.path, f"names unknown profile {name!r}; profiles: {names}")
    review_kinds = values.field(S.REVIEW_KINDS)
    for kind in review_kinds:
        if kind not in KINDS:
            raise values.fail(
                S.REVIEW_KINDS.path, f"unknown kind {kind!r}; kinds: {', '.join(KINDS)}"
            )
    review_worker = S.REVIEW_WORKER
    return Settings(
        root=root,
        profiles=profiles,
        default_worker=default_worker,
        default_model=values.field(S.DEFAULT_MODEL),
        only=tuple(only_list) if only_list is not None else None,
        isolation=values.field(S.ISOLATION),
        brief_rules=tuple(values.field(S.BRIEF_RULES)),
        kinds=_kinds(values),
        qualities={m: values.field(S.QUALITY, m) for m in values.children(("models",))},
        on_rate_limit=values.field(S.ON_RATE_LIMIT),
        cooldowns={p: values.field(S.COOLDOWN, p) for p in values.children(("cooldown",))},
        prices=_prices(values),
        groups=_groups(values),
        verify=_verify(values),
        repair_rounds=values.field(S.REPAIR_ROUNDS),
        max_attempts=values.field(S.MAX_ATTEMPTS),
        review=ReviewPolicy(
            worker=values.get(
                review_worker.path, profile_name, f"{review_worker.want} ({names})", None
            ),
            kinds=tuple(review_kinds),
        ),
        secrets_backend=values.field(S.SECRETS_BACKEND),
        pool_size=values.field(S.POOL_SIZE),
        pool_max_bytes=values.field(S.POOL_MAX_BYTES),
        keep_days=values.field(S.RETENTION_KEEP_DAYS),
        checkout_days=values.field(S.RETENTION_CHECKOUT_DAYS),
        sandbox=values.field(S.SANDBOX),
        notify_desktop=values.field(S.NOTIFY_DESKTOP),
        notify_on=tuple(values.field(S.NOTIFY_ON)),
        budgets=read_budgets(values),
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
    below = items  # what a project's file may not change (baton.config.trust)
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
    return _build(Values(items, lines, below), root, tuple(layers), tuple(watched), default_worker)


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
