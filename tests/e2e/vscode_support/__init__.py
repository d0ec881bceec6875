"""Helpers for the VS Code client's end-to-end tests."""
