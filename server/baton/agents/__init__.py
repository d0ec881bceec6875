"""Agent adapters: one module per agent CLI, all speaking :mod:`baton.agents.base`."""
