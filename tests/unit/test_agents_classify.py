import pytest

from baton.agents.classify import classify, resets_at, retry_after, structured_status
from baton.core.lifecycle import Completion
from baton.core.lifecycle import Completion as C


@pytest.mark.parametrize(
    ("text", "status", "kind"),
    [
        ("API Error: Request rejected (429) · mock rate limited", None, C.RATE_LIMIT),
        ("exceeded retry limit, last status: 429 Too Many Requests", None, C.RATE_LIMIT),
        ("RESOURCE_EXHAUSTED: quota", None, C.RATE_LIMIT),
        ("Invalid API key · Fix external API key", None, C.AUTH),
        ("anything", 401, C.AUTH),
        ("Your credit balance is too low", None, C.BILLING),
        ("insufficient_quota: You exceeded your current quota", None, C.BILLING),
        ("model 'gpt-9' not found", None, C.MODEL_UNAVAILABLE),
        ("Unable to connect to API (ConnectionRefused)", None, C.NETWORK),
        ("read ECONNRESET", None, C.NETWORK),
        ("Reached max turns (1)", None, C.MAX_TURNS),
        (
            "Claude requested permissions to write to x, but you haven't granted it",
            None,
            C.PERMISSION_DENIED,
        ),
        ("something odd happened", None, C.WORKER_ERROR),
        ("API Error: 500 internal", 500, C.WORKER_ERROR),
    ],
)
def test_kinds(text: str, status: int | None, kind: C) -> None:
    assert classify(text, status=status).kind == kind


def test_rate_limit_times() -> None:
    text = "rate limited; limit resets at 2026-11-29T12:00:00Z (1795953600)"
    assert resets_at(text) == 1795953600.0
    assert resets_at("limit resets at 2026-11-29T12:00:00Z") == 1795953600.0
    assert retry_after("Retry-After: 30") == 30.0
    assert retry_after("please try again in 2 minutes") == 120.0
    got = classify("429 too many requests, retry after 5", status=None)
    assert got.kind == C.RATE_LIMIT and got.retry_after == 5.0
    assert got.resets_at is not None and got.resets_at > 0
    assert classify("auth failed").retry_after is None


@pytest.mark.parametrize(
    "text",
    [
        "cannot open /tmp/run-429/too_many_requests/x.json",
        "ENOENT: C:\\Users\\me\\rate-limit\\a.txt",
        "see http://127.0.0.1:8080/v1/429/auth for details",
    ],
)
def test_paths_and_urls_are_never_read_as_error_words(text: str) -> None:
    assert classify(text).kind == Completion.WORKER_ERROR


def test_a_status_decides_before_the_text() -> None:
    assert classify("rate limited, overloaded", status=401).kind == Completion.AUTH
    assert structured_status('noise\n{"error": {"code": 429, "message": "x"}}') == 429
    assert structured_status("no json here") is None
