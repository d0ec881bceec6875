"""The CLI's commands that send the broker serving the folder one request and print its
answer (``delegate``, ``accept``, ``reject`` …).

Each handler gets the parsed arguments and the output, connects to the broker for the folder
(starting one on demand), and returns the exit code. A move refused because another broker
supervises the task is sent again to that broker. They run without an event loop, on the
blocking client (:mod:`baton.surfaces.ws.blocking`: no asyncio, no websockets library), and
import none of the domain objects: that is what keeps ``baton delegate`` near a bare round
trip. The commands that follow a task's events or print tasks and diffs are in
:mod:`baton.cli.watching`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from baton.cli.render import Output
from baton.errors import InvalidInput
from baton.surfaces.ws import protocol
from baton.surfaces.ws.blocking import BlockingClient, connect_for
from baton.surfaces.ws.errors import BrokerError
from baton.surfaces.ws.locate import broker_by_pid

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


class UsageError(InvalidInput):
    """Bad input from the user: exit code 2 with a clear message."""


#: Broker error codes that mean the user asked for something wrong (exit 2).
USAGE_CODES = frozenset(
    {
        protocol.INVALID_PARAMS,
        protocol.UNKNOWN_TASK,
        protocol.WRONG_STATE,
        protocol.METHOD_NOT_FOUND,
        protocol.TOO_LARGE,
    }
)

#: Requests that carry the user's text (a brief, a reply), and what to do when it is too long.
_LONG_TEXT = frozenset({"delegate", "graph", "reply", "steer"})
_SHORTEN = "shorten it, or save the material in a file of the workspace and name that file"


def folder_of(args: argparse.Namespace) -> Path:
    cwd = getattr(args, "cwd", None)
    return Path(cwd).resolve() if cwd else Path.cwd()


#: The commands that may go to any broker of this state home (they name a task by id).
_BY_FOLDER = frozenset({"delegate", "run", "memory", "graph", "bench"})


def any_broker(args: argparse.Namespace) -> bool:
    """Whether a command may use any broker of this state home: one about a task by id."""
    return args.command not in _BY_FOLDER


@contextmanager
def broker(args: argparse.Namespace) -> Iterator[BlockingClient]:
    client = connect_for(folder_of(args), any_broker=any_broker(args))
    try:
        yield client
    finally:
        client.close()


def redirected(exc: BrokerError, method: str) -> int | None:
    """The pid of the broker to ask instead when ``exc`` says another supervises the task;
    a too-long text gets the advice on what to do. None: ``exc`` is the answer."""
    if exc.code == protocol.TOO_LARGE and method in _LONG_TEXT:
        exc.message = f"{exc.message}: {_SHORTEN}"
        return None
    pid = (exc.data or {}).get("brokerPid") if isinstance(exc.data, dict) else None
    return int(pid) if isinstance(pid, int) else None


def call(c: BlockingClient, method: str, **params: Any) -> Any:
    """Call the broker; a task supervised by another broker is asked of that one."""
    try:
        return c.call(method, **params)
    except BrokerError as exc:
        pid = redirected(exc, method)
        other = broker_by_pid(pid) if pid is not None else None
        if other is None:
            raise
    with BlockingClient.connect(other) as c2:
        return c2.call(method, **params)


def read_text(value: str) -> str:
    return sys.stdin.read() if value == "-" else value


# ------------------------------------------------------------------------------ commands


def _targets(args: argparse.Namespace, root: Path) -> list[dict[str, Any]]:
    if not args.file:
        if args.lines:
            raise UsageError("--lines needs --file")
        return []
    start = end = None
    if args.lines:
        try:
            a, _, b = args.lines.partition("-")
            start, end = int(a), int(b or a)
        except ValueError:
            raise UsageError(f"--lines {args.lines}: expected A-B, e.g. 10-40") from None
        if start < 1 or end < start:
            raise UsageError(f"--lines {args.lines}: expected 1 <= A <= B")
    if not (root / args.file).is_file():
        raise UsageError(f"--file {args.file}: no such file under {root}")
    return [{"path": args.file, "start": start, "end": end}]


def delegate_params(args: argparse.Namespace) -> dict[str, Any]:
    instruction = read_text(args.instruction)
    if not instruction.strip():
        raise UsageError("the instruction is empty")
    root = Path(args.cwd).resolve()
    if not root.is_dir():
        raise UsageError(f"--cwd {args.cwd}: not a folder")
    return {
        "instruction": instruction,
        "cwd": str(root),
        "action": args.action,
        "targets": _targets(args, root) or None,
        "scope": args.scope or None,
        "worker": args.worker,
        "model": args.model,
        "kind": getattr(args, "kind", None),
        "isolation": getattr(args, "isolation", None),
        **caps_params(args),
        "effort": getattr(args, "effort", None),
    }


def caps_params(args: argparse.Namespace) -> dict[str, Any]:
    """``--max-tokens`` … as the ``maxTokens`` … parameters (the ones given)."""
    names = {"max_tokens": "maxTokens", "max_cost": "maxCost", "max_steps": "maxSteps"}
    names["max_seconds"] = "maxSeconds"
    given = {name: getattr(args, attr, None) for attr, name in names.items()}
    return {k: v for k, v in given.items() if v is not None}


def delegate(args: argparse.Namespace, out: Output) -> int:
    """Print the new task's id at once; the work runs in the broker."""
    params = delegate_params(args)
    if args.after:
        params["dependsOn"] = args.after
    if args.compare:
        workers = [w.strip() for w in args.compare.split(",") if w.strip()]
        if len(workers) < 2:
            raise UsageError("--compare needs two or more workers, e.g. --compare a,b")
        params["workers"] = workers
    with broker(args) as c:
        res = call(c, "delegate", **params)
    if "tasks" in res:
        out.result(res, "\n".join(t["id"] for t in res["tasks"]))
    else:
        out.result(res["task"], res["task"]["id"])
    return EXIT_OK


