"""ACP wire shapes (as the four agents send them, see notes/acp-transport.md) → Baton's events."""

from __future__ import annotations

from baton.acp.permission_requests import option_for_decision, permission_event, pick_option
from baton.acp.tool_calls import preview
from baton.acp.translate import TurnTranslator, is_empty_turn
from baton.core.events import EventType, describe
from baton.core.lifecycle import Completion

ROOT = "/w/repo"
CLAUDE_OPTIONS = [
    {"optionId": "allow_always", "name": "Always Allow", "kind": "allow_always"},
    {"optionId": "allow", "name": "Allow", "kind": "allow_once"},
    {"optionId": "reject", "name": "Reject", "kind": "reject_once"},
]
CODEX_OPTIONS = [
    {"optionId": "approved", "name": "Yes, proceed", "kind": "allow_once"},
    {"optionId": "abort", "name": "No", "kind": "reject_once"},
]


def test_message_chunks_are_text_deltas_and_end_turn_is_final_with_the_whole_text() -> None:
    t = TurnTranslator(ROOT)
    out = []
    for word in ("Wrote ", "hello.txt", "."):
        out += t.update(
            {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": word}}
        )
    assert [(e.type, e.data["text"]) for e in out] == [
        (EventType.TEXT, "Wrote "),
        (EventType.TEXT, "hello.txt"),
        (EventType.TEXT, "."),
    ]
    end = t.finish({"stopReason": "end_turn", "usage": {"inputTokens": 120, "outputTokens": 7}})
    assert [e.type for e in end] == [EventType.USAGE, EventType.FINAL]
    assert end[0].data["input"] == 120 and end[0].data["output"] == 7
    assert end[1].data == {"text": "Wrote hello.txt."}


def test_claude_tool_call_then_diff_update_then_completion() -> None:
    t = TurnTranslator(ROOT)
    start = t.update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "c1",
            "title": "Write",
            "kind": "edit",
            "status": "pending",
            "rawInput": {},
            "_meta": {"claudeCode": {"toolName": "Write"}},
        }
    )
    assert start[0].type == EventType.TOOL and start[0].data["name"] == "Write"
    assert start[0].data["files"] == []
    diff = t.update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "locations": [{"path": f"{ROOT}/hello.txt"}],
            "content": [
                {"type": "diff", "path": f"{ROOT}/hello.txt", "oldText": None, "newText": "hi\n"}
            ],
        }
    )
    assert diff[0].data["files"] == ["hello.txt"] and diff[0].data["update"] is True
    assert diff[0].data["diffs"] == [{"path": "hello.txt", "old": "", "new": "hi\n"}]
    assert describe(diff[0]) == "editing hello.txt"
    done = t.update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "c1",
            "status": "completed",
            "rawOutput": "File created",
        }
    )
    assert [(e.type, e.data["ok"], e.data["output"]) for e in done] == [
        (EventType.TOOL_RESULT, True, "File created")
    ]
    # A repeated completion is not a second result.
    assert (
        t.update({"sessionUpdate": "tool_call_update", "toolCallId": "c1", "status": "completed"})
        == []
    )


def test_codex_command_tool_failed_result_keeps_its_output() -> None:
    t = TurnTranslator(ROOT)
    t.update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "x",
            "title": "touch ran.txt",
            "kind": "execute",
            "status": "in_progress",
            "rawInput": {"command": ["/bin/bash", "-lc", "touch ran.txt"], "cwd": ROOT},
            "locations": [{"path": ROOT}],
        }
    )
    out = t.update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "x",
            "status": "failed",
            "rawOutput": {"stdout": "", "aggregated_output": "denied", "exit_code": 1},
        }
    )
    assert out[0].data == {"name": "shell", "ok": False, "output": "denied", "id": "x"}


