"""Each adapter's usage, normalized, equals what its CLI's captured stream says.

For every stream in tests/fixtures/streams, the expected numbers are read here straight from
the CLI's own fields, by that CLI's rules (which tokens its ``input`` includes, whether its
reasoning is inside its output), and compared with what the adapter's parser reports folded
into an :class:`Outcome`. The write streams are also pinned to their literal numbers, so a
stream whose usage lines stopped parsing cannot pass by expecting nothing.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from baton.agents.claude import ClaudeParser
from baton.agents.codex import CodexParser
from baton.agents.gemini import GeminiParser
from baton.agents.opencode import OpenCodeParser
from baton.agents.pi import PiParser
from baton.core.events import Event
from baton.core.outcome import Outcome
from baton.core.usage import ESTIMATED, REPORTED, Usage, own_part, price_for

STREAMS = Path(__file__).resolve().parents[1] / "fixtures" / "streams"


def lines(name: str) -> Iterator[dict[str, Any]]:
    for raw in (STREAMS / name).read_text().splitlines():
        try:
            obj = json.loads(raw)
        except ValueError:
            continue
        if isinstance(obj, dict):
            yield obj


def replay(parser: Any, name: str) -> Usage:
    out: list[Event] = []
    for raw in (STREAMS / name).read_text().splitlines():
        out += parser.feed(raw)
    out += parser.finish(0, "")
    return Outcome.fold(out).usage


def streams(cli: str) -> list[str]:
    found = sorted(p.name for p in STREAMS.glob(f"{cli}-*.jsonl"))
    assert found, cli
    return found


# -- what each CLI's stream says, by its own rules -------------------------------------------


def claude_says(name: str) -> Usage:
    """The ``result`` line's per-model table (what total_cost_usd is the sum of): input
    excludes cache reads; cache writes are input."""
    results = [o for o in lines(name) if o.get("type") == "result"]
    if not results:
        return Usage()
    r = results[-1]
    models = list((r.get("modelUsage") or {}).values())
    if not models:  # a failed run's result line: only ``usage``, zeros and a zero cost
        u = r.get("usage") or {}
        if not any(u.get(k) for k in ("input_tokens", "output_tokens")) and not r.get(
            "total_cost_usd"
        ):
            return Usage()  # nothing used: no usage to report
        return Usage.of(
            input=u.get("input_tokens", 0) + u.get("cache_creation_input_tokens", 0),
            cached_input=u.get("cache_read_input_tokens", 0),
            output=u.get("output_tokens", 0),
            cost=r.get("total_cost_usd"),
        )
    assert sum(m["costUSD"] for m in models) == pytest.approx(r["total_cost_usd"])
    return Usage.of(
        input=sum(m["inputTokens"] + m["cacheCreationInputTokens"] for m in models),
        cached_input=sum(m["cacheReadInputTokens"] for m in models),
        output=sum(m["outputTokens"] for m in models),
        cost=r.get("total_cost_usd"),
    )


def codex_says(name: str) -> Usage:
    """``turn.completed``: input_tokens include the cached ones; reasoning is inside output."""
    total = Usage()
    for o in lines(name):
        if o.get("type") == "turn.completed":
            u = o["usage"]
            total = total.widen(
                Usage.of(
                    input=u["input_tokens"] - u.get("cached_input_tokens", 0),
                    cached_input=u.get("cached_input_tokens", 0),
                    output=u["output_tokens"],
                    reasoning=u.get("reasoning_output_tokens"),
                )
            )
    return total


def gemini_says(name: str) -> Usage:
    """The ``result`` line's stats: input_tokens include ``cached``."""
    found = [o["stats"] for o in lines(name) if o.get("type") == "result" and o.get("stats")]
    if not found:
        return Usage()
    s = found[-1]
    return Usage.of(
        input=s["input_tokens"] - s.get("cached", 0),
        cached_input=s.get("cached", 0),
        output=s["output_tokens"],
    )


