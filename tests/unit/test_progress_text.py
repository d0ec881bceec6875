"""Progress shows whole sentences of the agent's stream, never word fragments (issue 17)."""

from __future__ import annotations

import pytest

from baton.surfaces.lsp.progress import last_sentence


@pytest.mark.parametrize(
    ("stream", "shown"),
    [
        ("Reading inve", None),  # a delta cut in a word: nothing new to show
        ("Reading inventory.py and t", None),  # a dot inside a name ends nothing
        ("Reading inventory.", None),  # the delta may stop inside the name: wait
        ("Reading inventory.py. Then", "Reading inventory.py."),
        ("I will simplify the loop: tory.py and t", "I will simplify the loop:"),
        ("First. Second sentence here! And thi", "Second sentence here!"),
        ("line one\nline tw", "line one"),
        ("  spaced   out\twords.  ", "spaced out words."),
    ],
)
def test_the_last_complete_sentence_of_the_stream(stream: str, shown: str | None) -> None:
    assert last_sentence(stream) == shown


def test_a_long_sentence_is_cut_at_a_word() -> None:
    sentence = last_sentence("word " * 40 + "end. ")
    assert sentence is not None and len(sentence) <= 80 and sentence.endswith("word…")
