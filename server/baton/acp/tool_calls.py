"""ACP tool calls, read from their wire shapes (camelCase JSON, as sent): pure functions.

What a ``tool_call`` / ``tool_call_update`` (and the tool call of a permission request)
says: the shell command it runs (:func:`command_of`), the files it names
(:func:`paths_of`), its diffs (:func:`diffs_of`), a preview for the user
(:func:`preview`: the command, else a unified diff, else its title), the tool's name, its
output, and the plan a todo-list tool carries (:func:`todo_plan`).
"""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from typing import Any

from baton.core.events import Event, EventType

#: How much of a permission request's preview one event keeps.
PREVIEW_CHARS = 4000


def as_dict(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object; an empty one otherwise."""
    return value if isinstance(value, dict) else {}


def clip(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying how many were left out."""
    return text if len(text) <= limit else text[:limit] + f"… ({len(text) - limit} more)"


def relative(path: str, root: str) -> str:
    """``path`` relative to ``root`` when inside it; the path as given otherwise."""
    if not path:
        return path
    full = path if os.path.isabs(path) else os.path.join(root, path)
    rel = os.path.relpath(os.path.normpath(full), os.path.normpath(root))
    return path if rel.startswith("..") else rel


def command_of(raw_input: object) -> str | None:
    """The shell command a tool call's ``rawInput`` carries, as one line, if any."""
    raw = as_dict(raw_input)
    cmd = raw.get("command", raw.get("cmd"))
    if isinstance(cmd, list) and cmd:
        parts = [str(c) for c in cmd]
        if len(parts) >= 3 and os.path.basename(parts[0]) in ("bash", "sh", "zsh"):
            return parts[-1]  # ["/bin/bash", "-lc", "touch x"]
        return " ".join(parts)
    return str(cmd) if isinstance(cmd, str) and cmd else None


def diffs_of(tool_call: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The ``diff`` content items of a tool call: ``{path, oldText, newText}``."""
    out = []
    for item in tool_call.get("content") or []:
        if isinstance(item, dict) and item.get("type") == "diff" and item.get("path"):
            out.append(item)
    return out


def paths_of(tool_call: Mapping[str, Any]) -> list[str]:
    """Every file path a tool call names: locations, diffs and the usual rawInput keys."""
    found: list[str] = []
    kind = tool_call.get("kind")
    if kind != "execute":  # an execute location is its working folder, not a file it touches
        for loc in tool_call.get("locations") or []:
            if isinstance(loc, dict) and loc.get("path"):
                found.append(str(loc["path"]))
    found += [str(d["path"]) for d in diffs_of(tool_call)]
    raw = as_dict(tool_call.get("rawInput"))
    for key in ("file_path", "filePath", "filepath", "path", "absolute_path", "notebook_path"):
        if isinstance(raw.get(key), str) and raw[key]:
            found.append(raw[key])
    changes = raw.get("changes")
    if isinstance(changes, dict):
        found += [str(p) for p in changes]
    return list(dict.fromkeys(found))


def unified(path: str, old: str | None, new: str | None) -> str:
    """A unified diff of one file (``old`` None: a new file)."""
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        (new or "").splitlines(keepends=True),
        fromfile=f"a/{path}" if old is not None else "/dev/null",
        tofile=f"b/{path}",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def preview(tool_call: Mapping[str, Any], root: str) -> str:
    """What the user should see before allowing: the command, else the diff, else the title."""
    command = command_of(tool_call.get("rawInput"))
    if command:
        return clip(command, PREVIEW_CHARS)
    parts = [
        unified(relative(str(d["path"]), root), d.get("oldText"), d.get("newText"))
        for d in diffs_of(tool_call)
    ]
    raw_diff = as_dict(tool_call.get("rawInput")).get("diff")
    if not parts and isinstance(raw_diff, str):
        parts.append(raw_diff)
    if parts:
        return clip("".join(parts), PREVIEW_CHARS)
    for item in tool_call.get("content") or []:
        text = as_dict(as_dict(item).get("content")).get("text")
        if isinstance(text, str) and text.strip():
            return clip(f"{tool_call.get('title') or ''}\n{text}".strip(), PREVIEW_CHARS)
    return str(tool_call.get("title") or tool_call.get("kind") or "a tool call")


def tool_name(tool_call: Mapping[str, Any], known: str = "") -> str:
    """The tool's name: the agent's own (Claude's), else shell or edit by kind, else
    ``known``, the title or the kind."""
    claude = as_dict(as_dict(tool_call.get("_meta")).get("claudeCode")).get("toolName")
    if isinstance(claude, str) and claude:
        return claude
    kind = tool_call.get("kind")
    if kind == "execute":
        return "shell"
    if kind == "edit":
        return "edit"
    return known or str(tool_call.get("title") or kind or "tool")


def todo_plan(tool_call: Mapping[str, Any]) -> list[Event]:
    """A ``plan`` event from a todo-list tool call (OpenCode's ``todowrite`` sends no ``plan``
    update, only the tool call with its ``rawInput.todos``)."""
    todos = as_dict(tool_call.get("rawInput")).get("todos")
    if not isinstance(todos, list) or not todos:
        return []
    entries = []
    for todo in todos:
        if not isinstance(todo, dict):
            return []
        text = todo.get("content") or todo.get("description")
        if not isinstance(text, str):
            return []
        entries.append(
            {
                "text": text,
                "status": str(todo.get("status") or "pending"),
                "priority": str(todo.get("priority") or "medium"),
            }
        )
    return [Event(EventType.PLAN, {"entries": entries})]


def output_of(update: Mapping[str, Any]) -> str:
    """What a tool call printed: its ``rawOutput`` (text, or the usual output keys), else
    the texts of its content."""
    raw = update.get("rawOutput")
    if isinstance(raw, str):
        return raw
    if isinstance(raw, dict):
        for key in ("formatted_output", "aggregated_output", "output", "stdout"):
            if isinstance(raw.get(key), str) and raw[key]:
                return str(raw[key])
    texts = []
    for item in update.get("content") or []:
        text = as_dict(as_dict(item).get("content")).get("text")
        if isinstance(text, str):
            texts.append(text)
    return "\n".join(texts)