def opencode_says(name: str) -> Usage:
    """The sum of the ``step_finish`` parts' tokens; cache and reasoning are counted apart."""
    total = Usage()
    for o in lines(name):
        part = o.get("part") or {}
        if o.get("type") != "step_finish" or not isinstance(part.get("tokens"), dict):
            continue
        t = part["tokens"]
        cache = t.get("cache") or {}
        cost = part.get("cost")
        total = total + Usage.of(
            input=t["input"] + cache.get("write", 0),
            cached_input=cache.get("read", 0),
            output=t["output"] + t.get("reasoning", 0),
            reasoning=t.get("reasoning", 0),
            cost=cost if cost else None,  # 0: OpenCode knows no price for the model
        )
    return total


def pi_says(name: str) -> Usage:
    """The sum of the assistant ``message_end`` usages; cache reads and writes are apart."""
    total = Usage()
    for o in lines(name):
        m = o.get("message") or {}
        if o.get("type") != "message_end" or m.get("role") != "assistant" or not m.get("usage"):
            continue
        u = m["usage"]
        cost = (u.get("cost") or {}).get("total")
        total = total + Usage.of(
            input=u["input"] + u.get("cacheWrite", 0),
            cached_input=u.get("cacheRead", 0),
            output=u["output"],
            cost=cost if cost else None,  # 0: Pi knows no price for the model
        )
    return total


PARSERS: dict[str, tuple[Callable[[], Any], Callable[[str], Usage]]] = {
    "claude": (ClaudeParser, claude_says),
    "codex": (CodexParser, codex_says),
    "gemini": (GeminiParser, gemini_says),
    "opencode": (OpenCodeParser, opencode_says),
    "pi": (PiParser, pi_says),
}
CASES = [(cli, name) for cli in PARSERS for name in streams(cli)]


@pytest.mark.parametrize(("cli", "name"), CASES, ids=[n for _, n in CASES])
def test_normalized_usage_equals_the_stream(cli: str, name: str) -> None:
    make, says = PARSERS[cli]
    assert replay(make(), name) == says(name)


def test_claude_write_usage_and_reported_cost() -> None:
    u = replay(ClaudeParser(), "claude-write.jsonl")
    assert u == Usage(58902, 0, 38, None, 0.177276, REPORTED)


def test_claude_retried_stream_counts_the_per_model_table() -> None:
    """After a cut stream Claude Code retried, its result's ``usage`` is all zeros; the
    per-model table still has what was used (and billed)."""
    u = replay(ClaudeParser(), "claude-cut-retry.jsonl")
    assert (u.input, u.output, u.cost_source) == (29333, 17, REPORTED)
    assert u.cost == pytest.approx(0.088254)


def test_codex_write_usage_without_cost() -> None:
    u = replay(CodexParser(), "codex-write.jsonl")
    assert u == Usage(20062, 0, 43, 0, None, None)


def test_gemini_write_usage_without_cost() -> None:
    assert replay(GeminiParser(), "gemini-write.jsonl") == Usage(24905, 0, 38)


def test_opencode_write_usage_sums_its_steps() -> None:
    u = replay(OpenCodeParser(), "opencode-write.jsonl")
    assert u == Usage(7482 + 7585, 0, 34 + 4, 0, None, None)


def test_pi_write_usage_sums_its_messages() -> None:
    assert replay(PiParser(), "pi-write.jsonl") == Usage(1448 + 1571, 0, 33 + 4)


def test_every_cli_has_streams_with_usage() -> None:
    """The comparison above is not empty on both sides: each CLI's successful streams carry
    usage (the failure streams mostly end before the model counted anything)."""
    with_usage = {cli for cli, n in CASES if not PARSERS[cli][1](n).empty}
    assert with_usage == set(PARSERS)
    assert sum(1 for cli, n in CASES if not PARSERS[cli][1](n).empty) >= 10


def priced(parser: Any, name: str) -> Usage:
    """The attempt's usage as the broker records it: priced by the shipped table for the model
    the stream names (a reported cost stays)."""
    out: list[Event] = []
    for raw in (STREAMS / name).read_text().splitlines():
        out += parser.feed(raw)
    out += parser.finish(0, "")
    outcome = Outcome.fold(out)
    return outcome.usage.priced(price_for(outcome.model))


def test_gemini_names_its_model_and_gets_an_estimated_cost() -> None:
    u = priced(GeminiParser(), "gemini-write.jsonl")
    assert u.cost_source == ESTIMATED
    assert u.cost == pytest.approx((24905 * 0.3 + 38 * 2.5) / 1_000_000)