def graph(args: argparse.Namespace, out: Output) -> int:
    """Delegate a small graph in one call; print one "key id" line per node."""
    try:
        nodes = json.loads(
            read_text(args.file) if args.file == "-" else Path(args.file).read_text()
        )
    except (OSError, ValueError) as exc:
        raise UsageError(f"{args.file}: not a readable JSON list of nodes ({exc})") from None
    if not isinstance(nodes, list) or not all(isinstance(n, dict) for n in nodes):
        raise UsageError(f"{args.file}: expected a JSON list of node objects")
    root = str(Path(args.cwd).resolve())
    nodes = [{"cwd": root, **n} for n in nodes]
    with broker(args) as c:
        res = call(c, "graph", nodes=nodes)
    out.result(res, "\n".join(f"{k} {t['id']}" for k, t in res["tasks"].items()))
    return EXIT_OK


def answer(args: argparse.Namespace, out: Output) -> int:
    """Answer an ACP agent's permission request (allow, always, reject, or an option id)."""
    params: dict[str, Any] = {"id": args.id, "option": args.option}
    if args.permission:
        params["permission"] = args.permission
    with broker(args) as c:
        res = (call(c, "answer", **params))["answered"]
    option = res["option"]
    out.result(
        {"answered": res},
        f"task {res['taskId']}: answered {res['permission']} with {option['name']} "
        f"({option['kind']})",
    )
    return EXIT_OK


def accept(args: argparse.Namespace, out: Output) -> int:
    with broker(args) as c:
        allow = True if args.allow_secret else None
        res = call(c, "accept", id=args.id, hunks=args.hunks or None, allowSecret=allow)
    if out.json_mode:
        out.json_doc(res)
    else:
        out.accepted_json(res)
    return EXIT_OK if not res.get("conflicts") and not res.get("refused") else EXIT_FAILED


def reject(args: argparse.Namespace, out: Output) -> int:
    with broker(args) as c:
        res = call(c, "reject", id=args.id, hunks=args.hunks or None)
    task = res["task"]
    out.result(
        res,
        f"rejected {len(res['rejected'])} hunk(s); task {task['id']} is {task['state']}",
    )
    return EXIT_OK


def reopen(args: argparse.Namespace, out: Output) -> int:
    """Accepted hunks whose old lines the file holds again (reverted by hand) are pending."""
    with broker(args) as c:
        res = call(c, "reopen", id=args.id, hunks=args.hunks)
    task = res["task"]
    text = f"reopened {len(res['reopened'])} hunk(s); task {task['id']} is {task['state']}"
    for kept in res["kept"]:
        text += f"\n  {kept['hunk']} kept: {kept['reason']}"
    out.result(res, text)
    return EXIT_OK if res["reopened"] else EXIT_FAILED


def complete(args: argparse.Namespace, out: Output) -> int:
    """Put a stopped task whose checkout holds changes up for review, with the evidence."""
    evidence = read_text(args.evidence)
    if not evidence.strip():
        raise UsageError("the evidence is empty")
    with broker(args) as c:
        res = call(c, "complete", id=args.id, evidence=evidence)
    task = res["task"]
    out.result(
        res,
        f"task {task['id']} is {task['state']}: {', '.join(res['files'])}; "
        f"next: {', '.join(task['next'])}",
    )
    return EXIT_OK


