"""``serve_connections(listener, stop, handle)``: the accept loop of the tests' small TCP servers (an echo server, a
TLS server that only shakes hands), run on a thread of the test: each connection is handed to ``handle`` and closed
after it, one at a time, until ``stop`` is set (checked every 0.2 s)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable


def serve_connections(listener: socket.socket, stop: threading.Event,
                      handle: Callable[[socket.socket], None]) -> None:
    listener.settimeout(0.2)
    while not stop.is_set():
        try:
            conn, _ = listener.accept()
        except TimeoutError:
            continue
        with conn:
            conn.settimeout(10)
            handle(conn)
