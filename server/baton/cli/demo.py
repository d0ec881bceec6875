"""``baton demo``: a delegation end to end in a throwaway repository, in a few seconds."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from baton.cli.render import Output, follow, task_json
from baton.config.profiles import Profile, default_profiles
from baton.core.lifecycle import TaskState
from baton.core.task import Target
from baton.runtime import DelegateRequest, Supervisor

APP = """\
def greet(name):
    return "Hello, " + name


def shout(name):
    return greet(name).upper()


def main():
    print(greet("world"))
    print(shout("world"))
"""

UTIL = """\
def clamp(x, lo, hi):
    if x < lo:
        return lo
    if x > hi:
        return hi
    return x


def mean(xs):
    return sum(xs) / len(xs)
"""

SCRIPT = {
    "steps": [
        {
            "say": "Reading app.py and util.py to see how greet and mean are used. ",
            "chunks": 4,
            "delay": 0.08,
        },
        {"read": "app.py"},
        {
            "edit": "app.py",
            "old": 'def greet(name):\n    return "Hello, " + name\n',
            "new": 'def greet(name: str) -> str:\n    """Greet someone by name."""\n'
            '    return f"Hello, {name}"\n',
        },
        {"sleep": 0.2},
        {"edit": "app.py", "old": "def shout(name):\n", "new": "def shout(name: str) -> str:\n"},
        {"edit": "app.py", "old": "def main():\n", "new": "def main() -> None:\n"},
        {"read": "util.py"},
        {
            "edit": "util.py",
            "old": "def clamp(x, lo, hi):\n    if x < lo:\n        return lo\n"
            "    if x > hi:\n        return hi\n    return x\n",
            "new": "def clamp(x, lo, hi):\n    return max(lo, min(x, hi))\n",
        },
        {"sleep": 0.2},
        {
            "edit": "util.py",
            "old": "    return sum(xs) / len(xs)\n",
            "new": '    if not xs:\n        raise ValueError("mean of an empty list")\n'
            "    return sum(xs) / len(xs)\n",
        },
        {"usage": {"input": 1200, "output": 340}},
        {
            "say": "Added type hints and a docstring to app.py; simplified clamp and made mean "
            "refuse an empty list.",
            "chunks": 3,
            "delay": 0.05,
        },
    ],
}


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=Baton demo", "-c", "user.email=demo@localhost", *args],
        cwd=cwd,
        check=True,
        capture_output=True,
        text=True,
    ).stdout


async def run_demo(out: Output, *, worker: str | None, keep: bool) -> int:
    started = time.monotonic()
    base = Path(tempfile.mkdtemp(prefix="baton-demo-"))
    repo, home = base / "project", base / "state"
    repo.mkdir()
    (repo / "app.py").write_text(APP)
    (repo / "util.py").write_text(UTIL)
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", ".")
    _git(repo, "commit", "-q", "-m", "demo project")
    script = base / "fake-script.json"
    script.write_text(json.dumps(SCRIPT))
    profiles = default_profiles()
    profiles["fake"] = Profile(
        name="fake",
        provider="fake",
        concurrency=4,
        label="fake agent (demo script)",
        options={"script": str(script)},
    )
    out.info(f"[bold]Baton demo[/bold] — a throwaway repository in {repo}")
    sup = Supervisor(home, profiles=profiles, adopt=False)
    await sup.start()
    try:
        task = await sup.delegate(
            DelegateRequest(
                instruction="Add type hints to app.py and tidy util.py",
                root=str(repo),
                targets=[Target("app.py", 1, 11)],
                worker=worker,
            )
        )
        out.info(
            f"delegated: task [bold]{task.id}[/bold] (id returned at once; the agent runs "
            "in its own worktree)\n"
        )
        task = await follow(sup, task.id, out, outcome=not out.json_mode)
        if task.state != TaskState.REVIEW:
            out.error(f"the task ended {task.state}: {task.message}")
            return 1
        files, _ = await sup.diff(task.id)
        if not out.json_mode:
            out.info("")
            out.diff(task.id, str(task.state), files, True)
        # Accept the app.py changes and the first util.py hunk; reject the rest.
        take = [h.id for f in files if f.path == "app.py" for h in f.hunks]
        util = [h.id for f in files if f.path == "util.py" for h in f.hunks]
        take += util[:1]
        out.info(f"\naccepting {len(take)} hunk(s): {' '.join(take)}")
        result = await sup.accept(task.id, take)
        rejected = await sup.reject(task.id)
        out.info(f"rejected {len(rejected)} hunk(s): {' '.join(rejected)}")
        task = await sup.get(task.id)
        if not out.json_mode:
            out.info(
                f"\ntask {task.id} is [bold]{task.state}[/bold]; your repository now differs "
                "from its last commit by:\n"
            )
            out.console.print(_git(repo, "diff", "--stat").rstrip())
            out.console.print(_git(repo, "diff").rstrip(), markup=False, highlight=False)
        else:
            out.result(
                {
                    "task": task_json(task),
                    "applied": result.applied,
                    "rejected": rejected,
                    "repo": str(repo),
                },
                "",
            )
        out.info(f"\n[dim]done in {time.monotonic() - started:.1f} s[/dim]")
        return 0 if task.state == TaskState.APPLIED else 1
    finally:
        await sup.close()
        if keep:
            out.info(f"kept {base} (BATON_HOME={home})")
        else:
            shutil.rmtree(base, ignore_errors=True)
