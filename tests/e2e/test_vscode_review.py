"""Reviewing a long hunk in real VS Code (code-server, headless Chromium, the built .vsix and
the real ``baton lsp`` with the fake agent; the harness of vscode_support). The agent replaces
one line of app.py with thirty; its ghost says how many lines follow instead of squashing
them onto one, and "Show 30 proposed lines" peeks at them as real lines with the file's
syntax colours, under the line they replace, while the document stays clean and the file on
disk unchanged, with auto save on (code-server's afterDelay) or off. The peek has the hunk's
Accept / Reject lenses. In the side-by-side diff, a right-click on a proposed line accepts its
hunk and the hover over another rejects it, and the diff editor's title bar keeps a whole
file (notes.txt). Last, one file at a time: Keep File on a file of the task in the task view
(extra.txt, never opened), and Undo File in the editor's title bar (more.py). The clicking is
clients/vscode/test/e2e/review.mjs; screenshots go to artifacts/vscode-review/ (auto save
off: artifacts/vscode-review-autosave-off/).
"""

from __future__ import annotations

import pytest

from tests.conftest import git
from tests.e2e.vscode_support.workbench import APP, ROOT, VSCode

pytestmark = pytest.mark.slow

ARTIFACTS = ROOT / "artifacts" / "vscode-review"
INSTRUCTION = "Spell out the first function and make the second ten times more"
TERMS = [f"    total += {i} * {i}\n" for i in range(1, 28)]
LONG = ['    """The sum of the first squares, one term a line."""\n', "    total = 0\n"]
LONG += [*TERMS, "    return total\n"]
EXTRA = "alpha\nbeta\n"
MORE = "x = 1\n\n\ny = 2\n"
SCRIPT = {
    "steps": [
        {"edit": "app.py", "old": "    return 1\n", "new": "".join(LONG)},
        {"edit": "app.py", "old": "    return 2\n", "new": "    return 20\n"},
        {"edit": "notes.txt", "old": "two\n", "new": "TWO\n"},
        {"edit": "notes.txt", "old": "four\n", "new": "FOUR\n"},
        {"edit": "extra.txt", "old": "alpha\n", "new": "ALPHA\n"},
        {"edit": "more.py", "old": "x = 1\n", "new": "x = 10\n"},
        {"edit": "more.py", "old": "y = 2\n", "new": "y = 20\n"},
    ],
    "summary": "The first function spelt out, the second ten times more.",
}


