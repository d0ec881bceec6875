"""The config schema is written once (``baton.config.schema.FIELDS``): it decides which keys
exist, which a project may not set and what the defaults are, and the key table of
``docs/reference/config.md`` is generated from it."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from baton.config import schema
from baton.config.layers import ConfigError
from baton.config.profiles import Profile
from baton.config.settings import ReviewPolicy, Settings, VerifyStep, load_settings

ROOT = Path(__file__).resolve().parents[2]
CONFIG_MD = ROOT / "docs" / "reference" / "config.md"
REGENERATE = (
    "the key table of docs/reference/config.md differs from baton.config.schema:"
    " run scripts/gen-docs"
)
BASE = {"fake": Profile(name="fake", provider="fake")}


def table_drift(doc: str) -> list[str]:
    """The rows of the generated table missing from ``doc``'s, then the rows it has beyond."""
    start, end = schema.doc_block(doc)
    have, want = doc[start:end].splitlines(), schema.doc_table().splitlines()
    return [f"missing: {r}" for r in want if r not in have] + [
        f"not in the schema: {r}" for r in have if r not in want
    ]


def test_config_md_key_table_is_generated_from_the_schema() -> None:
    text = CONFIG_MD.read_text()
    assert table_drift(text) == [], REGENERATE
    assert schema.with_table(text) == text, REGENERATE  # same rows, same order


def test_a_row_removed_from_the_doc_is_reported() -> None:
    text = CONFIG_MD.read_text()
    row = next(line for line in text.splitlines() if line.startswith("| `max_attempts` |"))
    assert table_drift(text.replace(row + "\n", "")) == [f"missing: {row}"]
    assert schema.with_table(text.replace(row + "\n", "")) == text


def _sample(f: schema.Field[object]) -> tuple[str, ...]:
    names = {"NAME": "claude", "KIND": "mechanical", "MODEL": "m", "PROVIDER": "codex"}
    return tuple(names.get(p, "V") for p in f.path if p.isupper())


@pytest.mark.parametrize("f", schema.FIELDS, ids=lambda f: f.name)
def test_every_key_of_the_table_is_known(f: schema.Field[object]) -> None:
    if "[]" in f.path:
        assert f.path[-1] in schema.fields_under(f.path[:-1])
        return
    assert schema.unknown(f.key(*_sample(f))) is None
    assert f.check(f.value) is not None or f.value is None or f.value == ""


@pytest.mark.parametrize(
    ("key", "words"),
    [
        (("defualt_worker",), "unknown setting; known settings: brief_rules, budget, cooldown"),
        (("profiles", "a", "modle"), "unknown profile field; known: provider, binary"),
        (("routing", "speedy"), "unknown task kind"),
        (("routing", "build", "deny"), "unknown field; known: allow, prefer, min_quality"),
        (("secrets", "store"), "unknown field; known: backend"),
    ],
)
def test_keys_outside_the_table_are_unknown(key: tuple[str, ...], words: str) -> None:
    bad = schema.unknown(key)
    assert bad is not None and bad[0] == key and bad[1].startswith(words)


@pytest.mark.parametrize("f", [f for f in schema.FIELDS if f.user_only], ids=lambda f: f.name)
def test_user_only_keys_are_refused_in_a_project(f: schema.Field[object], tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / ".git").mkdir(parents=True)
    *table, key = f.key(*_sample(f))
    value = {"write": ["~"]} if key == "sandbox" and table else f'"{f.value or "file"}"'
    if isinstance(f.value, bool | list):  # a TOML boolean or array, as it is
        value = json.dumps(f.value)
    lines = [f"[{'.'.join(table)}]"] if table else []
    lines.append(f"{key} = {value}".replace("'", '"'))
    if f is schema.OPTIONS_SANDBOX:  # a table kept whole: the key is inside its value
        lines = ["[profiles.claude]", 'provider = "claude"', "options = { sandbox = {} }"]
    (root / ".baton.toml").write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match="only be set in your user config, not in a project"):
        load_settings(root, profiles=BASE, user_config=tmp_path / "none.toml")


def test_defaults_come_from_the_table(tmp_path: Path) -> None:
    s = load_settings(None, profiles=BASE, user_config=tmp_path / "none.toml")
    for f in schema.FIELDS:
        if f.builtin:
            assert s.values[".".join(f.path)] == f.value, f.name
            assert s.provenance[".".join(f.path)].note == "built in"
    fields = {x.name: x.default for x in dataclasses.fields(Settings)}
    assert fields["isolation"] == schema.ISOLATION.value
    assert fields["on_rate_limit"] == schema.ON_RATE_LIMIT.value
    assert fields["repair_rounds"] == schema.REPAIR_ROUNDS.value
    assert fields["max_attempts"] == schema.MAX_ATTEMPTS.value
    assert fields["sandbox"] == schema.SANDBOX.value
    assert VerifyStep("t", ("x",)).timeout == schema.VERIFY_TIMEOUT.value
    assert ReviewPolicy() == ReviewPolicy(schema.REVIEW_WORKER.value, ())
    blank = Profile(name="", provider="")
    for f in schema.FIELDS:
        if f.path[:2] == ("profiles", "NAME") and len(f.path) == 3 and f is not schema.PROVIDER:
            assert getattr(blank, f.path[2]) == f.value, f.name
    assert s.cooldown_for("claude") == schema.COOLDOWN_DEFAULT.value