def test_plan_updates_feed_progress_as_done_of_total_and_current_step() -> None:
    t = TurnTranslator(ROOT)
    (plan,) = t.update(
        {
            "sessionUpdate": "plan",
            "entries": [
                {"content": "read the code", "priority": "high", "status": "completed"},
                {"content": "write the fix", "priority": "high", "status": "completed"},
                {"content": "write tests", "priority": "medium", "status": "in_progress"},
                {"content": "run them", "priority": "medium", "status": "pending"},
                {"content": "summarize", "priority": "low", "status": "pending"},
            ],
        }
    )
    assert plan.type == EventType.PLAN
    assert plan.data["entries"][2] == {
        "text": "write tests",
        "status": "in_progress",
        "priority": "medium",
    }
    assert describe(plan) == "2/5: write tests"


def test_usage_update_without_used_and_with_cost() -> None:
    t = TurnTranslator(ROOT)
    (claude,) = t.update(
        {"sessionUpdate": "usage_update", "used": None, "size": 200000, "cost": {"amount": 0.02}}
    )
    assert claude.data["cost"] == 0.02 and claude.data["used"] is None
    (codex,) = t.update({"sessionUpdate": "usage_update", "used": 9682, "size": 258400})
    assert codex.data["cost"] is None and codex.data["used"] == 9682
    assert t.update({"sessionUpdate": "available_commands_update", "availableCommands": []}) == []


def test_stop_reasons_other_than_end_turn_are_errors_with_their_completion() -> None:
    for stop, kind in (
        ("cancelled", Completion.CANCELLED),
        ("max_tokens", Completion.MAX_TURNS),
        ("max_turn_requests", Completion.MAX_TURNS),
        ("refusal", Completion.WORKER_ERROR),
    ):
        (err,) = TurnTranslator(ROOT).finish({"stopReason": stop})
        assert err.type == EventType.ERROR and err.data["kind"] == str(kind), stop


def test_gemini_cut_stream_is_flagged_truncated_and_usage_read_from_meta() -> None:
    cut = {
        "stopReason": "end_turn",
        "_meta": {"quota": {"token_count": {"input_tokens": 0, "output_tokens": 0}}},
    }
    t = TurnTranslator(ROOT)
    t.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "part"}})
    usage, log, final = t.finish(cut, flag_zero_usage=True)
    assert usage.type == EventType.USAGE and log.type == EventType.LOG
    assert final.data == {"text": "part", "truncated": True}
    fine = {
        "stopReason": "end_turn",
        "_meta": {"quota": {"token_count": {"input_tokens": 25165, "output_tokens": 15}}},
    }
    out = TurnTranslator(ROOT).finish(fine, flag_zero_usage=True)
    assert out[0].data["input"] == 25165 and "truncated" not in out[-1].data


def test_prompt_errors_are_classified_from_code_message_and_data() -> None:
    t = TurnTranslator(ROOT)
    (gemini,) = t.failure(429, "Resource exhausted (mock)")
    assert gemini.data["kind"] == "rate_limit"
    (gemini_auth,) = t.failure(401, '{"error": {"message": "API key not valid"}}')
    assert gemini_auth.data["kind"] == "auth"
    (cut,) = t.failure(500, "terminated")  # Gemini, after its retries of a cut stream
    assert cut.data["kind"] == "network"
    (claude,) = t.failure(
        -32603, "Internal error: API Error: Unable to connect to API (UND_ERR_SOCKET)"
    )
    assert claude.data["kind"] == "network"
    (codex,) = t.failure(
        -32603,
        "Internal error",
        {"message": "exceeded retry limit, last status: 429 Too Many Requests"},
    )
    assert codex.data["kind"] == "rate_limit" and "429" in codex.data["message"]