@pytest.mark.parametrize("auto_save", ["afterDelay", "off"])
def test_a_long_hunk_shows_its_proposed_lines_as_lines(auto_save: str, vscode: VSCode) -> None:
    artifacts = (
        ARTIFACTS
        if auto_save == "afterDelay"
        else ARTIFACTS.with_name("vscode-review-autosave-off")
    )
    repo = vscode.repo
    assert len(LONG) == 30
    (repo / "extra.txt").write_text(EXTRA)
    (repo / "more.py").write_text(MORE)
    git(repo, "add", "extra.txt", "more.py")
    git(repo, "commit", "-q", "-m", "two more files")
    settings = vscode.settings(SCRIPT, **{"files.autoSave": auto_save})
    run = vscode.run(
        "review.mjs", artifacts, 300, settings, instruction=INSTRUCTION, BATON_E2E_REPO=str(repo)
    )
    by = run.by
    review = by["ready-for-review"]
    # the long hunk's ghost names its first line and counts the rest; nothing is squashed
    assert review["ghosts"] == [
        '→ """The sum of the first squares, one term a line."""   + 29 more lines',
        "→ return 20",
    ], review["ghosts"]
    assert "Show 30 proposed lines" in review["lenses"], review["lenses"]
    assert review["lenses"].count("Show 30 proposed lines") == 1  # not on the one-line hunk
    peek = by["peek-opened"]["peek"]
    shown = [line.strip() for line in peek["lines"]]
    # real lines, one per proposed line, in order, under the old line
    first = shown.index('"""The sum of the first squares, one term a line."""')
    assert shown[first + 1 : first + 4] == ["total = 0", "total += 1 * 1", "total += 2 * 2"]
    assert len(peek["colours"]) >= 3, peek  # syntax colours: string, keyword, number, text
    assert peek["highlighted"] >= 1, peek  # the proposed lines are marked in their context
    scrolled = [line.strip() for line in by["peek-scrolled"]["peek"]["lines"]]
    assert "return total" in scrolled and "total += 27 * 27" in scrolled
    # never written before an accept: the tab is clean, the disk unchanged, auto save on
    opened = by["peek-opened"]
    assert not any(t["dirty"] for t in opened["tabs"]), opened["tabs"]
    assert opened["disk"] == APP == opened["before"]
    assert "total = 0" not in opened["text"]  # the document itself holds the old line
    closed = by["peek-closed"]
    assert closed["disk"] == APP and not any(t["dirty"] for t in closed["tabs"])
    # inside the peek: the hunk's own Accept / Reject
    assert by["peek-opened"]["peekLenses"][:2] == [
        f"Baton ▸ {INSTRUCTION}: Accept file (2)",
        "Reject file",
    ]
    assert "Accept" in by["peek-opened"]["peekLenses"]
    # the diff: Keep / Undo File in its title bar; per hunk from the proposal side
    opened_diff = by["diff-opened"]
    assert any(a.startswith("Keep File") for a in opened_diff["actions"]), opened_diff["actions"]
    assert any(a.startswith("Undo File") for a in opened_diff["actions"]), opened_diff["actions"]
    assert opened_diff["leftGhosts"] == []  # no ghost over the file's own side
    accepted = by["diff-hunk-accepted"]
    assert "Accept Hunk" in accepted["menu"] and "Reject Hunk" in accepted["menu"], accepted
    assert "total = 0" in accepted["left"] and "return 20" not in accepted["left"]
    # (the hover's code block may come back with its spaces collapsed, as the page lays it out)
    hover = " ".join(by["diff-hover"]["hover"].split())
    assert "- return 2" in hover and "+ return 20" in hover, by["diff-hover"]
    assert by["diff-hover"]["leftGhosts"] == []  # still none after the accept
    rejected = by["diff-hunk-rejected"]
    assert "return 2" in rejected["left"] and "return 20" not in rejected["left"]
    assert rejected["left"] == rejected["right"]  # nothing left to propose in app.py
    # accepted into the editor only: auto save writes it (Baton never writes the file)
    assert by["diff-closed"]["ghosts"] == [] and by["diff-closed"]["lenses"] == []
    assert "TWO" in by["notes-kept"]["left"] and "FOUR" in by["notes-kept"]["left"]
    assert not any(a.startswith("Undo File") for a in by["notes-kept"]["actions"])
    # one file at a time, from the task view and the editor's title bar
    listed = by["task-view-files"]["rows"]
    assert any("extra.txt" in r for r in listed) and any("more.py" in r for r in listed), listed
    assert not any("app.py" in r or "notes.txt" in r for r in listed), listed  # decided
    kept = by["task-view-kept"]
    assert any(a.startswith("Keep File") for a in kept["actions"]), kept["actions"]
    assert any(a.startswith("Undo File") for a in kept["actions"]), kept["actions"]
    assert not any(a.startswith("Accept All") for a in kept["actions"]), kept["actions"]
    assert any("more.py" in r for r in kept["rows"]), kept["rows"]
    assert by["more-open"]["ghosts"] == ["→ x = 10", "→ y = 20"]
    assert any(a.startswith("Undo File") for a in by["more-open"]["actions"])
    undone = by["more-undone"]
    assert undone["text"].split() == MORE.split() and undone["lenses"] == []
    assert "idle" in undone["status"]  # every hunk decided: the task is done
    assert (repo / "more.py").read_text() == MORE
    # what was accepted reached the disk through the editor's auto save, not through Baton
    on_disk = (repo / "app.py").read_text()
    assert on_disk == APP or ("    total = 0\n" in on_disk and "    return 2\n" in on_disk)
    if auto_save == "off":  # nothing saved the open document: the disk has the old text
        assert on_disk == APP
    # A file not open in an editor takes the accept as VS Code's edit of a closed file, which
    # VS Code saves at once (files.refactoring.autoSave): kept, so on disk, auto save or not.
    assert (repo / "extra.txt").read_text() == "ALPHA\nbeta\n"
    run.assert_screenshots()
