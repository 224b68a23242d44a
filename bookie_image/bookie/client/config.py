"""Client configuration (names follow BookKeeper's ``ClientConfiguration`` where one exists)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

from bookie.metadata.security import ZkSecurity
from bookie.tls import ClientTLS


@dataclass(frozen=True)
class ClientConfig:
    """Everything the ledger client can be told.

    ``zk_servers`` / ``ledgers_root``: where the metadata lives (BookKeeper's layout); ``zk_security``: TLS,
    identity and ACLs of the ZooKeeper session (``bookie.metadata.security``; default plaintext, open ACLs).
    ``use_v2_protocol``: speak the v2 binary protocol (Pulsar's ``useV2WireProtocol``); explicit LAC and long
    poll need v3. ``connections_per_bookie``: ``numChannelsPerBookie`` (a ledger always uses the same one, so
    its requests to one bookie stay ordered).
    ``tls``: upgrade every connection with START_TLS, as BookKeeper's client does once
    ``tlsProviderFactoryClass`` is set (v2 connections too: START_TLS is v3, then v2 frames follow inside
    TLS); ``ClientTLS`` holds the trust store and, for bookies that authorize by certificate role, the
    client certificate. A bookie without TLS answers START_TLS with EBADREQ and is not used.
    """

    zk_servers: str
    ledgers_root: str = "/ledgers"
    zk_session_timeout_ms: int = 10000
    zk_security: ZkSecurity | None = None
    use_v2_protocol: bool = False
    connections_per_bookie: int = 1
    connect_timeout_s: float = 5.0
    add_timeout_s: float = 10.0  # addEntryTimeoutSec
    read_timeout_s: float = 10.0  # readEntryTimeoutSec
    speculative_read_timeout_s: float = 2.0  # speculativeReadTimeout (0 disables)
    sticky_reads: bool = True  # stickyReadsEnabled (only when ensemble == write quorum)
    max_frame_size: int = 5 * 1024 * 1024
    explicit_lac_interval_s: float = 0.0  # explicitLacInterval (0 disables)
    max_outstanding_adds: int = 5000  # ``add()`` waits when a handle has this many adds in flight
    # Placement.
    placement: Literal["random", "rack"] = "random"
    racks: Mapping[str, str] = field(default_factory=dict)  # bookie id or host -> "/region/rack"
    default_rack: str = "/default-rack"
    # Where the rack placement learns racks (reppDnsResolverClass): "static" is ``racks`` alone; "zookeeper"
    # reads the ``/bookies`` znode as Pulsar's BookieRackAffinityMapping does (``racks`` entries win), again
    # whenever its copy is older than ``rack_refresh_s`` and the client is about to choose bookies.
    rack_resolver: Literal["static", "zookeeper"] = "static"
    rack_refresh_s: float = 5.0
    # Quarantine: a bookie with this many errors within the window is avoided by placement for a while.
    bookie_error_threshold: int = 10
    bookie_error_window_s: float = 60.0
    bookie_quarantine_s: float = 1800.0
    # Ensemble changes a single add may trigger before the ledger gives up.
    max_ensemble_changes: int = 20
    tls: ClientTLS | None = None
    start_tls_timeout_s: float = 10.0  # startTLSTimeoutSecs
