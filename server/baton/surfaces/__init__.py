"""Surfaces translate between a protocol (LSP, websocket) and the runtime; nothing more."""
