"""An Apache BookKeeper bookie is ready for the tests when it answers a request on a new connection, not when its
port accepts one: it listens (and registers) before it serves, and closes at once every connection it accepts
until then (its ``RejectRequestHandler``), so a client that connected in that window, right after a readiness
check that only connected, had its adds reset ("Connection reset by peer", seen once under load).
``answers_requests`` tells the two apart: a listener that closes what it accepts is not serving, a running Java
bookie is."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator

import pytest
from bookie_fleet.processes import accepts, answers_requests

from tests.support.accept_loop import serve_connections
from tests.support.java_bookies import BookieCluster


@pytest.fixture
def closes_what_it_accepts() -> Iterator[tuple[str, int]]:
    """A listener that closes each connection as soon as it accepts it, as Apache BookKeeper's bookie does before
    it serves."""
    server = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    thread = threading.Thread(target=serve_connections, args=(server, stop, lambda conn: None))  # closed at once
    thread.start()
    try:
        yield server.getsockname()[:2]
    finally:
        stop.set()
        thread.join()
        server.close()


def test_a_port_that_closes_what_it_accepts_is_not_serving(closes_what_it_accepts: tuple[str, int]) -> None:
    host, port = closes_what_it_accepts
    assert accepts(host, port), "the port accepts connections"
    assert not answers_requests(host, port), "yet nothing is served on them"


def test_a_running_java_bookie_answers(java_cluster: BookieCluster) -> None:
    for bookie in java_cluster.bookies:
        assert answers_requests(bookie.address, bookie.port), bookie.bookie_id
