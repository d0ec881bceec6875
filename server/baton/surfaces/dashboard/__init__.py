"""The dashboard the broker serves to a browser on a loopback port of its own.

:mod:`server` is the listener (plain HTTP and the live websocket), :mod:`auth` the one-time
tokens, cookies, CSRF tokens and request checks, :mod:`feed` the data read from the
Supervisor, :mod:`views` its JSON and CSV shapes, :mod:`live` the pushes to open pages. The
page itself is in ``static/``. See docs/reference/dashboard.md.
"""
