"""The built-in keybindings of a VS Code workbench, read from its bundled JavaScript, and the
extension's own ones encoded the same way, so a test can say which of ours shadow a built-in.

VS Code registers a built-in keybinding as a number: ``KeyMod`` bits (CtrlCmd 2048, Shift
1024, Alt 512, WinCtrl 256) or'ed with a ``KeyCode``; a chord is ``first | second << 16``.
On macOS CtrlCmd is Cmd and WinCtrl is Ctrl; elsewhere CtrlCmd is Ctrl and WinCtrl is Meta.
The scan is conservative: a number registered for any platform counts for every platform.
"""

from __future__ import annotations

import re
from pathlib import Path

_KEYCODES: dict[str, int] = {c: 31 + i for i, c in enumerate("abcdefghijklmnopqrstuvwxyz")}
_KEYCODES.update({str(d): 21 + d for d in range(10)})
_KEYCODES.update(
    {
        "enter": 3, "escape": 9, "space": 10, "pageup": 11, "pagedown": 12, "end": 13,
        "home": 14, "left": 15, "up": 16, "right": 17, "down": 18, "delete": 20,
        ";": 85, "=": 86, ",": 87, "-": 88, ".": 89, "/": 90, "`": 91, "[": 92, "\\": 93,
        "]": 94, "'": 95,
    }
)  # fmt: skip


def encode(key: str, *, mac: bool) -> int:
    """``ctrl+alt+d`` (or a chord ``ctrl+k ctrl+d``) as VS Code's number for that platform."""
    out = 0
    for shift, part in enumerate(key.split(" ")):
        n = 0
        for mod in part.split("+"):
            if mod == "ctrl":
                n |= 256 if mac else 2048
            elif mod == "cmd":
                n |= 2048
            elif mod == "meta":
                n |= 2048 if mac else 256
            elif mod == "shift":
                n |= 1024
            elif mod == "alt":
                n |= 512
            else:
                n |= _KEYCODES[mod]
        out |= n << (16 * shift)
    return out


def builtin_keys(workbench_js: Path) -> set[int]:
    """Every number registered as a primary or secondary keybinding in the bundle."""
    src = workbench_js.read_text(errors="replace")
    found = {int(n) for n in re.findall(r"primary:(\d+)", src)}
    for group in re.findall(r"secondary:\[([\d,]+)\]", src):
        found.update(int(n) for n in group.split(","))
    return found


def shadowing(manifest: dict[str, object], builtins: set[int]) -> list[str]:
    """The extension's keybindings (per platform) that a built-in already uses."""
    contributes = manifest.get("contributes")
    assert isinstance(contributes, dict)
    bad = []
    for kb in contributes.get("keybindings", []):
        for field, mac in (("key", False), ("linux", False), ("win", False), ("mac", True)):
            key = kb.get(field)
            if key and encode(key, mac=mac) in builtins:
                bad.append(f"{kb['command']}: {field} {key}")
    return bad
