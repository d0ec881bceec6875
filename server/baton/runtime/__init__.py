"""The runtime: the only place that combines agents, workspace and store.

``Supervisor`` owns tasks (queue, caps, attempts, watchdog, adoption); ``EventBus`` persists
events then fans them out. Agent processes are started and followed through
:mod:`baton.process`.
"""
