"""Baton: delegate work from the editor to coding-agent CLIs and review it as inline diffs."""

__version__ = "0.1.0"