def archive(args: argparse.Namespace, out: Output) -> int:
    """Archive settled tasks (or, ``--undo``, list them again): all of them or none."""
    with broker(args) as c:
        res = call(c, "archive", ids=args.ids, undo=True if args.undo else None)
    done = res["unarchived" if args.undo else "archived"]
    verb = "unarchived" if args.undo else "archived"
    out.result(res, f"{verb} {len(done)} task(s): {', '.join(done)}")
    return EXIT_OK


def memory(args: argparse.Namespace, out: Output) -> int:
    root = str(folder_of(args))
    params: dict[str, Any] = {"op": args.op, "root": root}
    if args.op == "add":
        params["text"] = read_text(" ".join(args.value))
    elif args.op == "remove":
        try:
            params["id"] = int(args.value[0]) if args.value else None
        except ValueError:
            raise UsageError("memory remove takes the memory's number") from None
    with broker(args) as c:
        res = call(c, "memory", **params)
    human = "\n".join(f"{m['id']:>4}  {m['text']}" for m in res["memory"]) or "no memory"
    out.result(res, human)
    return EXIT_OK


def workers(args: argparse.Namespace, out: Output) -> int:
    with broker(args) as c:
        res = call(c, "workers", root=str(Path(args.cwd).resolve()))
    lines = [
        f"{w['name']:<14} {w['provider']:<9} {w.get('model') or '-':<20} {w.get('label', '')}"
        + ("" if w["enabled"] else "  (disabled)")
        + ("" if w.get("allowed", True) else "  (not allowed here)")
        + (f"  (cannot run: {w['problem']})" if w["enabled"] and w.get("problem") else "")
        + (f"  [{w['source']}]" if w.get("source") in ("user", "project") else "")
        for w in res["workers"]
    ]
    default = res.get("default")
    why = res.get("default_reason") or ""
    lines.append(f"default: {default} ({why})" if default else f"no default worker: {why}")
    out.result(res, "\n".join(lines))
    return EXIT_OK


def health(args: argparse.Namespace, out: Output) -> int:
    with broker(args) as c:
        res = call(c, "health")
    res["url"] = c.info.url
    out.result(res, f"broker pid {res['pid']} on {c.info.url}, serving {', '.join(res['roots'])}")
    return EXIT_OK


def clean(args: argparse.Namespace, out: Output) -> int:
    """Remove what Baton keeps on disk that no task needs (the broker does it: it knows which
    tasks still need theirs), and say what went."""
    with broker(args) as c:
        res = call(c, "clean")
    pool, events = res["pool"], res["events"]
    lines = [
        f"removed {len(res['worktrees'])} checkout(s) and {len(res['refs'])} ref(s) of tasks "
        "settled for good or unknown",
        f"removed {len(res['expired'])} checkout(s) of failed, cancelled or interrupted tasks "
        "past [retention] checkout_days",
        f"pruned {events['removed']} event(s) of {events['tasks']} task(s) past keep_days",
        f"removed {pool['removed']} ready checkout(s) of the warm pool "
        f"({pool['bytes'] / 1e6:.1f} MB)",
    ]
    seeds = res.get("seeds")  # a broker older than the warm indexes has none
    if seeds:
        lines.append(
            f"removed {seeds['removed']} warm index(es) of large repositories "
            f"({seeds['bytes'] / 1e6:.1f} MB)"
        )
    if res["checkouts_left"]:
        lines.append("another broker is running: task checkouts were left alone")
    out.result(res, "\n".join(lines))
    return EXIT_OK


def dashboard(args: argparse.Namespace, out: Output) -> int:
    """A one-time URL of the dashboard, opened in the browser unless told not to."""
    with broker(args) as c:
        res = call(c, "dashboard")
    url = res["url"]
    if args.print_url and not args.json:
        sys.stdout.write(url + "\n")
        return EXIT_OK
    opened = False
    if not (args.print_url or args.no_open):
        import webbrowser

        opened = webbrowser.open(url)
    res["opened"] = opened
    said = "opened in the browser" if opened else "open it in a browser (it works once)"
    out.result(
        res,
        f"dashboard: {url}\n{said}; the page is read-only"
        + ("" if not res.get("actions") else ", with actions on"),
    )
    return EXIT_OK
