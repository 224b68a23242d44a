"""``BookieServiceInfoFormat``: where a bookie can be reached, published as the data of its registration znode.

A bookie id need not be an address. On Kubernetes it is a stable hostname (``bk-3.bk-headless.ns.svc...``) so
cookies survive pod IP changes, and without cluster DNS only the published endpoints say which IP and port to
dial. Apache BookKeeper publishes ``{id: "bookie", protocol: "bookie-rpc"}`` and, with HTTP on,
``{id: "httpserver", protocol: "http"}``; clients fall back to reading the id as ``host:port`` when the data
is empty (``ZKRegistrationClient.deserializeBookieServiceInfo``), which is what ``address_of`` does too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from google.protobuf.message import DecodeError

from bookie.protocol.proto import DataFormats_pb2 as _df

df: Any = _df

BOOKIE_RPC = "bookie-rpc"
HTTP = "http"
TLS_EXTENSION = "tls"  # on the bookie-rpc endpoint of a bookie with TLS configured


@dataclass(frozen=True)
class Endpoint:
    id: str
    host: str
    port: int
    protocol: str
    extensions: tuple[str, ...] = ()


def encode(bookie_host: str, bookie_port: int, http: tuple[str, int] | None = None,
           properties: dict[str, str] | None = None, extensions: list[str] | None = None) -> bytes:
    """The znode data a bookie registers with (binary protobuf, as Java's ``ZKRegistrationManager`` writes);
    ``extensions`` go on the bookie-rpc endpoint (BookKeeper publishes ``tls`` there when TLS is configured)."""
    info = df.BookieServiceInfoFormat()
    rpc = info.endpoints.add()
    rpc.id, rpc.host, rpc.port, rpc.protocol = "bookie", bookie_host, bookie_port, BOOKIE_RPC
    rpc.extensions.extend(extensions or [])
    if http is not None:
        web = info.endpoints.add()
        web.id, web.host, web.port, web.protocol = "httpserver", http[0], http[1], HTTP
    for key, value in (properties or {}).items():
        info.properties[key] = value
    return bytes(info.SerializeToString())


def decode(data: bytes) -> list[Endpoint]:
    """Endpoints of a registration's data; ``[]`` for empty or unreadable data (the id is then the address)."""
    if not data:
        return []
    info = df.BookieServiceInfoFormat()
    try:
        info.ParseFromString(data)
    except DecodeError:
        return []
    return [Endpoint(e.id, e.host, e.port, e.protocol, tuple(e.extensions)) for e in info.endpoints]


def parse_bookie_id(bookie_id: str) -> tuple[str, int]:
    """``host:port`` of a bookie id (BookKeeper's fallback when no service info is published)."""
    host, _, port = bookie_id.rpartition(":")
    if not host or not port.isdigit():
        raise ValueError(f"bookie id {bookie_id!r} is not host:port and no endpoint is published for it")
    return host, int(port)


def address_of(bookie_id: str, data: bytes | None) -> tuple[str, int]:
    """Where to dial ``bookie_id``: its published ``bookie-rpc`` endpoint, else the id read as ``host:port``."""
    for endpoint in decode(data or b""):
        if endpoint.protocol == BOOKIE_RPC and endpoint.host and endpoint.port:
            return endpoint.host, endpoint.port
    return parse_bookie_id(bookie_id)