def test_claude_keeps_its_reported_cost() -> None:
    u = priced(ClaudeParser(), "claude-write.jsonl")
    assert (u.cost, u.cost_source) == (0.177276, REPORTED)


def test_pi_names_its_model_with_its_usage() -> None:
    out: list[Event] = []
    parser = PiParser()
    for raw in (STREAMS / "pi-write.jsonl").read_text().splitlines():
        out += parser.feed(raw)
    assert Outcome.fold(out).model == "mock-model"  # the scripted server's: no price, no cost
    assert priced(PiParser(), "pi-write.jsonl").cost is None


def test_codex_resumed_thread_reports_the_threads_totals() -> None:
    """The reply turn of a resumed thread (codex 0.171, captured): its report holds the first
    turn's 19,605 input and 44 output tokens again; the task counts only the rest."""
    events: list[Event] = []
    parser = CodexParser()
    for raw in (STREAMS / "codex-resumed.jsonl").read_text().splitlines():
        events += parser.feed(raw)
    outcome = Outcome.fold(events)
    assert outcome.session_totals and outcome.usage == Usage(39714, 0, 86, 0, None, None)
    options: dict[str, Any] = {}
    first = Usage(19605, 0, 44, 0)
    sid = outcome.session_id
    assert own_part(options, 1, sid, first) == first
    assert own_part(options, 2, sid, outcome.usage) == Usage(20109, 0, 42, 0)
    # Settling the reply again (a broker that restarted) gives the same part.
    assert own_part(options, 2, sid, outcome.usage) == Usage(20109, 0, 42, 0)


def _claude(raw_lines: list[str]) -> Outcome:
    parser = ClaudeParser()
    events: list[Event] = []
    for raw in raw_lines:
        events += parser.feed(raw)
    return Outcome.fold(events)


#: The first turn of the session claude-resumed.jsonl resumes, as Claude Code reported it.
CLAUDE_FIRST = Usage(61213, 0, 39, None, 0.184224, REPORTED)


def test_claude_resumed_session_reports_its_own_process() -> None:
    """Claude Code (2.1.197, captured) counts one process: the resumed turn's ``result`` is
    that turn's alone — its own messages read all of its input — so it is counted whole."""
    outcome = _claude((STREAMS / "claude-resumed.jsonl").read_text().splitlines())
    assert not outcome.session_totals
    assert (outcome.usage.input, outcome.usage.output) == (61580, 37)
    assert outcome.seen_input == 61580
    options: dict[str, Any] = {}
    sid = outcome.session_id
    own_part(options, 1, sid, CLAUDE_FIRST, seen_input=61213)
    part = own_part(options, 2, sid, outcome.usage, seen_input=outcome.seen_input)
    assert part == outcome.usage


def test_claude_restoring_the_sessions_totals_is_counted_once() -> None:
    """The same resumed turn as a Claude Code that restores the session's totals on resume
    would report it (its ``result`` holding the first turn's too): counted as the first
    turn's report less, the same part as above."""
    lines = []
    for raw in (STREAMS / "claude-resumed.jsonl").read_text().splitlines():
        obj = json.loads(raw)
        if obj.get("type") == "result":
            model = obj["modelUsage"]["claude-sonnet-4-5"]
            model["inputTokens"] += 61213
            model["outputTokens"] += 39
            obj["total_cost_usd"] = round(obj["total_cost_usd"] + 0.184224, 6)
            model["costUSD"] = obj["total_cost_usd"]
            raw = json.dumps(obj)
        lines.append(raw)
    outcome = _claude(lines)
    assert (outcome.usage.input, outcome.usage.output) == (61213 + 61580, 39 + 37)
    options: dict[str, Any] = {}
    sid = outcome.session_id
    own_part(options, 1, sid, CLAUDE_FIRST, seen_input=61213)
    part = own_part(options, 2, sid, outcome.usage, seen_input=outcome.seen_input)
    assert (part.input, part.output) == (61580, 37)
    assert part.cost == pytest.approx(0.185295) and part.cost_source == REPORTED
