"""A task's question in the editor: the "Reply to <title>" code action and the reply flow.

A task that asks a question (``needs_input``) offers ``Baton: Reply to <title>`` on its
target lines (anywhere in the file for a whole-file target). The action runs ``baton.reply``
with ``{taskId}`` and no text: the server then asks the user itself with
``window/showMessageRequest`` (the question, and ready-made answers to pick), which any LSP
client can show. A free-text answer is ``baton.reply`` with ``{taskId, text}``; rich clients
route the action to their own input box.

:class:`Questions` keeps the tasks that wait for an answer, as the notifier last read them,
so a code action or a hover costs no store round trip.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from lsprotocol import types
from pygls.lsp.server import LanguageServer

from baton.core.lifecycle import TaskState
from baton.core.task import Target, Task
from baton.surfaces.lsp.documents import uri_to_path

#: Code-action kind of "Reply to <title>".
REPLY_KIND = "refactor.baton.reply"
#: A task waiting on an ACP permission request is also ``needs_input``, with this message
#: (runtime/attempts.py); it is answered with ``baton.answerPermission``, not a reply.
PERMISSION_MESSAGE = "asks permission"

#: Answers offered by ``window/showMessageRequest`` when a reply carries no text.
READY_ANSWERS: tuple[str, ...] = (
    "Yes, go ahead",
    "No, leave it as it is",
    "Do what you think is best, and say what you chose",
)


def asks(task: Task) -> bool:
    """Whether the task waits for an answer to its question (not a permission)."""
    return task.state == TaskState.NEEDS_INPUT and not task.message.startswith(PERMISSION_MESSAGE)


class Questions:
    """The tasks that ask a question, by id."""

    def __init__(self) -> None:
        self.tasks: dict[str, Task] = {}

    def update(self, task: Task) -> None:
        if asks(task):
            self.tasks[task.id] = task
        else:
            self.tasks.pop(task.id, None)


def on_target(task: Task, uri: str, first: int, last: int) -> Target | None:
    """The task's target in document ``uri`` that meets lines ``first``..``last`` (0-based,
    inclusive), or None."""
    path = uri_to_path(uri)
    if path is None:
        return None
    for target in task.targets:
        if (Path(task.root) / target.path).resolve() != path.resolve():
            continue
        if target.start_line is None:
            return target
        start, end = target.start_line - 1, (target.end_line or target.start_line) - 1
        if start <= last and first <= end:
            return target
    return None


def reply_title(task: Task) -> str:
    return f"Baton: Reply to {task.title}"


def reply_actions(tasks: Iterable[Task], uri: str, where: types.Range) -> list[types.CodeAction]:
    """ "Reply to <title>" for each task asking a question whose target meets ``where``."""
    out = []
    for task in tasks:
        if not asks(task) or on_target(task, uri, where.start.line, where.end.line) is None:
            continue
        title = reply_title(task)
        out.append(
            types.CodeAction(
                title=title,
                kind=REPLY_KIND,
                command=types.Command(
                    title=title, command="baton.reply", arguments=[{"taskId": task.id}]
                ),
            )
        )
    return out


def question_markdown(task: Task) -> str:
    """The hover of a target line of a task that asks a question."""
    return (
        f"**Baton ▸ {task.title}** asks:\n\n> {task.message}\n\n"
        f'Reply: code action "{reply_title(task)}", or the command `baton.reply` with '
        f'`{{"taskId": "{task.id}", "text": "…"}}`.'
    )


async def ask_reply(ls: LanguageServer, task: Task) -> str | None:
    """Ask the user for an answer to the task's question with ``window/showMessageRequest``
    (its ready-made answers); None when dismissed."""
    result = await ls.window_show_message_request_async(
        types.ShowMessageRequestParams(
            type=types.MessageType.Info,
            message=f"Baton: {task.title} asks: {task.message}",
            actions=[types.MessageActionItem(title=a) for a in READY_ANSWERS],
        )
    )
    return result.title if result is not None else None
