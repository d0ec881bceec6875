"""The config schema, written once: every key of ``.baton.toml`` and the user's config.

:data:`FIELDS` is the one table of keys: each :class:`Field` has its path, its type and
default as the docs say them, what it means, where it may be set, and the check and default
value the code uses. :mod:`baton.config.settings` reads the merged layers through it
(:class:`Values`): unknown keys, keys a project may not set, type checks and defaults all
come from here, and the key table of ``docs/reference/config.md`` is generated from it
(:func:`doc_table`): ``scripts/gen-docs`` rewrites it, and a test fails while the doc's
table differs.

In a path, an upper-case part (``NAME``, ``KIND``) is a name the user chooses; ``[]`` is an
item of an array of tables (``[[verify]]``).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from baton.config.checks import (
    amount,
    boolean,
    count,
    mcp_servers,
    names_or_all,
    nonempty,
    one_of,
    positive,
    seconds,
    string,
    strings,
    table,
    tables,
)
from baton.config.field import Field as Field
from baton.config.field import choices_text as _choices
from baton.config.field import chosen as _chosen
from baton.config.field import either_text as _either
from baton.config.layers import Key
from baton.config.profiles import NETWORKS, RUNNERS

# The broker-wide sections' keys, re-exported: settings and budgets read them as schema.X.
from baton.config.sections import (
    BUDGET_FIELDS as BUDGET_FIELDS,
)
from baton.config.sections import (
    DASHBOARD_ACTIONS as DASHBOARD_ACTIONS,
)
from baton.config.sections import (
    DEFAULT_CHECKOUT_DAYS as DEFAULT_CHECKOUT_DAYS,
)
from baton.config.sections import (
    DEFAULT_KEEP_DAYS as DEFAULT_KEEP_DAYS,
)
from baton.config.sections import (
    DEFAULT_POOL_MAX_BYTES as DEFAULT_POOL_MAX_BYTES,
)
from baton.config.sections import (
    DEFAULT_POOL_SIZE as DEFAULT_POOL_SIZE,
)
from baton.config.sections import (
    GROUP_FROM as GROUP_FROM,
)
from baton.config.sections import (
    GROUP_GRACE as GROUP_GRACE,
)
from baton.config.sections import (
    GROUP_MAX as GROUP_MAX,
)
from baton.config.sections import (
    GROUP_MODEL as GROUP_MODEL,
)
from baton.config.sections import (
    GROUP_PROVIDER as GROUP_PROVIDER,
)
from baton.config.sections import (
    GROUP_SHARED_QUOTA as GROUP_SHARED_QUOTA,
)
from baton.config.sections import (
    GROUP_TIMEZONE as GROUP_TIMEZONE,
)
from baton.config.sections import (
    GROUP_TO as GROUP_TO,
)
from baton.config.sections import (
    MODEL_BUDGET_FIELDS as MODEL_BUDGET_FIELDS,
)
from baton.config.sections import (
    NOTIFY_DESKTOP as NOTIFY_DESKTOP,
)
from baton.config.sections import (
    NOTIFY_KINDS as NOTIFY_KINDS,
)
from baton.config.sections import (
    NOTIFY_ON as NOTIFY_ON,
)
from baton.config.sections import (
    POOL_MAX_BYTES as POOL_MAX_BYTES,
)
from baton.config.sections import (
    POOL_SIZE as POOL_SIZE,
)
from baton.config.sections import (
    PROFILE_BUDGET_FIELDS as PROFILE_BUDGET_FIELDS,
)
from baton.config.sections import (
    RETENTION_CHECKOUT_DAYS as RETENTION_CHECKOUT_DAYS,
)
from baton.config.sections import (
    RETENTION_KEEP_DAYS as RETENTION_KEEP_DAYS,
)
from baton.core import routing
from baton.core.routing import KINDS, PREFERENCES, QUALITY_RANK
from baton.core.settle import DEFAULT_MAX_ATTEMPTS
from baton.core.usage import CURRENCY, PRICES_AS_OF

ISOLATIONS = ("worktree",)
#: ``sandbox``: use the OS sandbox where it can run, refuse to start agents without it, or never.
SANDBOX_MODES = ("auto", "require", "off")
SECRETS_BACKENDS = ("file", "os")
DEFAULT_COOLDOWN = 60.0
DEFAULT_VERIFY_TIMEOUT = 600.0
DEFAULT_REPAIR_ROUNDS = 2
DEFAULT_CONCURRENCY = 4


_Q = ", ".join(QUALITY_RANK)

DEFAULT_WORKER: Field[str] = Field(
    ("default_worker",), "profile name", "the best usable agent CLI",
    "the worker when routing has no rule for a task's kind; with none set, the first agent CLI"
    " that is installed and logged in (`baton workers` says which), never the fake agent",
    nonempty, "a configured profile", "",
)  # fmt: skip
DEFAULT_MODEL: Field[str | None] = Field(
    ("default_model",), "string", "the profile's model", "the model the default worker runs",
    nonempty, "a model name", None,
)  # fmt: skip
ONLY: Field[list[str] | None] = Field(
    ("only",), "list of profile names", "all",
    "the profiles this project may use; any other is refused, even by name",
    strings, "a list of profile names", None,
)  # fmt: skip
ISOLATION: Field[str] = Field(
    ("isolation",), _choices(ISOLATIONS), '`"worktree"`',
    "how tasks are isolated (the only one so far)",
    one_of(ISOLATIONS), f"one of {', '.join(ISOLATIONS)}", "worktree", builtin=True,
)  # fmt: skip
BRIEF_RULES: Field[list[str]] = Field(
    ("brief_rules",), "list of strings", "`[]`", "rules added to every brief (`Rules:` section)",
    strings, "a list of strings", [],
)  # fmt: skip
ON_RATE_LIMIT: Field[str] = Field(
    ("on_rate_limit",), _choices(routing.ON_RATE_LIMIT), '`"handoff"`',
    "a rate-limited task moves to the next allowed account, or waits for the reset",
    one_of(routing.ON_RATE_LIMIT), _either(routing.ON_RATE_LIMIT), "handoff", builtin=True,
)  # fmt: skip
REPAIR_ROUNDS: Field[int] = Field(
    ("repair_rounds",), "integer ≥ 0", f"`{DEFAULT_REPAIR_ROUNDS}`",
    "how many times a worker may repair a change that fails its checks or review",
    count, "a whole number ≥ 0", DEFAULT_REPAIR_ROUNDS, builtin=True,
)  # fmt: skip
MAX_ATTEMPTS: Field[int] = Field(
    ("max_attempts",), "integer ≥ 1", f"`{DEFAULT_MAX_ATTEMPTS}`",
    "how many attempts a task may start on its own — the first, rate-limit retries, hand-offs"
    " and repairs together; when they are used up the task ends `failed` (completion"
    " `rate_limit` when a rate limit was the cause) saying what it tried. Replies and steers"
    " do not count",
    positive, "a whole number ≥ 1", DEFAULT_MAX_ATTEMPTS, builtin=True,
)  # fmt: skip
SANDBOX: Field[str] = Field(
    ("sandbox",), _choices(SANDBOX_MODES), '`"auto"`',
    "agents run in the OS sandbox where one works (`auto`; where none does they run"
    " unsandboxed, and the task's log says so), never without it (`require`: the task fails,"
    ' "the agent was not started"), or never in it (`off`). See [security.md](security.md)',
    one_of(SANDBOX_MODES), _either(SANDBOX_MODES), "auto", user_only=True, builtin=True,
)  # fmt: skip
VERIFY: Field[list[Any]] = Field(
    ("verify",), "array of tables `[[verify]]`", "none",
    "checks run on a task's result in its worktree, inside the agent's sandbox"
    " ([security.md](security.md#what-the-agent-can-touch): the checkout writable, `/tmp`"
    " private, the rest read-only)",
    tables, "a list of tables", [],
)  # fmt: skip
VERIFY_NAME: Field[str] = Field(
    ("verify", "[]", "name"), "string", "required", "the check's name",
    nonempty, "a non-empty string", "",
)  # fmt: skip
VERIFY_ARGV: Field[list[str]] = Field(
    ("verify", "[]", "argv"), "list of strings", "required",
    "the command: a list, never a shell string",
    strings, "a non-empty list of strings", [],
)  # fmt: skip
VERIFY_TIMEOUT: Field[float] = Field(
    ("verify", "[]", "timeout"), "seconds", f"`{DEFAULT_VERIFY_TIMEOUT:g}`",
    "the check fails when it runs longer",
    seconds, "a positive number of seconds", DEFAULT_VERIFY_TIMEOUT,
)  # fmt: skip
REVIEW_WORKER: Field[str | None] = Field(
    ("review", "worker"), "profile name", "none", "another worker reviews the results",
    nonempty, "a profile", None,
)  # fmt: skip
REVIEW_KINDS: Field[list[str]] = Field(
    ("review", "kinds"), "list of task kinds", "`[]`",
    "the kinds whose results are reviewed (all kinds when empty)",
    strings, "a list of task kinds", [],
)  # fmt: skip
PROVIDER: Field[str] = Field(
    ("profiles", "NAME", "provider"), "provider name", "`NAME`, when it is a provider's",
    "the agent CLI: `claude`, `codex`, `opencode`, `gemini`, `pi`, `command`, `external` (a"
    " program speaking [the adapter protocol](adapter-protocol.md)) or `fake`"
    " ([agents.md](agents.md)); a profile named after a provider changes the discovered one",
    nonempty, "a provider", "", account_safe=True,
)  # fmt: skip
BINARY: Field[str | None] = Field(
    ("profiles", "NAME", "binary"), "path or command", "the provider's CLI on `PATH`",
    "the program to run", nonempty, "a path or command name", None,
)  # fmt: skip
MODEL: Field[str | None] = Field(
    ("profiles", "NAME", "model"), "string", "the CLI's own", "the profile's default model",
    nonempty, "a model name", None, account_safe=True,
)  # fmt: skip
MODELS: Field[list[str]] = Field(
    ("profiles", "NAME", "models"), "list of strings", "`[]` (any)", "the models it may run",
    strings, "a list of model names", [], account_safe=True,
)  # fmt: skip
ENV: Field[str] = Field(
    ("profiles", "NAME", "env", "VAR"), "string", "none",
    "an environment variable of its agent; `keyring:SERVICE/NAME` is read from the OS"
    " keyring (see [Secrets](#secrets)); written in your user config only",
    string, "a string", "",
)  # fmt: skip
CONFIG_DIR: Field[str | None] = Field(
    ("profiles", "NAME", "config_dir"), "folder", "the CLI's own",
    "its own login and limits: becomes `CLAUDE_CONFIG_DIR` (`CODEX_HOME`, … for the others)",
    nonempty, "a folder", None,
)  # fmt: skip
CONCURRENCY: Field[int] = Field(
    ("profiles", "NAME", "concurrency"), "integer ≥ 1", f"`{DEFAULT_CONCURRENCY}`",
    "tasks at once on this account, counted across every broker of the state home",
    positive, "a positive integer", DEFAULT_CONCURRENCY,
    account_safe=True,
)  # fmt: skip
ENABLED: Field[bool] = Field(
    ("profiles", "NAME", "enabled"), "boolean", "`true`",
    "a disabled profile is never dispatched to", boolean, "true or false", True,
    account_safe=True,
)  # fmt: skip
LABEL: Field[str] = Field(
    ("profiles", "NAME", "label"), "string", '`""`', "shown beside its name",
    string, "a string", "", account_safe=True,
)  # fmt: skip
OPTIONS: Field[dict[str, Any]] = Field(
    ("profiles", "NAME", "options"), "table", "`{}`",
    "handed to the provider's adapter as it is (for `command`:"
    ' `options = { argv = ["ruff", "format", "{files}"] }`)',
    table, "a table", {},
)  # fmt: skip
OPTIONS_SANDBOX: Field[dict[str, Any]] = Field(
    ("profiles", "NAME", "options", "sandbox"), "`{read = [...], write = [...]}`", "none",
    "more paths its sandbox shows (`~` is expanded)",
    table, "a table", {}, user_only=True,
)  # fmt: skip
NETWORK: Field[str] = Field(
    ("profiles", "NAME", "network"), _choices(NETWORKS), '`"allow"`',
    '`"none"`: its sandbox has no network (for commands that need none)',
    one_of(NETWORKS), _either(NETWORKS), "allow", account_safe=True,
)  # fmt: skip
RUNNER: Field[str] = Field(
    ("profiles", "NAME", "runner"), _choices(RUNNERS), '`"local"`',
    'where its attempts run: `"ray"` on a node of a Ray cluster (needs `baton-lsp[ray]`;'
    " [cluster.md](cluster.md))",
    one_of(RUNNERS), _either(RUNNERS), "local", user_only=True,
)  # fmt: skip
RAY_ADDRESS: Field[str | None] = Field(
    ("profiles", "NAME", "ray_address"), "`HOST:PORT`", "none",
    'the Ray cluster of `runner = "ray"`', nonempty, "a Ray address", None, user_only=True,
)  # fmt: skip
RAY_RESOURCES: Field[float] = Field(
    ("profiles", "NAME", "ray_resources", "RESOURCE"), "number > 0", "none",
    "what a node must advertise to run one of its attempts (`ray_resources = {claude = 1}`)",
    seconds, "a number > 0", 1.0, account_safe=True,
)  # fmt: skip
RAY_SHIP_SECRETS: Field[bool] = Field(
    ("profiles", "NAME", "ray_ship_secrets"), "boolean", "`false`",
    "its keyring secrets travel to the node (else the node uses its own login)",
    boolean, "true or false", False, user_only=True,
)  # fmt: skip
WORKER_MCP_DISABLE: Field[list[str]] = Field(
    ("profiles", "NAME", "worker_mcp", "disable"), 'list of server names, or `"*"`', "`[]`",
    "MCP servers of the CLI's own config its agent does not get, for Baton's tasks only"
    ' (`"*"`: none of them); your CLI\'s config files are never changed (see'
    " [What a worker carries](#what-a-worker-carries))",
    names_or_all, 'a list of server names or "*"', [], account_safe=True,
)  # fmt: skip
WORKER_MCP_ADD: Field[dict[str, Any]] = Field(
    ("profiles", "NAME", "worker_mcp", "add"),
    "table of `{command, args, env}` or `{url, headers}`", "`{}`",
    "MCP servers its agent gets besides: stdio (`command`, `args`, `env`) or HTTP (`url`,"
    " `headers`, where the CLI has it)",
    mcp_servers, "a table of servers, each { command, args, env } or { url, headers }", {},
    account_safe=True,
)  # fmt: skip
ALLOW: Field[list[str]] = Field(
    ("routing", "KIND", "allow"), "list of `PROVIDER[/MODEL]` or `PROFILE[/MODEL]`", "`[]`",
    "who may run tasks of this kind, best first (see [Routing](#routing))",
    strings, "a list of provider/model", [],
)  # fmt: skip
PREFER: Field[str] = Field(
    ("routing", "KIND", "prefer"), _choices(PREFERENCES), '`"order"`',
    "keep the list's order, the cheapest quality that is enough first, or the best record first",
    one_of(PREFERENCES), f"one of {', '.join(PREFERENCES)}", "order",
)  # fmt: skip
MIN_QUALITY: Field[str | None] = Field(
    ("routing", "KIND", "min_quality"), _choices(QUALITY_RANK), "none",
    "entries whose model is below it are dropped",
    one_of(QUALITY_RANK), f"one of {_Q}", None,
)  # fmt: skip
QUALITY: Field[str] = Field(
    ("models", "MODEL"), _choices(QUALITY_RANK), "guessed from the name",
    "a model's quality, for `min_quality`", one_of(QUALITY_RANK), f"one of {_Q}", "",
)  # fmt: skip
COOLDOWN_DEFAULT: Field[float] = Field(
    ("cooldown", "default"), "seconds", f"`{DEFAULT_COOLDOWN:g}`",
    "how long an account rests after a rate limit whose error names no reset time or"
    " retry-after",
    seconds, "a positive number of seconds", DEFAULT_COOLDOWN, builtin=True,
)  # fmt: skip
COOLDOWN: Field[float] = Field(
    ("cooldown", "PROVIDER"), "seconds", "`cooldown.default`",
    "the same, for the accounts of one provider",
    seconds, "a positive number of seconds", DEFAULT_COOLDOWN,
)  # fmt: skip
_PER_M = f"{CURRENCY} per million tokens"
PRICE_INPUT: Field[float | None] = Field(
    ("prices", "MODEL", "input"), _PER_M, "the shipped price, if any",
    f"what a model's input costs, to estimate the cost of tasks whose CLI reports none; the"
    f" shipped prices are list prices as of {PRICES_AS_OF}, estimates to override (see"
    " [Tokens and cost](#tokens-and-cost))",
    amount, "a number ≥ 0", None,
)  # fmt: skip
PRICE_CACHED: Field[float | None] = Field(
    ("prices", "MODEL", "cached_input"), _PER_M, "the shipped price, else `input`",
    "what its input read from the prompt cache costs",
    amount, "a number ≥ 0", None,
)  # fmt: skip
PRICE_OUTPUT: Field[float | None] = Field(
    ("prices", "MODEL", "output"), _PER_M, "the shipped price; required for a new model",
    "what its output (reasoning included) costs",
    amount, "a number ≥ 0", None,
)  # fmt: skip
SECRETS_BACKEND: Field[str | None] = Field(
    ("secrets", "backend"), _choices(SECRETS_BACKENDS), "the OS keyring",
    '`"file"` opts in to the unencrypted file backend (see [Secrets](#secrets))',
    one_of(SECRETS_BACKENDS), _either(SECRETS_BACKENDS), None, user_only=True,
)  # fmt: skip

#: Every key, in the order of the doc's table.
FIELDS: tuple[Field[Any], ...] = (
    DEFAULT_WORKER, DEFAULT_MODEL, ONLY, ISOLATION, BRIEF_RULES, ON_RATE_LIMIT,
    REPAIR_ROUNDS, MAX_ATTEMPTS, SANDBOX, VERIFY, VERIFY_NAME, VERIFY_ARGV, VERIFY_TIMEOUT,
    REVIEW_WORKER, REVIEW_KINDS, PROVIDER, BINARY, MODEL, MODELS, ENV, CONFIG_DIR, CONCURRENCY,
    ENABLED, LABEL, OPTIONS, OPTIONS_SANDBOX, NETWORK, RUNNER, RAY_ADDRESS, RAY_RESOURCES,
    RAY_SHIP_SECRETS, WORKER_MCP_DISABLE, WORKER_MCP_ADD, ALLOW, PREFER, MIN_QUALITY, QUALITY,
    COOLDOWN_DEFAULT, COOLDOWN, PRICE_INPUT, PRICE_CACHED, PRICE_OUTPUT, SECRETS_BACKEND,
    POOL_SIZE, POOL_MAX_BYTES, RETENTION_KEEP_DAYS, RETENTION_CHECKOUT_DAYS, NOTIFY_DESKTOP,
    NOTIFY_ON, GROUP_PROVIDER, GROUP_MODEL, GROUP_MAX, GROUP_FROM, GROUP_TO, GROUP_TIMEZONE,
    GROUP_GRACE, GROUP_SHARED_QUOTA, *BUDGET_FIELDS, *PROFILE_BUDGET_FIELDS, *MODEL_BUDGET_FIELDS,
    DASHBOARD_ACTIONS,
)  # fmt: skip

#: The names a user-chosen part may take, where they are fixed.
_NAMES: dict[Key, tuple[str, ...]] = {("routing",): KINDS}
#: What the error calls an unknown name at a level.
_LABELS: dict[Key, str] = {
    (): "setting",
    ("profiles", "NAME"): "profile field",
    ("groups", "NAME"): "group field",
    ("routing",): "task kind",
}


def fields_under(prefix: Key) -> tuple[str, ...]:
    """The names one level below ``prefix`` (a path as in the table), in table order."""
    out: dict[str, None] = {}
    for f in FIELDS:
        if len(f.path) > len(prefix) and f.path[: len(prefix)] == prefix:
            out.setdefault(f.path[len(prefix)], None)
    return tuple(out)


def matches(path: Key, key: Key) -> bool:
    return len(path) == len(key) and all(
        p == k or _chosen(p) for p, k in zip(path, key, strict=True)
    )


def unknown(key: Key) -> tuple[Key, str] | None:
    """None when ``key`` (a merged item's) is in the table, else the first part of it that is
    not, with the error's words."""
    path: Key = ()
    for depth, part in enumerate(key):
        if any(f.path == path for f in FIELDS):
            return None  # a leaf reached: its check says what is wrong with a table below it
        names = fields_under(path)
        label = _LABELS.get(path, "field")
        chosen = next((n for n in names if _chosen(n)), None)
        if part in names:
            path = (*path, part)
        elif chosen is not None and part not in _NAMES.get(path, (part,)):
            return key[: depth + 1], f"unknown {label}; {label}s: {', '.join(_NAMES[path])}"
        elif chosen is not None:
            path = (*path, chosen)
        elif not path:
            return key[:1], f"unknown setting; known settings: {', '.join(sorted(names))}"
        else:
            return key[: depth + 1], f"unknown {label}; known: {', '.join(names)}"
    return None


def builtin_items() -> dict[Key, Any]:
    """The defaults written into the defaults layer, so ``baton config`` shows their source."""
    return {f.path: f.value for f in FIELDS if f.builtin}


# -- the doc -------------------------------------------------------------------------------

BEGIN = "<!-- generated from baton.config.schema by scripts/gen-docs: edit the schema, not this -->"
END = "<!-- end of the generated table -->"


def doc_table() -> str:
    """The key table of ``docs/reference/config.md``, as Markdown."""
    rows = ["| key | type | default | where | meaning |", "|---|---|---|---|---|"]
    for f in FIELDS:
        where = "user config" if f.user_only else "any"
        if f.path[:2] == ("profiles", "NAME") and not f.user_only and not f.account_safe:
            where = "any, but [not for accounts](#what-a-project-may-set)"
        rows.append(f"| `{f.name}` | {f.type} | {f.default} | {where} | {f.meaning} |")
    return "\n".join(rows) + "\n"


def doc_block(text: str) -> tuple[int, int]:
    """Where the generated table sits in a doc's text (after :data:`BEGIN`, before :data:`END`)."""
    start = text.index(BEGIN) + len(BEGIN) + 1
    return start, text.index(END, start)


def with_table(text: str) -> str:
    """``text`` (the config doc) with its key table regenerated."""
    start, end = doc_block(text)
    return text[:start] + doc_table() + text[end:]


def write_doc(path: Path) -> bool:
    """Regenerate the key table in the config doc at ``path``; whether it changed."""
    text = path.read_text()
    new = with_table(text)
    if new != text:
        path.write_text(new)
    return new != text
