"""The Baton language server (``baton lsp``): a pygls server on stdio embedding the broker."""


def run_stdio() -> int:
    """Serve LSP on stdin/stdout until the client exits."""
    raise SystemExit("baton lsp: the language server is not built yet")
