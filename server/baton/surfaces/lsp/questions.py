"""``baton.ask``: a read-only question about the project, and its code action "Ask Baton…".

The question goes to a cheap worker (routing kind ``ask``, the project's ``[routing.ask]``)
as an ``explain`` task that runs read-only: it ends ``answered`` and its checkout is
dropped, so nothing is offered for review. The command answers at once with the task; the
answer is shown as any answered task this editor delegated is
(:meth:`baton.surfaces.lsp.notify.Notifier.show_answer`: a markdown document beside the
code, or a message). The code action carries no question: rich clients ask for it in their
own input box, plain clients get ready-made questions through ``window/showMessageRequest``.
"""

from __future__ import annotations

from typing import Any

from lsprotocol import types

from baton.core.task import Target
from baton.runtime import DelegateRequest, TaskError
from baton.surfaces.lsp.documents import relative_to, uri_to_path
from baton.surfaces.lsp.payloads import Args, failed, invalid, last_line
from baton.surfaces.lsp.progress import Progress
from baton.surfaces.lsp.server import BatonServer

ASK = "baton.ask"
#: The code action's kind and title.
ASK_KIND = "refactor.baton.ask"
ASK_TITLE = "Ask Baton…"
#: Questions offered by ``window/showMessageRequest`` when the command carries none.
READY_QUESTIONS: tuple[str, ...] = (
    "What does this code do, and why is it written this way?",
    "Where is this used, and what depends on it?",
    "What could go wrong here?",
)


def code_action(uri: str, rng: types.Range, range_json: dict[str, Any]) -> types.CodeAction:
    """ "Ask Baton…" on a selection (its ``baton.ask`` carries no question)."""
    args = {"uri": uri, "range": range_json}
    return types.CodeAction(
        title=ASK_TITLE,
        kind=ASK_KIND,
        command=types.Command(title=ASK_TITLE, command=ASK, arguments=[args]),
    )


async def ask(ls: BatonServer, args: Args) -> Any:
    """``{uri, range?, question?, worker?, model?}`` → ``{taskId, state, title}`` (or
    ``{taskId: null, cancelled: true}`` when the user picked no question)."""
    uri = args.text("uri")
    rng = args.range("range")
    question = args.optional_text("question")
    path = uri_to_path(uri)
    if path is None or not path.is_absolute():
        raise invalid(f"baton.ask: uri must be a file: URI, got {uri!r}")
    root = ls.root_for(path)
    rel = relative_to(path, root)
    if rel is None:
        raise invalid(f"baton.ask: {path} is outside {root}")
    target = Target(rel) if rng is None else Target(rel, rng.start.line + 1, last_line(rng) + 1)
    if question is None:
        picked = await ls.window_show_message_request_async(
            types.ShowMessageRequestParams(
                type=types.MessageType.Info,
                message=f"Baton: what do you want to know about {target.label()}?",
                actions=[types.MessageActionItem(title=q) for q in READY_QUESTIONS],
            )
        )
        if picked is None:
            return {"taskId": None, "cancelled": True}
        question = picked.title
    sup = await ls.broker()
    request = DelegateRequest(
        instruction=question,
        root=str(root),
        action="explain",
        kind="ask",
        targets=[target],
        overlays=ls.overlays(root),
        worker=args.optional_text("worker"),
        model=args.optional_text("model"),
        options={"read_only": True, "surface": "lsp"},
    )
    try:
        task = await sup.delegate(request)
    except (TaskError, ValueError) as exc:
        raise failed(exc) from None
    ls.roots.add(task.root)
    ls.get_feature(Progress).follow(task.id, task.title, task.state)
    return {"taskId": task.id, "state": str(task.state), "title": task.title}
