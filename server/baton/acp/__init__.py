"""The ACP transport: agents spoken to over the Agent Client Protocol (JSON-RPC on stdio).

Beside the native stream (Baton parses a CLI's own output), an ACP session lets the agent ask
the user before it acts, report its plan, be cancelled mid-turn and take follow-up prompts in
the same session. The pieces, from the agent outwards:

- :mod:`baton.acp.agents` — per agent: the ACP command, its env, its quirks; and which
  transport a profile uses.
- :mod:`baton.acp.translate` — pure: ACP session updates and prompt results → Baton's
  normalized events; :mod:`baton.acp.tool_calls` reads the tool calls they carry.
- :mod:`baton.acp.permission_requests` — the events permission requests become, the option
  an answer means, and a session's requests waiting for an answer.
- :mod:`baton.acp.policy` — pure: a config policy answering permissions by tool kind.
- :mod:`baton.acp.files` — ``fs/read_text_file`` / ``fs/write_text_file``, inside the
  worktree only.
- :mod:`baton.acp.session_runner` — ``python -m baton.acp.session_runner``: a small detached
  process per task that holds the agent's stdio and its session (:mod:`baton.acp.session`),
  writes normalized events as JSONL to ``attempt-<n>.out`` (:mod:`baton.acp.attempt_files`:
  the broker's tail, parse and adopt path is the native one) and obeys a control socket
  (prompt, cancel, answer a permission, stop).
- :mod:`baton.acp.control` — that socket's protocol, both ends.
- :mod:`baton.acp.transport` — the broker's side: the adapter whose parser reads the runner's
  events, and starting, cancelling and answering turns.
- :mod:`baton.acp.probe` — an ``initialize`` handshake, for ``baton doctor`` and for choosing
  ACP by default only where it was seen to work.
"""
