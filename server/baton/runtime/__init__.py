"""The runtime: the only place that combines agents, workspace and store.

``Supervisor`` owns tasks (queue, caps, attempts, watchdog, adoption); ``EventBus`` persists
events then fans them out; ``runner`` and ``tail`` start detached agent processes and read
their output files.
"""
