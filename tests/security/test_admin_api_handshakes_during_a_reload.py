"""A certificate reload never breaks a handshake: while the admin API's certificate files are rotated and
reloaded over and over, every new TLS connection completes its handshake and is served one whole identity, the
old certificate or the new one (never a certificate without its key)."""

from __future__ import annotations

import socket
import ssl
import threading
from pathlib import Path

import trustme
from bookie.http.https import ServerCertificates
from cryptography import x509

from tests.support.accept_loop import serve_connections
from tests.support.admin_api import serial_of, swap_to, write_ca, write_identity

RELOADS = 300


def serve(listener: socket.socket, context: ssl.SSLContext, stop: threading.Event, errors: list[str]) -> None:
    """Accept and complete handshakes until ``stop``; a server-side failure is recorded, not raised."""
    def shake_hands(conn: socket.socket) -> None:
        try:
            with context.wrap_socket(conn, server_side=True):
                pass
        except (OSError, ssl.SSLError) as exc:
            errors.append(f"server: {exc!r}")

    serve_connections(listener, stop, shake_hands)


def connect(port: int, context: ssl.SSLContext, stop: threading.Event, serials: list[int],
            errors: list[str]) -> None:
    """New connections, one after another, until ``stop``: the serial each is served, or its failure."""
    while not stop.is_set():
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                    context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                der = tls.getpeercert(binary_form=True)
                assert der is not None
                serials.append(int(x509.load_der_x509_certificate(der).serial_number))
        except (OSError, ssl.SSLError) as exc:
            errors.append(f"client: {exc!r}")


def test_handshakes_during_reloads_all_complete_with_a_whole_identity(tmp_path: Path) -> None:
    ca = trustme.CA()
    identities = [write_identity(ca, tmp_path / f"v{i}", "admin", "127.0.0.1") for i in (1, 2)]
    live = tmp_path / "live"
    swap_to(live, tmp_path / "v1")
    certificates = ServerCertificates(live / "admin.crt", live / "admin.key")
    client_context = ssl.create_default_context(cafile=str(write_ca(ca, tmp_path / "ca.crt")))

    stop_connecting, stop_serving = threading.Event(), threading.Event()
    serials: list[int] = []
    errors: list[str] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        server = threading.Thread(target=serve, args=(listener, certificates.context, stop_serving, errors))
        client = threading.Thread(target=connect, args=(port, client_context, stop_connecting, serials, errors))
        server.start()
        client.start()
        try:
            reloaded = 0
            for i in range(RELOADS):
                swap_to(live, tmp_path / f"v{(i + 1) % 2 + 1}")    # v2, v1, v2, ...
                reloaded += certificates.refresh()
        finally:
            stop_connecting.set()
            client.join()        # its last connection is served before the server stops accepting
            stop_serving.set()
            server.join()

    assert reloaded == RELOADS                 # every rotation was seen (a new inode each time)
    assert not errors, f"{len(errors)} of {len(errors) + len(serials)} handshakes failed: {errors[:5]}"
    assert serials and set(serials) <= {serial_of(identity) for identity in identities}
