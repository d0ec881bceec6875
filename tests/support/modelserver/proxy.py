"""A deny-all HTTP proxy on 127.0.0.1 that records who tried to reach the outside world.

Point `HTTPS_PROXY`/`HTTP_PROXY` at `proxy.url` (with `NO_PROXY=127.0.0.1,localhost`): any CLI that
tries to call home through the proxy shows up in `proxy.attempts` and gets a 403.
"""

from __future__ import annotations

import socket
import threading
from types import TracebackType

_DENY = b"HTTP/1.1 403 Forbidden\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"


class DenyAllProxy:
    """Accepts connections, records each first request line (e.g. `CONNECT host:443`), refuses."""

    def __init__(self) -> None:
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.bind(("127.0.0.1", 0))
        self._sock.listen(16)
        self._sock.settimeout(0.1)
        self._lock = threading.Lock()
        self._attempts: list[str] = []
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def port(self) -> int:
        return int(self._sock.getsockname()[1])

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def attempts(self) -> list[str]:
        """The first line of every connection made to the proxy (a copy)."""
        with self._lock:
            return list(self._attempts)

    def _serve(self) -> None:
        while not self._stopping.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            with conn:
                conn.settimeout(2)
                try:
                    first = conn.recv(4096).split(b"\r\n", 1)[0].decode("latin-1")
                except OSError:
                    first = ""
                with self._lock:
                    self._attempts.append(first or "<connection without request>")
                try:
                    conn.sendall(_DENY)
                except OSError:
                    pass

    def __enter__(self) -> DenyAllProxy:
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._stopping.set()
        self._thread.join(timeout=2)
        self._sock.close()
