"""The masker: a secret value is masked whole, cut anywhere, and with whitespace put between
its pieces, in one text or in a stream of chunks; nothing else of the text changes."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from baton.core import events
from baton.core.diff import FileDiff, FileStatus, compute_hunks, mask_diff, reveal
from baton.core.events import Event, EventMasker, EventType
from baton.core.masking import (
    MASK,
    MASK_ENV,
    StreamMasker,
    mask_text,
    prepare,
    redact,
    values_from_env,
)

SECRET = "canary-7f3a9c1e-d00d-4b1d-9e55-000baton000"


def stream(chunks: list[str], values: list[str] | None = None) -> tuple[str, list[str]]:
    """Everything a stream masker lets out for ``chunks``, and what each push let out."""
    m = StreamMasker(values if values is not None else [SECRET])
    outs = [m.push(c) for c in chunks]
    return "".join(outs) + m.flush(), outs


def test_a_whole_value_is_masked_and_nothing_else_changes() -> None:
    text = f"the token is {SECRET}, twice: {SECRET}\n"
    assert mask_text(text, [SECRET]) == f"the token is {MASK}, twice: {MASK}\n"
    assert mask_text("nothing to see\n", [SECRET]) == "nothing to see\n"
    assert mask_text(text, []) == text


def test_pieces_with_newlines_or_spaces_between_them_are_masked_line_by_line() -> None:
    folded = "".join(SECRET[i : i + 8] + "\n" for i in range(0, len(SECRET), 8))  # fold -w 8
    masked = mask_text("before\n" + folded + "after\n", [SECRET])
    assert SECRET[:8] not in masked and "9e55" not in masked
    # The lines stay: each piece is masked on its own line.
    assert masked == "before\n" + "\n".join([MASK] * folded.count("\n")) + "\nafter\n"
    assert mask_text(f"{SECRET[:10]}  {SECRET[10:]}", [SECRET]) == MASK
    assert mask_text(f"{SECRET[:10]}\r\n{SECRET[10:]}", [SECRET]) == f"{MASK}\r\n{MASK}"


def test_json_escaped_line_breaks_between_pieces_are_masked() -> None:
    # What a JSON stream carries when the agent's text holds the folded secret.
    line = json.dumps({"type": "text", "text": f"x {SECRET[:8]}\n{SECRET[8:]}\n"})
    assert SECRET[:8] not in mask_text(line, [SECRET])
    assert json.loads(mask_text(line, [SECRET]))["text"] == f"x {MASK}\n"


def test_a_value_cut_anywhere_in_a_stream_is_masked_and_the_rest_kept() -> None:
    text = f"the token is {SECRET}; done\nbye\n"
    want = f"the token is {MASK}; done\nbye\n"
    for cut in range(len(text) + 1):
        got, _ = stream([text[:cut], text[cut:]])
        assert got == want, cut
    for size in (1, 2, 3, 7, 13):
        chunks = [text[i : i + size] for i in range(0, len(text), size)]
        assert stream(chunks)[0] == want, size


def test_pieces_in_separate_chunks_with_line_breaks_between_are_masked() -> None:
    pieces = [SECRET[:12] + "\n", SECRET[12:25] + "\n", SECRET[25:] + "\n"]
    got, _ = stream(["start: ", *pieces, "end\n"])
    assert SECRET[:12] not in got and SECRET[12:25] not in got and SECRET[25:] not in got
    assert got.startswith("start: ") and got.endswith("end\n")


@given(st.lists(st.integers(min_value=0, max_value=60), max_size=8))
def test_no_cut_lets_the_value_through(cuts: list[int]) -> None:
    text = f"a{SECRET}b {SECRET[:20]}\n{SECRET[20:]} c"
    points = sorted({min(c, len(text)) for c in cuts})
    chunks = [text[i:j] for i, j in zip([0, *points], [*points, len(text)], strict=True)]
    got, _ = stream(chunks)
    assert SECRET not in got and SECRET[:20] not in got
    assert got == mask_text(text, [SECRET])


def test_the_wrappers_masker_lets_out_text_that_only_begins_like_a_secret_at_once() -> None:
    # hold_from=4: a line ending in a secret's first few characters is not held (no
    # latency for the tailer); four characters or more of its beginning are held.
    m = StreamMasker([SECRET], hold_from=4)
    assert m.push("you can\n") == "you can\n"
    assert m.push("see canar") == "see "
    assert m.push("iness\n") == "canariness\n"


def test_the_rest_of_a_secret_whose_beginning_went_out_is_masked() -> None:
    m = StreamMasker([SECRET], hold_from=4)
    assert m.push("the key: can") == "the key: can"  # three characters: let out
    assert m.push(SECRET[3:] + " ok\n") == f"{MASK} ok\n"


def test_a_pause_lets_out_a_short_beginning_and_the_rest_of_the_secret_is_still_masked() -> None:
    m = StreamMasker([SECRET])
    assert m.push("you can") == "you "  # any beginning is held while the stream goes on
    assert m.pause() == "can"  # a pause (another kind of event) lets a short one out
    assert m.push(SECRET[3:] + " ok\n") == f"{MASK} ok\n"  # the rest is masked all the same
    assert m.push("see canar") == "see "
    assert m.pause() == ""  # four characters or more: held across a pause
    assert m.push("iness\n") == "canariness\n"


def test_flush_masks_the_beginning_of_a_secret_left_at_the_end() -> None:
    got, outs = stream(["last words: " + SECRET[:15] + "\n"])
    assert outs == ["last words: "]
    assert got == f"last words: {MASK}\n"


def test_values_too_short_to_mask_are_ignored_and_json_forms_are_added() -> None:
    assert prepare(["abc", "", "abcdef"]) == ("abcdef",)
    quoted = 'pa"ss\\word'
    assert json.dumps(quoted)[1:-1] in prepare([quoted])
    assert mask_text(json.dumps({"v": quoted}), [quoted]) == json.dumps({"v": MASK})


def test_redact_walks_nested_data() -> None:
    data = {"a": [f"x{SECRET}", {"b": SECRET[:9] + "\n" + SECRET[9:]}], "n": 3}
    assert redact(data, [SECRET]) == {"a": [f"x{MASK}", {"b": f"{MASK}\n{MASK}"}], "n": 3}


def test_the_wrapper_finds_the_values_by_the_names_of_their_variables() -> None:
    env = {MASK_ENV: "API_TOKEN,MISSING,EMPTY", "API_TOKEN": SECRET, "EMPTY": "", "X": "y"}
    assert values_from_env(env) == [SECRET]
    assert values_from_env({"API_TOKEN": SECRET}) == []


# -- events -------------------------------------------------------------------------------------


def test_text_deltas_are_one_stream_and_other_events_are_masked_whole() -> None:
    m = EventMasker([SECRET])
    first = m.events([events.text("token: " + SECRET[:10], delta=True)])
    second = m.events(
        [
            events.text(SECRET[10:30], delta=True),
            Event(EventType.TOOL, {"name": "bash", "input": f"echo {SECRET}", "files": []}),
            events.text(SECRET[30:] + " done\n", delta=True),
        ]
    )
    ending = m.events([Event(EventType.FINAL, {"text": f"said {SECRET}"})]) + m.flush()
    out = first + second + ending
    texts = "".join(e.data["text"] for e in out if e.type == EventType.TEXT)
    assert texts == f"token: {MASK} done\n"
    assert all(e.data["delta"] for e in out if e.type == EventType.TEXT)
    assert SECRET not in json.dumps([e.to_json() for e in out])
    tool = next(e for e in out if e.type == EventType.TOOL)
    assert tool.data["input"] == f"echo {MASK}"
    assert out[-1].type == EventType.FINAL and out[-1].data["text"] == f"said {MASK}"


def test_flush_gives_back_what_was_held_as_a_text_delta() -> None:
    m = EventMasker([SECRET])
    assert m.events([events.text("x " + SECRET[:6], delta=True)])[0].data["text"] == "x "
    (held,) = m.flush()
    assert held.type == EventType.TEXT and held.data == {"text": MASK, "delta": True}
    assert m.flush() == []
    assert EventMasker([]).events([events.text("same", delta=True)])[0].data["text"] == "same"


# -- diffs --------------------------------------------------------------------------------------


def test_a_hunk_holding_a_secret_is_flagged_and_masked_with_its_lines_kept() -> None:
    old = "a\nb\n"
    new = f"a\ntoken={SECRET[:20]}\n{SECRET[20:]}\nb\nc\n"
    real = [FileDiff("cfg.txt", FileStatus.MODIFIED, compute_hunks("cfg.txt", old, new))]
    masked = mask_diff(real, [SECRET])
    secret, plain = masked[0].hunks
    assert secret.secret and not plain.secret
    assert secret.new_text == f"token={MASK}\n{MASK}\n" and secret.new_count == 2
    assert plain == real[0].hunks[1]  # untouched, same id
    assert secret.id != real[0].hunks[0].id  # the id does not come from the secret's text
    assert SECRET[:20] not in json.dumps([f.to_json() for f in masked])
    assert json.loads(json.dumps(secret.to_json()))["secret"] is True
    assert "secret" not in plain.to_json()
    assert mask_diff(real, [SECRET]) == masked  # stable
    # The real text comes back only from the real diff, under the masked ids.
    back = reveal(masked, real, [SECRET])
    shown = back[0].hunks[0]
    assert shown.id == secret.id and shown.new_text == real[0].hunks[0].new_text
    assert back[0].hunks[1] == plain
