"""The runtime's side of attempts that run elsewhere (``runner = "ray"``).

Three hooks, each a line in the module that calls it: :func:`place` (attempts: where a
turn's attempt runs), :func:`runner_stop` (attempts: the relay said its node was lost, or
that no node could take it) and :func:`again_elsewhere` (the turn loop: an attempt whose
node was lost is interrupted, then retried — on another node, since Ray places no actor on
a dead one — in a fresh session given the conversation so far, as the CLI's session stayed
on the lost node). Delegation, task ids, routing, review and accept do not change.
"""

from __future__ import annotations

from pathlib import Path

from baton.acp import transport as acp
from baton.config.profiles import Profile
from baton.core.lifecycle import Completion, TaskState
from baton.core.settle import NextTurn, Settle, Stop
from baton.core.task import Attempt, Task
from baton.process import ray_runner
from baton.process.transport import Transport
from baton.runtime.book import Book
from baton.runtime.recorded import fresh_prompt, turn_of

S = TaskState


def place(task: Task, transport: Transport, profile: Profile, home: Path) -> Transport:
    """The transport of ``profile``'s attempt: as it is, or run on its Ray cluster — always
    the native stream there (raises ``ValueError`` saying why it cannot be)."""
    if ray_runner.runs_on_ray(profile) and transport.name != acp.NATIVE:
        transport = acp.transport_for(acp.NATIVE, profile.provider)
        task.options["transport"] = acp.NATIVE
        task.options["transport_reason"] = "the Ray runner runs the native stream"
    placed = ray_runner.placed(transport, profile, home)
    if placed is not transport:
        task.options["runner"] = ray_runner.RAY
    return placed


def runner_stop(attempt: Attempt) -> Stop | None:
    """How the relay of a remote attempt says it ended, when that is not the agent's doing."""
    state = ray_runner.read_state(Path(attempt.out_path).parent, attempt.n)
    if state.get("lost"):
        return Stop(Completion.INTERRUPTED, f"interrupted: {state['lost']}")
    if state.get("error"):
        return Stop(Completion.WORKER_ERROR, str(state["error"]))
    return None


def lost_node(attempt: Attempt) -> bool:
    return bool(ray_runner.read_state(Path(attempt.out_path).parent, attempt.n).get("lost"))


async def again_elsewhere(
    book: Book, task: Task, attempt: Attempt, decision: object
) -> NextTurn | None:
    """After a lost node: record the task ``interrupted``, then queue a fresh session (the
    turn loop starts it, within the task's ``max_attempts``); None for any other end."""
    if not (isinstance(decision, Settle) and decision.state == S.INTERRUPTED):
        return None
    if not lost_node(attempt):
        return None
    await book.move(task, S.INTERRUPTED, decision.message, Completion.INTERRUPTED)
    await book.move(task, S.QUEUED, "retrying on another node of the cluster")
    last = turn_of(task)
    task.session_id = None  # the CLI's session stayed on the lost node
    return NextTurn(fresh_prompt(task, last), "resume")
