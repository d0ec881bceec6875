"""The real ``notify-send`` (libnotify; Debian's ``libnotify-bin``) takes the argv Baton builds:
on a private D-Bus session bus, a stand-in notification server (org.freedesktop.Notifications,
written with jeepney, which the keyring already brings) records the ``Notify`` call it gets.

Skipped, saying why, where ``notify-send`` or ``dbus-daemon`` is not installed: the tests
with a recording stand-in for the program (tests/e2e/test_cli_notify.py) check the argv
everywhere; this one checks that the real program reads it as meant — the texts after
``--`` as texts, even one that begins with ``-``.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from baton.surfaces.desktop import Desktop

jeepney = pytest.importorskip("jeepney")
from jeepney import HeaderFields, MessageType, new_error, new_method_return  # noqa: E402
from jeepney.bus_messages import message_bus  # noqa: E402
from jeepney.io.blocking import open_dbus_connection  # noqa: E402

NAME = "org.freedesktop.Notifications"


@pytest.fixture
def session_bus() -> Iterator[str]:
    if shutil.which("notify-send") is None or shutil.which("dbus-daemon") is None:
        pytest.skip("!!! notify-send or dbus-daemon is not installed (apt: libnotify-bin) !!!")
    proc = subprocess.Popen(
        ["dbus-daemon", "--session", "--nofork", "--nopidfile", "--print-address=1"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        address = proc.stdout.readline().strip()
        assert address, "dbus-daemon printed no address"
        yield address
    finally:
        proc.terminate()
        proc.wait(timeout=10)


class NotificationServer(threading.Thread):
    """Owns org.freedesktop.Notifications on the bus and records each Notify call."""

    def __init__(self, address: str) -> None:
        super().__init__(daemon=True)
        self.conn = open_dbus_connection(bus=address)
        reply = self.conn.send_and_get_reply(message_bus.RequestName(NAME))
        assert reply.body == (1,), reply.body  # the primary owner
        self.calls: list[tuple[Any, ...]] = []
        self.got = threading.Event()
        self.stopping = False

    def run(self) -> None:
        while not self.stopping:
            try:
                msg = self.conn.receive(timeout=0.2)
            except TimeoutError:
                continue
            if msg.header.message_type != MessageType.method_call:
                continue
            member = msg.header.fields.get(HeaderFields.member)
            if member == "Notify":
                self.calls.append(msg.body)
                self.conn.send(new_method_return(msg, "u", (1,)))
                self.got.set()
            elif member == "GetServerInformation":
                self.conn.send(new_method_return(msg, "ssss", ("stand-in", "baton", "1", "1.2")))
            elif member == "GetCapabilities":
                self.conn.send(new_method_return(msg, "as", (["body"],)))
            else:
                self.conn.send(new_error(msg, "org.freedesktop.DBus.Error.UnknownMethod"))

    def stop(self) -> None:
        self.stopping = True
        self.join(timeout=5)
        self.conn.close()


async def test_the_real_notify_send_shows_what_baton_asks(
    session_bus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DBUS_SESSION_BUS_ADDRESS", session_bus)
    monkeypatch.setattr(sys, "platform", "linux")
    server = NotificationServer(session_bus)
    server.start()
    try:
        title, body = "Baton: needs input", "-u critical --help: which file?"
        assert await Desktop().show(title, body)
        assert server.got.wait(10)
        ((app, _replaces, _icon, summary, text, _actions, _hints, _timeout),) = server.calls
        assert (app, summary, text) == ("Baton", title, body)
    finally:
        server.stop()
