"""Task kinds and the deterministic classifier that gives a task its kind.

Pure: no I/O. The kind, with the reason in plain words, is what the project's policy routes
by (:mod:`baton.core.routing`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum


class Kind(StrEnum):
    """What sort of work a task is; the project's policy routes each kind its own way."""

    MECHANICAL = "mechanical"  # rote edits: rename, format, typos, imports
    CONTEXT = "context"  # needs much of the codebase: everywhere, all callers, migrations
    BUILD = "build"  # the toolchain: build, compile, CI, dependencies, failing checks
    REASONING = "reasoning"  # hard thinking: concurrency, security, algorithms, design
    GENERAL = "general"  # anything else
    QUESTION = "question"  # an answer, no change (Explain)
    REVIEW = "review"  # judge existing code or a change
    ASK = "ask"  # a read-only question about the project (baton ask): never classified


KINDS: tuple[str, ...] = tuple(str(k) for k in Kind)


@dataclass(frozen=True, slots=True)
class Classification:
    kind: Kind
    reason: str


def _words(*alternatives: str) -> re.Pattern[str]:
    return re.compile(r"\b(?:" + "|".join(alternatives) + r")", re.I)


_REVIEW = _words(
    r"review\b",
    r"critique",
    r"look over\b",
    r"second opinion",
    r"code[- ]review",
    r"give feedback",
)
_ASKING = re.compile(
    r"^\s*(?:what|why|where|which|who|whose|when|how(?! about)|explain|describe|summari[sz]e|"
    r"tell me|walk me through|is there|are there|does|do we|do i)\b",
    re.I,
)
_POLITE = re.compile(r"^\s*(?:please\s+)?(?:can|could|would|will) you\b", re.I)
_CHANGE_VERB = _words(
    r"fix",
    r"add",
    r"change",
    r"make",
    r"implement",
    r"write",
    r"rename",
    r"refactor",
    r"update",
    r"remove",
    r"delete",
    r"create",
    r"convert",
    r"replace",
    r"move",
    r"extract",
    r"generate",
    r"rewrite",
    r"format",
    r"sort",
)
_REASONING = _words(
    r"concurren",
    r"race condition",
    r"data race",
    r"races?\b",
    r"deadlock",
    r"livelock",
    r"thread[- ]?safe",
    r"thread safety",
    r"lock ordering",
    r"atomicity",
    r"memory leak",
    r"security",
    r"vulnerab",
    r"exploit",
    r"injection",
    r"audit",
    r"algorithm",
    r"complexity",
    r"optimi[sz]",
    r"performance",
    r"bottleneck",
    r"invariant",
    r"prove\b",
    r"proof",
    r"correctness",
    r"design\b",
    r"architect",
    r"edge cases?",
    r"numerical",
    r"overflow",
    r"cryptograph",
    r"distributed",
    r"consistency",
    r"cache invalidation",
    r"root cause",
    r"flaky",
    r"heisenbug",
    r"intermittent",
)
_BUILD = _words(
    r"build\b",
    r"builds\b",
    r"compil",
    r"linker",
    r"link error",
    r"ci\b",
    r"pipeline",
    r"github actions",
    r"workflow",
    r"dependenc",
    r"package\.json",
    r"pyproject",
    r"requirements\.txt",
    r"dockerfile",
    r"docker",
    r"makefile",
    r"cmake",
    r"webpack",
    r"bundler",
    r"toolchain",
    r"lockfile",
    r"npm\b",
    r"pip\b",
    r"cargo\b",
    r"gradle",
    r"maven",
    r"failing tests?",
    r"tests? (?:are |is )?(?:failing|broken)",
    r"make the tests pass",
    r"type[- ]?check",
    r"mypy",
    r"tsc\b",
)
_CONTEXT = _words(
    r"across (?:the |all )?(?:codebase|project|repo|repository|files|modules|packages)",
    r"everywhere",
    r"all (?:callers|call sites|usages|uses|references|files|modules|endpoints)",
    r"every (?:file|module|caller|call site|usage|endpoint)",
    r"(?:whole|entire) (?:codebase|project|repo|repository)",
    r"throughout",
    r"codebase",
    r"migrat",
    r"project[- ]wide",
    r"repo[- ]wide",
)
_MECHANICAL = _words(
    r"rename",
    r"reformat",
    r"format\b",
    r"sort (?:the )?imports",
    r"organi[sz]e (?:the )?imports",
    r"typos?\b",
    r"spelling",
    r"misspel",
    r"whitespace",
    r"indent",
    r"trailing",
    r"quotes\b",
    r"semicolons?",
    r"f-strings?",
    r"replace \S+ with",
    r"extract (?:a |the )?(?:constant|variable)",
    r"inline (?:the |this )?(?:variable|constant)",
    r"unused (?:imports?|variables?|code)",
    r"remove unused",
    r"dead code",
    r"type (?:hints|annotations)",
    r"docstrings?",
    r"copyright",
    r"license header",
    r"bump (?:the )?version",
    r"camel ?case",
    r"snake[_ ]case",
    r"upper ?case",
    r"lower ?case",
    r"alphabeti[sz]e",
)
#: A mechanical keyword in a long instruction is usually one step of bigger work.
MECHANICAL_MAX_WORDS = 30
#: A selection this long is about context, whatever the words say.
LARGE_SELECTION = 300
#: A task about this many files needs context.
MANY_FILES = 5


def _said(match: re.Match[str]) -> str:
    return f"the instruction says {match.group(0).strip().lower()!r}"


def classify(
    instruction: str,
    *,
    action: str = "delegate",
    selection_lines: int | None = None,
    files: int = 0,
) -> Classification:
    """The kind of a task, from its instruction, the selection's size and the action.

    Deterministic: the same inputs give the same kind and reason. Rules, first match wins:
    Explain → question; review words → review; a question that asks for no change →
    question; reasoning words; build words; context words; mechanical words (in a short
    instruction); a large selection or many files → context; the Fix action → build;
    otherwise general.
    """
    text = " ".join(instruction.split())
    if action == "explain":
        return Classification(Kind.QUESTION, "the Explain action")
    if m := _REVIEW.search(text):
        return Classification(Kind.REVIEW, _said(m))
    polite = bool(_POLITE.match(text))
    if not polite and (m := _ASKING.match(text)):
        return Classification(Kind.QUESTION, f"the instruction asks {m.group(0).strip()!r}")
    if text.rstrip().endswith("?") and not _CHANGE_VERB.search(text):
        return Classification(Kind.QUESTION, "a question that asks for no change")
    if m := _REASONING.search(text):
        return Classification(Kind.REASONING, _said(m))
    if m := _BUILD.search(text):
        return Classification(Kind.BUILD, _said(m))
    if m := _CONTEXT.search(text):
        return Classification(Kind.CONTEXT, _said(m))
    if (m := _MECHANICAL.search(text)) and len(text.split()) <= MECHANICAL_MAX_WORDS:
        return Classification(Kind.MECHANICAL, _said(m))
    if selection_lines is not None and selection_lines >= LARGE_SELECTION:
        return Classification(Kind.CONTEXT, f"a large selection ({selection_lines} lines)")
    if files >= MANY_FILES:
        return Classification(Kind.CONTEXT, f"{files} files")
    if action == "fix":
        return Classification(Kind.BUILD, "the Fix action (diagnostics)")
    return Classification(Kind.GENERAL, "no rule matched")
