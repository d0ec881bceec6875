"""Baton's scripted model servers for driving the real agent CLIs offline in tests.

`ModelServer` speaks Anthropic Messages, OpenAI Responses, OpenAI Chat Completions and Gemini on
127.0.0.1; a `Script` says what it answers; `agents` builds each CLI's env, config and argv.
"""

from .agents import (
    AGENTS,
    Launch,
    agent_bin,
    agents_dir,
    env_for_claude,
    env_for_codex,
    env_for_gemini,
    env_for_opencode,
    env_for_pi,
)
from .proxy import DenyAllProxy
from .script import (
    Answer,
    CallContext,
    CutStream,
    Dead,
    NoFinish,
    RateLimit,
    Script,
    ServerError,
    Tool,
    ToolCall,
    Turn,
    Unauthorized,
    find_cwd,
    write_file,
)
from .server import ModelServer, RecordedRequest

__all__ = [
    "AGENTS",
    "Answer",
    "CallContext",
    "CutStream",
    "Dead",
    "DenyAllProxy",
    "Launch",
    "ModelServer",
    "NoFinish",
    "RateLimit",
    "RecordedRequest",
    "Script",
    "ServerError",
    "Tool",
    "ToolCall",
    "Turn",
    "Unauthorized",
    "agent_bin",
    "agents_dir",
    "env_for_claude",
    "env_for_codex",
    "env_for_gemini",
    "env_for_opencode",
    "env_for_pi",
    "find_cwd",
    "write_file",
]