def test_an_empty_end_turn_is_claudes_stale_reply_but_a_real_one_is_not() -> None:
    stale = {"stopReason": "end_turn", "usage": {"inputTokens": 0, "outputTokens": 0}}
    assert is_empty_turn(stale, TurnTranslator(ROOT))
    t = TurnTranslator(ROOT)
    t.update({"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "x"}})
    assert not is_empty_turn(stale, t)
    assert not is_empty_turn({"stopReason": "cancelled"}, TurnTranslator(ROOT))


def test_the_repeat_guard_sees_a_stream_resent_over_and_over() -> None:
    t = TurnTranslator(ROOT, guard_repeats=True)
    partial = "Here is the partial answer before the cut, "
    for _ in range(3):
        for word in partial.split(" "):
            t.update(
                {
                    "sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": word + " "},
                }
            )
    assert t.looping
    (err,) = t.finish({"stopReason": "end_turn"})
    assert err.data["kind"] == "network"
    opencode = TurnTranslator(ROOT, guard_repeats=True)  # as OpenCode re-sends a cut stream
    for _ in range(3):
        opencode.update(
            {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": "partial answer"},
            }
        )
    assert opencode.looping
    calm = TurnTranslator(ROOT, guard_repeats=True)
    calm.update(
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": partial * 1}}
    )
    assert not calm.looping


def test_permission_event_previews_a_command_or_a_diff() -> None:
    codex_call = {
        "toolCallId": "c",
        "kind": "execute",
        "title": "touch ran.txt",
        "rawInput": {"command": ["/bin/bash", "-lc", "touch ran.txt"], "cwd": ROOT},
    }
    ev = permission_event("p1", codex_call, CODEX_OPTIONS, ROOT)
    assert ev.type == EventType.PERMISSION
    assert ev.data["preview"] == "touch ran.txt" and ev.data["command"] == "touch ran.txt"
    assert ev.data["options"] == [
        {"id": "approved", "name": "Yes, proceed", "kind": "allow_once"},
        {"id": "abort", "name": "No", "kind": "reject_once"},
    ]
    assert ev.data["status"] == "pending" and describe(ev).startswith("asks permission")
    gemini_call = {
        "toolCallId": "w",
        "kind": "edit",
        "title": "Writing to hello.txt",
        "content": [
            {"type": "diff", "path": f"{ROOT}/hello.txt", "oldText": "a\n", "newText": "b\n"}
        ],
    }
    diff = preview(gemini_call, ROOT)
    assert "--- a/hello.txt" in diff and "-a\n+b\n" in diff
    data = permission_event("p2", gemini_call, CLAUDE_OPTIONS, ROOT).data
    assert data["files"] == ["hello.txt"] and data["command"] is None


def test_options_are_picked_by_id_kind_or_word_never_by_position() -> None:
    assert pick_option(CLAUDE_OPTIONS, "allow") == {
        "id": "allow",
        "name": "Allow",
        "kind": "allow_once",
    }
    assert pick_option(CODEX_OPTIONS, "allow")["id"] == "approved"  # type: ignore[index]
    assert pick_option(CODEX_OPTIONS, "reject")["id"] == "abort"  # type: ignore[index]
    assert pick_option(CLAUDE_OPTIONS, "always")["id"] == "allow_always"  # type: ignore[index]
    assert pick_option(CODEX_OPTIONS, "always") is None  # Codex offers no "always"
    assert pick_option(CODEX_OPTIONS, "reject_once")["id"] == "abort"  # type: ignore[index]
    assert pick_option(CODEX_OPTIONS, "maybe") is None
    assert option_for_decision(CLAUDE_OPTIONS, "allow") == "allow"  # once, not always
    assert option_for_decision(CODEX_OPTIONS, "deny") == "abort"
    assert option_for_decision(CODEX_OPTIONS, "ask") is None


def test_opencode_todo_tool_call_becomes_a_plan() -> None:
    t = TurnTranslator(ROOT)
    out = t.update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "t1",
            "kind": "other",
            "status": "in_progress",
            "title": "todowrite",
            "rawInput": {
                "todos": [
                    {"id": "1", "content": "write code", "status": "completed", "priority": "high"},
                    {"id": "2", "content": "write tests", "status": "in_progress"},
                ]
            },
        }
    )
    plans = [e for e in out if e.type == EventType.PLAN]
    assert len(plans) == 1 and describe(plans[0]) == "1/2: write tests"
    odd = t.update({"sessionUpdate": "tool_call", "toolCallId": "t2", "rawInput": {"todos": "x"}})
    assert [e.type for e in odd] == [EventType.TOOL]
