"""A CA removed from a trust store is no longer trusted once the files are reloaded, on the admin API's HTTPS and on
the bookie port alike: each reload builds a new TLS context from the files as they are (OpenSSL only ever adds to
a context's trust store), so a client certificate of the removed CA fails the next handshake, and one of the CA
that replaced it passes; no restart."""

from __future__ import annotations

import shutil
import socket
import ssl
import threading
from collections.abc import Callable
from pathlib import Path

import pytest
import trustme
from bookie.http.https import ServerCertificates
from bookie.tls import ReloadingContext, ServerFiles

from tests.support.accept_loop import serve_connections
from tests.support.admin_api import PemIdentity, swap_to, write_ca, write_identity


def handshake(port: int, server_ca: Path, client: PemIdentity) -> bool:
    """Whether a TLS connection presenting ``client``'s certificate is admitted (TLS 1.3 reports a refused client
    certificate after the handshake, at the first read)."""
    context = ssl.create_default_context(cafile=str(server_ca))
    context.load_cert_chain(str(client.cert), str(client.key))
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=10) as raw, \
                context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(b"x")
            return tls.recv(1) == b"x"
    except (OSError, ssl.SSLError):
        return False


def serving(context_now: Callable[[], ssl.SSLContext]) -> tuple[int, Callable[[], None]]:
    """A server that echoes one byte over TLS with whatever context ``context_now`` gives at each connection."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def echo_one_byte(conn: socket.socket) -> None:
        try:
            with context_now().wrap_socket(conn, server_side=True) as tls:
                tls.sendall(tls.recv(1))
        except (OSError, ssl.SSLError):
            pass  # a refused client certificate

    thread = threading.Thread(target=serve_connections, args=(listener, stop, echo_one_byte))
    thread.start()

    def close() -> None:
        stop.set()
        thread.join()
        listener.close()

    return listener.getsockname()[1], close


def rotation(tmp_path: Path) -> tuple[Path, Path, PemIdentity, PemIdentity]:
    """(the live files' directory, the server's CA, a client of the first client CA, one of the second): the live
    files trust the first client CA; ``swap_to(live, tmp_path / "v2")`` replaces it with the second."""
    server_ca, first, second = trustme.CA(), trustme.CA(), trustme.CA()
    server = write_identity(server_ca, tmp_path / "server", "server", "127.0.0.1")
    for version, ca in (("v1", first), ("v2", second)):
        (tmp_path / version).mkdir()
        shutil.copy(server.cert, tmp_path / version / "server.crt")
        shutil.copy(server.key, tmp_path / version / "server.key")
        write_ca(ca, tmp_path / version / "clients-ca.crt")
    live = tmp_path / "live"
    swap_to(live, tmp_path / "v1")
    return (live, write_ca(server_ca, tmp_path / "server-ca.crt"),
            write_identity(first, tmp_path / "c1", "client"), write_identity(second, tmp_path / "c2", "client"))


Listener = Callable[[Path], tuple[Callable[[], ssl.SSLContext], Callable[[], bool]]]


def admin_api(live: Path) -> tuple[Callable[[], ssl.SSLContext], Callable[[], bool]]:
    """The admin API's HTTPS on the live files: (its listener's context, its reload)."""
    certificates = ServerCertificates(live / "server.crt", live / "server.key", live / "clients-ca.crt")
    return lambda: certificates.context, certificates.refresh


def bookie_port(live: Path) -> tuple[Callable[[], ssl.SSLContext], Callable[[], bool]]:
    """The bookie port's TLS on the live files, client certificates required: (its current context, its reload)."""
    reloading = ReloadingContext(ServerFiles(certificate=str(live / "server.crt"), key=str(live / "server.key"),
                                             trust_store=str(live / "clients-ca.crt"), client_authentication=True))
    return lambda: reloading.context, reloading.refresh


@pytest.mark.parametrize("listener", [admin_api, bookie_port], ids=["admin-api", "bookie-port"])
def test_a_removed_ca_is_no_longer_trusted_after_the_reload(tmp_path: Path, listener: Listener) -> None:
    live, server_ca, of_first, of_second = rotation(tmp_path)
    context_now, reload = listener(live)
    port, close = serving(context_now)
    try:
        assert handshake(port, server_ca, of_first) and not handshake(port, server_ca, of_second)
        swap_to(live, tmp_path / "v2")
        assert reload()
        assert handshake(port, server_ca, of_second), "the new CA is not trusted after the reload"
        assert not handshake(port, server_ca, of_first), "the removed CA is still trusted after the reload"
    finally:
        close()
