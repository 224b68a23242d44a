"""The one bookie configuration model.

Every key is spelt as in Apache BookKeeper's ``bk_server.conf`` (the alias) and exposed to Python code in
snake_case. The server validates its ``--conf`` file with this model, the operator validates a
BookieCluster's config overrides with it, and ``docs/configuration.md`` is generated from it
(``python -m bookie.config_docs``), so a key exists, has a default and a range in exactly one place.
"""

from __future__ import annotations

import difflib
from pathlib import Path
from typing import Any, Final, Literal

import javaproperties
from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator
from pydantic.alias_generators import to_camel

from bookie import tls
from bookie.windows import parse_window

BOOKIE_AUTHZ_FACTORY = "org.apache.bookkeeper.tls.BookieAuthZFactory"
PROMETHEUS_PROVIDER: Final = "org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider"
# The one ledger storage this bookie implements, by BookKeeper's class name (its layout: docs/architecture.md).
DB_LEDGER_STORAGE = "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage"


class ConfigError(ValueError):
    """A configuration that must stop start-up; the message names the keys and the allowed values."""


def _alias(name: str) -> str:
    # BookKeeper keys are camelCase, with a few historical exceptions listed in _ALIASES.
    return _ALIASES.get(name, to_camel(name))


_ALIASES = {
    "journal_max_group_wait_msec": "journalMaxGroupWaitMSec",
    "journal_max_size_mb": "journalMaxSizeMB",
    "journal_pre_alloc_size_mb": "journalPreAllocSizeMB",
    "journal_page_cache_flush_interval_msec": "journalPageCacheFlushIntervalMSec",
    "db_storage_write_cache_max_size_mb": "dbStorage_writeCacheMaxSizeMb",
    "db_storage_read_ahead_cache_max_size_mb": "dbStorage_readAheadCacheMaxSizeMb",
    "db_storage_read_ahead_cache_batch_size": "dbStorage_readAheadCacheBatchSize",
    "db_storage_read_ahead_cache_batch_bytes_size": "dbStorage_readAheadCacheBatchBytesSize",
    "db_storage_max_throttle_time_ms": "dbStorage_maxThrottleTimeMs",
    "zk_servers": "zkServers",
    "zk_ledgers_root_path": "zkLedgersRootPath",
    "zk_timeout": "zkTimeout",
    "http_server_enabled": "httpServerEnabled",
    "http_server_port": "httpServerPort",
    "http_server_host": "httpServerHost",
    "http_server_tls_enable": "httpServerTlsEnable",
    "http_server_key_store_path": "httpServerKeyStorePath",
    "http_server_key_store_password": "httpServerKeyStorePassword",
    "http_server_trust_store_path": "httpServerTrustStorePath",
    "http_server_trust_store_password": "httpServerTrustStorePassword",
    "zk_enable_security": "zkEnableSecurity",
    "is_throttle_by_bytes": "isThrottleByBytes",
    "is_force_gc_allow_when_no_space": "isForceGCAllowWhenNoSpace",
    "verify_metadata_on_gc": "verifyMetadataOnGC",
    "use_target_entry_log_size_for_gc": "useTargetEntryLogSizeForGc",
    "gc_entry_log_metadata_cache_enabled": "gcEntryLogMetadataCacheEnabled",
}


class BookieConfig(BaseModel):
    """Bookie server configuration (BookKeeper key names as aliases)."""

    model_config = ConfigDict(
        alias_generator=_alias, populate_by_name=True, extra="forbid", validate_assignment=True
    )

    # --- identity and network
    bookie_port: int = Field(3181, ge=0, le=65535, description="Port of the bookie protocol (v2 and v3).")
    bookie_id: str | None = Field(None, description="Bookie id; default <advertisedAddress>:<bookiePort>.")
    advertised_address: str | None = Field(None, description="Address published in ZooKeeper.")
    listening_interface_address: str = Field(
        "0.0.0.0", alias="listeningAddress", description="Address the bookie protocol listens on."
    )
    allow_loopback: bool = Field(True, description="Allow a loopback address as bookie id.")
    netty_max_frame_size_bytes: int = Field(
        5 * 1024 * 1024, gt=1024, description="Largest accepted frame; larger frames close the connection."
    )

    # --- metadata service
    metadata_service_uri: str | None = Field(
        None, description="zk+hierarchical://host:port[;host:port]/ledgers (takes precedence over zkServers)."
    )
    zk_servers: str = Field("127.0.0.1:2181", description="ZooKeeper connect string (legacy key).")
    zk_ledgers_root_path: str = Field("/ledgers", description="Root of BookKeeper's metadata in ZooKeeper.")
    zk_timeout: int = Field(10000, gt=0, description="ZooKeeper session timeout, ms.")
    # --- ZooKeeper security (docs/security.md, "ZooKeeper")
    zk_enable_security: bool = Field(
        False, description="Create every znode with BookKeeper's CREATOR_ALL ACL: only the identities of the "
                           "creating session (the fleet's: zkDigestAuthFile and/or the x509 certificate of "
                           "zkTlsCertificatePath) may read or change it. Needs one of them.")
    zk_digest_auth_file: Path | None = Field(
        None, description="Ours: file holding user:password, added to the ZooKeeper session with the digest "
                          "scheme: the fleet's identity shared by bookies, clients and the operator.")
    zk_tls_enable: bool = Field(
        False, description="Ours (Apache BookKeeper uses the zookeeper.client.secure system property): connect "
                           "to ZooKeeper's secureClientPort over TLS.")
    zk_tls_certificate_path: Path | None = Field(
        None, description="Ours: PEM client certificate for ZooKeeper (its ssl.clientAuth=need wants one; its "
                          "subject is the session's x509 identity).")
    zk_tls_key_path: Path | None = Field(None, description="Ours: PEM private key of zkTlsCertificatePath.")
    zk_tls_trust_store_path: Path | None = Field(
        None, description="Ours: PEM CA bundle that ZooKeeper's server certificate must chain to.")
    zk_tls_hostname_verification: bool = Field(
        True, description="Ours: the server certificate must name the host dialled (ZooKeeper's "
                          "zookeeper.ssl.hostnameVerification, default true).")

    # --- directories
    journal_directories: list[Path] = Field(
        default_factory=lambda: [Path("/tmp/bk-txn")], description="Journal directories (comma separated)."
    )
    ledger_directories: list[Path] = Field(
        default_factory=lambda: [Path("/tmp/bk-data")], description="Ledger directories (comma separated)."
    )
    index_directories: list[Path] | None = Field(
        None, description="Directories for the RocksDB indexes; default: the ledger directories."
    )
    ledger_storage_class: str = Field(
        DB_LEDGER_STORAGE, description="Accepted for a BookKeeper configuration taken over as it is; only "
        "DbLedgerStorage, the layout this bookie reads and writes."
    )
    allow_storage_expansion: bool = Field(
        False, description="Accept new empty ledger/index directories next to ones that have the cookie."
    )

    # --- journal
    journal_max_group_wait_msec: float = Field(2, ge=0, description="Group-commit latency cap, ms.")
    journal_buffered_writes_threshold: int = Field(
        512 * 1024, gt=0, description="Flush the journal after this many buffered bytes."
    )
    journal_buffered_entries_threshold: int = Field(0, ge=0, description="Flush after N entries (0 off).")
    journal_flush_when_queue_empty: bool = Field(False, description="Flush as soon as the queue is empty.")
    journal_sync_data: bool = Field(True, description="fdatasync the journal before acknowledging adds.")
    journal_remove_from_page_cache: bool = Field(
        True, description="Drop the journal's synced pages from the page cache, 8 MiB at a time: the journal is "
        "only read on replay, and its pages would push entry logs out of memory.")
    journal_max_size_mb: int = Field(2048, gt=0, description="Roll the journal file after this size.")
    journal_pre_alloc_size_mb: int = Field(16, gt=0, description="Journal preallocation chunk, MB.")
    journal_alignment_size: int = Field(512, gt=0, description="Journal write alignment, bytes.")
    journal_max_backups: int = Field(5, ge=0, description="Old journal files kept after a checkpoint.")
    journal_format_version_to_write: int = Field(6, ge=5, le=6, description="Journal format version.")
    journal_queue_size: int = Field(
        10000, gt=0, description="Adds waiting for each journal; more pause the connections sending adds.")

    # --- entry logs, caches, checkpoints
    log_size_limit: int = Field(
        1024 * 1024 * 1024, gt=1024 * 64, le=2**31 - 1, description="Roll an entry log at this size, bytes."
    )
    flush_interval: int = Field(10000, gt=0, description="Checkpoint interval, ms.")
    flush_entrylog_bytes: int = Field(0, ge=0, description="Flush the entry log every N bytes (0 off).")
    db_storage_write_cache_max_size_mb: int = Field(64, gt=0, description="Write cache size (both halves).")
    db_storage_read_ahead_cache_max_size_mb: int = Field(64, ge=0, description="Read cache size.")
    db_storage_read_ahead_cache_batch_size: int = Field(100, gt=0, description="Read-ahead entries.")
    db_storage_read_ahead_cache_batch_bytes_size: int = Field(
        -1, ge=-1, description="Read-ahead byte limit (-1: none, the entry count and half the read cache bound it)."
    )
    db_storage_max_throttle_time_ms: int = Field(
        10000, ge=0, description="Wait for a full write cache before ETOOMANYREQUESTS, ms."
    )

    # --- backpressure
    max_adds_in_progress_limit: int = Field(0, ge=0, description="Adds in progress per bookie (0 off).")
    max_reads_in_progress_limit: int = Field(
        1024, ge=0, description="Reads in progress per bookie (0 off); at the limit, connections are not read "
                                "until one completes. Ours defaults to 1024 (BookKeeper: 0), so a client that never "
                                "reads its answers holds at most this many.")
    max_pending_add_requests_per_thread: int = Field(
        10000, ge=0, description="Queued adds before ETOOMANYREQUESTS (0 off)."
    )
    max_pending_read_requests_per_thread: int = Field(
        10000, ge=0, description="Queued reads before ETOOMANYREQUESTS (0 off)."
    )
    max_unsent_response_bytes_per_connection: int = Field(
        1024 * 1024, gt=0,
        description="Ours (BookKeeper has Netty's write-buffer water mark): a connection whose unsent responses "
                    "exceed this many bytes is not read until they drain to half of it.",
    )
    wait_timeout_on_response_backpressure_ms: int = Field(
        -1, ge=-1,
        description="How long a connection may stay over its unsent-response budget with nothing drained, ms "
                    "(-1: forever); then closeChannelOnResponseTimeout decides.",
    )
    close_channel_on_response_timeout: bool = Field(
        False, description="Close a connection that stayed over its unsent-response budget for "
                           "waitTimeoutOnResponseBackpressureMs (otherwise it stays paused).",
    )
    max_adds_in_progress_bytes: int = Field(
        256 * 1024 * 1024, ge=0, description="Ours: entry bytes of adds in progress (not yet durable); over it, "
                                             "connections sending adds are not read until some complete (0 off).")
    max_long_poll_timeout_ms: int = Field(
        60_000, gt=0, description="Ours: a long-poll read waits at most this long, whatever the client asks, ms.")
    max_parked_long_polls: int = Field(
        10_000, gt=0, description="Ours: long-poll reads waiting in the bookie; more are refused with "
                                  "ETOOMANYREQUESTS. They hold no read slot, so they never block reads.")
    max_connections: int = Field(
        4096, ge=0, description="Ours: connections accepted by the bookie (0 off); more are closed at once.")
    max_connections_per_client_address: int = Field(
        0, ge=0, description="Ours: connections from one client address (0 off); more are closed at once.")
    connection_idle_timeout_ms: int = Field(
        0, ge=0, description="Ours: close a connection with nothing received, sent or in progress for this "
                             "long, ms (0 off: BookKeeper clients keep idle connections open).")
    partial_frame_timeout_ms: int = Field(
        30_000, ge=0, description="Ours: close a connection that holds an incomplete frame this long, ms (0 off).")
    unauthenticated_timeout_ms: int = Field(
        10_000, ge=0, description="Ours: close a connection that has not sent a complete request as an "
                                  "authenticated client this long after it connected (idle or holding a partial "
                                  "frame), ms (0 off). Clients connect when they have a request to send.")
    unauthenticated_buffer_bytes: int = Field(
        64 * 1024 * 1024, ge=0, description="Ours: bytes of incomplete frames that connections without a complete "
                                            "authenticated request yet may hold together; the connection that "
                                            "would pass it is closed (0 off). With authentication configured, each "
                                            "such connection may also hold at most 64 KiB (START_TLS is small).")
    num_add_worker_threads: int = Field(1, ge=0, description="Add worker threads (ordered by ledger).")
    num_read_worker_threads: int = Field(8, ge=0, description="Read worker threads.")

    # --- disk checks and state
    min_usable_size_for_entry_log_creation: int = Field(
        0, ge=0, description="Bytes kept free in every ledger directory, besides diskUsageThreshold's share: "
                             "adds are refused (EREADONLY, the bookie turns read-only) before the next "
                             "checkpoint would use them, so compaction has room to rewrite entry logs.")
    min_usable_size_for_high_priority_writes: int = Field(
        0, ge=0, description="Bytes below which even recovery (high-priority) adds are refused.")
    disk_usage_threshold: float = Field(0.95, gt=0, lt=1, description="Used fraction that makes a dir full.")
    disk_usage_warn_threshold: float = Field(0.90, gt=0, lt=1, description="Used fraction that warns.")
    disk_usage_lwm_threshold: float | None = Field(
        None, gt=0, lt=1, description="Used fraction below which a full bookie is writable again."
    )
    disk_check_interval: int = Field(10000, gt=0, description="Disk check interval, ms.")
    read_only_mode_enabled: bool = Field(True, description="Go read-only (not shut down) when disks fill.")
    force_read_only_bookie: bool = Field(False, description="Start and stay read-only.")
    persist_bookie_status_enabled: bool = Field(False, description="Persist the state in BOOKIE_STATUS.")
    read_only_mode_on_any_disk_full_enabled: bool = Field(
        True, description="Any single full dir makes the bookie read-only."
    )

    # --- HTTP admin API (docs/security.md, "The admin API")
    http_server_enabled: bool = Field(True, description="Serve the admin REST API.")
    http_server_port: int = Field(8080, ge=0, le=65535, description="Admin REST API port.")
    http_server_host: str | None = Field(
        None, description="Admin REST API listen address. Default: the bookie's own address (advertisedAddress, "
                          "else a concrete listeningAddress, else 127.0.0.1), never every interface; 0.0.0.0 "
                          "must be asked for.")
    http_server_class: str | None = Field(
        None, description="Accepted for a BookKeeper configuration taken over as it is (Apache BookKeeper's admin "
                          "HTTP server class, which its bookie needs); this bookie always serves its own admin API.")
    http_server_tls_enable: bool = Field(
        False, description="Serve the admin REST API over HTTPS with the PEM files httpServerTlsCertificatePath "
                           "and httpServerTlsKeyPath.")
    http_server_tls_certificate_path: Path | None = Field(
        None, description="Ours: PEM certificate chain of the HTTPS admin API.")
    http_server_tls_key_path: Path | None = Field(
        None, description="Ours: PEM private key of the HTTPS admin API (unencrypted, PKCS#8 or PKCS#1).")
    http_server_tls_trust_store_path: Path | None = Field(
        None, description="Ours: PEM CA bundle; a client certificate signed by it is verified and its roles "
                          "(httpServerAllowedRoles) authorize admin calls. Optional for clients: probes and "
                          "token holders connect without one.")
    http_server_auth_token_file: Path | None = Field(
        None, description="Ours: file of bearer tokens (one per line, at least 16 characters, or sha256:<hex> of "
                          "one) that may call every endpoint of the admin API (the admin scope); re-read when it "
                          "changes, so a rotated Kubernetes Secret applies without a restart.")
    http_server_metrics_token_file: Path | None = Field(
        None, description="Ours: file of bearer tokens (one per line, or sha256:<hex> of one) that may read /metrics "
                          "and nothing else (Prometheus's credential). Set, /metrics needs a credential on the admin "
                          "API's port and on prometheusStatsHttpPort: one of these tokens, a read or admin token, or "
                          "an allowed certificate role. Unset, /metrics is open, as BookKeeper's is; its topic and "
                          "ledger labels name the fleet's topics.")
    http_server_read_token_file: Path | None = Field(
        None, description="Ours: file of bearer tokens (one per line, or sha256:<hex> of one) that may call the "
                          "admin API's read endpoints only (the explain endpoint, entry-log files, ledger lists "
                          "and entries, server_config): the storage audit's and monitoring's credential, which "
                          "cannot change anything. httpServerAuthTokenFile's tokens may call those too.")
    http_server_allowed_roles: list[str] = Field(
        default_factory=list, description="Ours: roles (comma separated) of client certificates that may call "
                                          "the mutating and data endpoints; the role is the first one of the "
                                          "certificate's OU, read as BookKeeper's BookieAuthZFactory reads it "
                                          "(OU=0:role1,role2;1:cluster). Needs HTTPS with a trust store.")
    http_server_auth_disabled: bool = Field(
        False, description="Ours, for development only: every admin call is accepted without a credential (each "
                           "mutating call is still written to the audit log).")
    # Apache BookKeeper's JKS keys of its HTTPS admin server: named so that a copied bk_server.conf gets a clear
    # error instead of "unknown key" (this bookie reads PEM files).
    http_server_key_store_path: str | None = Field(None, description="Apache BookKeeper's JKS key store: refused.")
    http_server_key_store_password: str | None = Field(None, description="Apache BookKeeper's: refused.")
    http_server_trust_store_path: str | None = Field(
        None, description="Apache BookKeeper's JKS trust store: refused.")
    http_server_trust_store_password: str | None = Field(None, description="Apache BookKeeper's: refused.")
    http_entry_log_read_rate_by_bytes: int = Field(
        50_000_000, ge=0, description="Ours: bytes/s the admin API's entry-log reads (the storage audit) may read from "
        "disk, all readers together (0 = unlimited); a PUT server_config applies at once."
    )
    http_entry_log_read_concurrency: int = Field(
        4, gt=0, description="Ours: entry-log reads the admin API serves at once; more wait their turn."
    )

    # --- TLS and authorization on the bookie port (BookKeeper's keys; PEM files only; docs/security.md)
    tls_provider_factory_class: str | None = Field(
        None, description=f"{tls.TLS_CONTEXT_FACTORY} turns TLS on: clients may upgrade a connection with "
                          "START_TLS (the bookie still serves plaintext ones unless authorization or "
                          "onlySecureClientsAllowed refuses them).")
    tls_provider: str = Field(
        "OpenSSL", description="OpenSSL or JDK: both mean OpenSSL through Python's ssl in this bookie.")
    tls_key_store_type: str = Field(
        "PEM", description="PEM only (BookKeeper's default is JKS: set PEM explicitly in a file shared with "
                           "Java bookies).")
    tls_key_store: str | None = Field(
        None, description="PEM private key of the bookie's certificate (PKCS#8, which Java bookies need too).")
    tls_key_store_password_path: str | None = Field(
        None, description="File holding the password of an encrypted tlsKeyStore.")
    tls_certificate_path: str | None = Field(None, description="PEM certificate chain of the bookie.")
    tls_trust_store_type: str = Field("PEM", description="PEM only.")
    tls_trust_store: str | None = Field(
        None, description="PEM CA certificates that client certificates must chain to (tlsClientAuthentication); "
                          "also what the bookie's own clients (autorecovery) trust.")
    tls_trust_store_password_path: str | None = Field(
        None, description="Accepted for BookKeeper compatibility; a PEM trust store has no password.")
    tls_client_authentication: bool = Field(
        False, description="Require a client certificate chaining to tlsTrustStore (handshake refused otherwise).")
    tls_enabled_protocols: str = Field(
        "", description="Comma list of TLSv1.2, TLSv1.3 ('' = both).")
    tls_enabled_cipher_suites: str = Field(
        "", description="Comma list, Java's (IANA) or OpenSSL's names ('' = OpenSSL's defaults). TLS 1.3 suites "
                        "can only be listed all together; a list without them turns TLS 1.3 off.")
    tls_cert_files_refresh_duration_seconds: int = Field(
        0, ge=0, description="Check the certificate, key and trust files this often and use changed ones for new "
                             "connections, s (0 off). The admin API's HTTPS files (httpServerTls*) are checked at "
                             "the same period, or every 30 s when it is 0.")
    tls_hostname_verification_enabled: bool = Field(
        False, description="The bookie's own clients (autorecovery) check that a bookie's certificate names it.")
    bookie_auth_provider_factory_class: str | None = Field(
        None, description=f"{BOOKIE_AUTHZ_FACTORY}: a connection is served only once TLS is up and the first "
                          "role in its client certificate's OU (0:role1,role2;1:cluster) is in authorizedRoles; "
                          "before that every request but START_TLS gets EUA. Unset: no authorization.")
    authorized_roles: str = Field(
        "", description="Comma list of the roles BookieAuthZFactory admits.")
    only_secure_clients_allowed: bool = Field(
        False, description="Ours (BookKeeper 4.17 and 4.18 have no such key; a Java bookie ignores it): answer EUA "
                           "to every request but START_TLS and AUTH on a connection that has not started TLS.")

    # --- Prometheus (BookKeeper's PrometheusMetricsProvider keys); /metrics is always on the admin port too
    stats_provider_class: Literal["org.apache.bookkeeper.stats.prometheus.PrometheusMetricsProvider"] = Field(
        PROMETHEUS_PROVIDER, description="The only statistics this bookie keeps: Prometheus's (the key is read so "
                                         "that a configuration shared with Apache BookKeeper's bookies, which need "
                                         "it for /metrics, validates here).")
    enable_statistics: bool = Field(
        True, description="Record latency and size summaries (false: they stay empty; gauges and counters remain).",
    )
    prometheus_stats_http_enable: bool = Field(
        False, description="Also serve /metrics on prometheusStatsHttpPort (BookKeeper's dedicated port)."
    )
    prometheus_stats_http_port: int = Field(8000, ge=0, le=65535, description="Dedicated /metrics port.")
    prometheus_stats_http_address: str = Field("0.0.0.0", description="Dedicated /metrics listen address.")
    prometheus_stats_latency_rollover_seconds: int = Field(
        60, gt=0, description="Window of the latency quantiles, s (count and sum are cumulative)."
    )
    pinned_garbage_top_ledgers: int = Field(
        10, ge=0, le=1000,
        description="Ledgers in bookie_pinned_garbage_bytes: the N keeping the most garbage on disk (0: none).",
    )

    # --- autorecovery inside the bookie process
    auto_recovery_daemon_enabled: bool = Field(
        False, description="Run the autorecovery auditor and replication worker in this bookie."
    )
    lost_bookie_recovery_delay: int = Field(
        0, ge=0, description="Seconds a bookie may be gone before its ledgers are re-replicated."
    )

    # --- garbage collection and compaction (bookie.gc)
    gc_wait_time: int = Field(600000, gt=0, description="Delay between GC runs, ms.")
    gc_overreplicated_ledger_wait_time: int = Field(86400000, description="Over-replicated scan period, ms.")
    gc_metadata_op_rate_limit: int = Field(1000, gt=0, description="ZooKeeper ops per second during GC.")
    verify_metadata_on_gc: bool = Field(False, description="Re-read metadata before deleting a ledger.")
    minor_compaction_threshold: float = Field(0.2, description="Compact logs whose usage is below this.")
    minor_compaction_interval: int = Field(3600, description="Minor compaction interval, s.")
    minor_compaction_max_time_millis: int = Field(-1, description="Time budget per minor run, ms.")
    major_compaction_threshold: float = Field(0.8, description="Compact logs whose usage is below this.")
    major_compaction_interval: int = Field(86400, description="Major compaction interval, s.")
    major_compaction_max_time_millis: int = Field(-1, description="Time budget per major run, ms.")
    compaction_rate_by_entries: int = Field(1000, gt=0, description="Compaction throttle, entries/s.")
    compaction_rate_by_bytes: int = Field(1000000, gt=0, description="Compaction throttle, bytes/s.")
    is_throttle_by_bytes: bool = Field(False, description="Throttle compaction by bytes, not entries.")
    compaction_max_outstanding_requests: int = Field(100000, gt=0, description="Entries per index flush.")
    use_transactional_compaction: bool = Field(
        True, description="true: compaction writes a new <id>.log.compacting file, then links it in (crash "
        "leaves no duplicates); false (BookKeeper's default): copies live entries into the current entry log, "
        "fsyncs, then updates the index (a crash may leave unread duplicates for a later GC)."
    )
    force_allow_compaction: bool = Field(True, description="Allow forced compaction when disabled.")
    is_force_gc_allow_when_no_space: bool = Field(True, description="Forced GC runs on a full disk.")
    use_target_entry_log_size_for_gc: bool = Field(False, description="Usage against logSizeLimit.")
    gc_overreplicated_ledger_max_concurrent_requests: int = Field(
        1000, gt=0, description="Metadata reads in flight during the over-replicated ledger scan."
    )
    compaction_read_rate_by_bytes: int = Field(
        100_000_000, ge=0, description="Bytes/s compaction and metadata scans may read (0 = unlimited)."
    )
    major_compaction_window: str = Field(
        "", description="HH:MM-HH:MM local time when scheduled major compaction may run ('' = any time)."
    )
    gc_disk_pressure_ratio: float = Field(
        0.85, ge=0, le=1, description="Disk used fraction at which compaction runs at once, window ignored (0 off)."
    )
    gc_entry_log_deletion_pause_ms: int = Field(100, ge=0, description="Pause between entry-log deletions, ms.")
    gc_entry_log_forced_destroy_interval_ms: int = Field(
        120000, ge=0, description="A retired entry log still being read is deleted anyway after this, ms."
    )
    entry_location_compaction_interval: int = Field(
        -1, description="RocksDB compaction of the locations index every N s (<= 0 off; also over REST)."
    )

    @field_validator("tls_provider_factory_class", "bookie_auth_provider_factory_class", mode="before")
    @classmethod
    def _blank_is_unset(cls, value: Any) -> Any:
        return None if isinstance(value, str) and not value.strip() else value

    @field_validator("tls_provider_factory_class")
    @classmethod
    def _check_tls_factory(cls, value: str | None) -> str | None:
        if value is not None and value.strip() != tls.TLS_CONTEXT_FACTORY:
            raise ValueError(f"the only TLS provider factory is {tls.TLS_CONTEXT_FACTORY}")
        return value.strip() if value else None

    @field_validator("bookie_auth_provider_factory_class")
    @classmethod
    def _check_auth_factory(cls, value: str | None) -> str | None:
        if value is not None and value.strip() != BOOKIE_AUTHZ_FACTORY:
            raise ValueError(f"the only bookie auth provider is {BOOKIE_AUTHZ_FACTORY} (certificate roles); "
                             "SASL is not supported")
        return value.strip() if value else None

    @field_validator("ledger_storage_class")
    @classmethod
    def _check_ledger_storage(cls, value: str) -> str:
        if value.strip() != DB_LEDGER_STORAGE:
            raise ValueError(f"this bookie implements {DB_LEDGER_STORAGE} only: the disk of "
                             "a bookie run with another ledger storage must stay with Apache BookKeeper, or be "
                             "converted first (bookkeeper shell convert-to-db-storage)")
        return value.strip()

    @field_validator("tls_provider")
    @classmethod
    def _check_tls_provider(cls, value: str) -> str:
        try:
            return tls.check_provider(value)
        except tls.TLSConfigError as exc:
            raise ValueError(str(exc).removeprefix("tlsProvider: ")) from None

    @field_validator("tls_key_store_type", "tls_trust_store_type")
    @classmethod
    def _check_store_type(cls, value: str, info: ValidationInfo) -> str:
        key = _alias(info.field_name or "")
        try:
            return tls.check_store_type(key, value)
        except tls.TLSConfigError as exc:
            raise ValueError(str(exc).removeprefix(f"{key}: ")) from None

    @field_validator("major_compaction_window")
    @classmethod
    def _check_window(cls, value: str) -> str:

        parse_window(value)  # ValueError names the expected format; the key is named by the caller
        return value

    @field_validator("journal_directories", "ledger_directories", "index_directories", mode="before")
    @classmethod
    def _split_dirs(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [Path(p.strip()) for p in value.split(",") if p.strip()]
        return value

    @field_validator("http_server_allowed_roles", mode="before")
    @classmethod
    def _split_roles(cls, value: Any) -> Any:
        if isinstance(value, str):
            return [r.strip() for r in value.split(",") if r.strip()]
        return value

    @field_validator("http_server_key_store_path", "http_server_key_store_password", "http_server_trust_store_path",
                     "http_server_trust_store_password")
    @classmethod
    def _refuse_java_key_stores(cls, value: str | None) -> str | None:
        if value is not None:
            raise ValueError("this bookie reads PEM files, not Java key stores: set httpServerTlsCertificatePath "
                             "and httpServerTlsKeyPath (and httpServerTlsTrustStorePath for client certificates)")
        return value

    @field_validator("metadata_service_uri")
    @classmethod
    def _check_uri(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                parse_metadata_service_uri(value)
            except ConfigError:
                raise ValueError("expected zk+hierarchical://host:port[;host:port]/ledgers") from None
        return value

    @model_validator(mode="after")
    def _check_relations(self) -> BookieConfig:
        index = self.index_directories
        if index is not None and len(index) != len(self.ledger_directories):
            raise ValueError(  # one RocksDB pair per ledger directory, as in DbLedgerStorage
                f"indexDirectories must list as many directories as ledgerDirectories "
                f"(got {len(index)} and {len(self.ledger_directories)})"
            )
        lwm = self.disk_usage_lwm_threshold
        if lwm is not None and lwm > self.disk_usage_threshold:
            raise ValueError(
                "diskUsageLwmThreshold must be <= diskUsageThreshold "
                f"(got {lwm} > {self.disk_usage_threshold})"
            )
        if self.disk_usage_warn_threshold > self.disk_usage_threshold:
            raise ValueError(
                "diskUsageWarnThreshold must be <= diskUsageThreshold "
                f"(got {self.disk_usage_warn_threshold} > {self.disk_usage_threshold})"
            )
        self._check_compaction()
        self._check_http_security()
        self._check_zk_security()
        self._check_bookie_port_security()
        return self

    def _check_http_security(self) -> None:
        tls_files = {"httpServerTlsCertificatePath": self.http_server_tls_certificate_path,
                     "httpServerTlsKeyPath": self.http_server_tls_key_path,
                     "httpServerTlsTrustStorePath": self.http_server_tls_trust_store_path}
        if self.http_server_tls_enable:
            missing = [k for k in ("httpServerTlsCertificatePath", "httpServerTlsKeyPath") if tls_files[k] is None]
            if missing:
                raise ValueError(f"httpServerTlsEnable=true needs {' and '.join(missing)} (PEM files)")
        else:
            given = [k for k, v in tls_files.items() if v is not None]
            if given:  # a certificate that is silently unused would leave a plaintext API the reader thinks secure
                raise ValueError(f"{', '.join(given)} set but httpServerTlsEnable is false")
        if self.http_server_allowed_roles and self.http_server_tls_trust_store_path is None:
            raise ValueError("httpServerAllowedRoles needs client certificates: set httpServerTlsEnable=true and "
                             "httpServerTlsTrustStorePath (the CA bundle that signs them)")
        if self.http_server_auth_disabled and (self.http_server_auth_token_file or self.http_server_allowed_roles
                                               or self.http_server_read_token_file
                                               or self.http_server_metrics_token_file):
            raise ValueError("httpServerAuthDisabled=true contradicts httpServerAuthTokenFile/httpServerReadTokenFile/"
                             "httpServerMetricsTokenFile/httpServerAllowedRoles: remove one or the other")

    def _check_zk_security(self) -> None:
        tls_files = {"zkTlsCertificatePath": self.zk_tls_certificate_path, "zkTlsKeyPath": self.zk_tls_key_path,
                     "zkTlsTrustStorePath": self.zk_tls_trust_store_path}
        given = [k for k, v in tls_files.items() if v is not None]
        if given and not self.zk_tls_enable:
            raise ValueError(f"{', '.join(given)} set but zkTlsEnable is false")
        if (self.zk_tls_certificate_path is None) != (self.zk_tls_key_path is None):
            raise ValueError("zkTlsCertificatePath and zkTlsKeyPath go together (a client certificate and its key)")
        if self.zk_enable_security and self.zk_digest_auth_file is None and self.zk_tls_certificate_path is None:
            raise ValueError("zkEnableSecurity=true needs an identity for the ZooKeeper session: zkDigestAuthFile "
                             "(digest scheme) or zkTlsCertificatePath (x509 scheme); without one ZooKeeper refuses "
                             "to create znodes with the CREATOR_ALL ACL")

    def _check_bookie_port_security(self) -> None:
        """The TLS and authorization keys that only work together (BookKeeper finds out at the first handshake,
        or not at all; this bookie refuses to start)."""
        tls_on = self.tls_enabled
        if tls_on:
            missing = [k for k, v in (("tlsCertificatePath", self.tls_certificate_path),
                                      ("tlsKeyStore", self.tls_key_store)) if not v]
            if missing:
                raise ValueError(f"tlsProviderFactoryClass turns TLS on, which needs {' and '.join(missing)}")
            try:
                tls.parse_suites(self.tls_enabled_protocols, self.tls_enabled_cipher_suites)
            except tls.TLSConfigError as exc:
                raise ValueError(str(exc)) from None
            if self.tls_client_authentication and not self.tls_trust_store:
                raise ValueError("tlsClientAuthentication needs tlsTrustStore (the CAs of client certificates)")
        if self.bookie_auth_provider_factory_class is not None:
            if not (tls_on and self.tls_client_authentication):
                raise ValueError(f"bookieAuthProviderFactoryClass={BOOKIE_AUTHZ_FACTORY} reads roles from client "
                                 "certificates: it needs tlsProviderFactoryClass and tlsClientAuthentication=true")
            if not self.authorized_role_list:
                raise ValueError(f"bookieAuthProviderFactoryClass={BOOKIE_AUTHZ_FACTORY} needs authorizedRoles "
                                 "(the roles it admits)")
        if self.only_secure_clients_allowed and not tls_on:
            raise ValueError("onlySecureClientsAllowed needs TLS: set tlsProviderFactoryClass")

    def _check_compaction(self) -> None:
        for key, value in (
            ("minorCompactionThreshold", self.minor_compaction_threshold),
            ("majorCompactionThreshold", self.major_compaction_threshold),
        ):
            if not 0 <= value <= 1:
                raise ValueError(f"{key} must be between 0 and 1 (got {value})")
        minor_on = self.minor_compaction_interval > 0 and self.minor_compaction_threshold > 0
        major_on = self.major_compaction_interval > 0 and self.major_compaction_threshold > 0
        if minor_on and major_on:
            if self.minor_compaction_threshold >= self.major_compaction_threshold:
                raise ValueError(
                    "minorCompactionThreshold must be < majorCompactionThreshold "
                    f"(got {self.minor_compaction_threshold} >= {self.major_compaction_threshold})"
                )
            if self.minor_compaction_interval >= self.major_compaction_interval:
                raise ValueError(
                    "minorCompactionInterval must be < majorCompactionInterval "
                    f"(got {self.minor_compaction_interval} >= {self.major_compaction_interval})"
                )
        gc_wait_s = self.gc_wait_time / 1000
        for key, interval, enabled in (
            ("minorCompactionInterval", self.minor_compaction_interval, minor_on),
            ("majorCompactionInterval", self.major_compaction_interval, major_on),
        ):
            if enabled and interval < gc_wait_s:
                raise ValueError(f"{key} ({interval} s) must be >= gcWaitTime ({gc_wait_s:g} s)")

    # --- derived values
    @property
    def tls_enabled(self) -> bool:
        return self.tls_provider_factory_class is not None

    @property
    def authorized_role_list(self) -> list[str]:
        return tls.split_list(self.authorized_roles)

    @property
    def effective_lwm_threshold(self) -> float:
        return self.disk_usage_lwm_threshold or self.disk_usage_threshold

    @property
    def effective_index_directories(self) -> list[Path]:
        return self.index_directories or self.ledger_directories

    @property
    def zk_connect(self) -> str:
        """ZooKeeper connect string, from metadataServiceUri when set."""
        return parse_metadata_service_uri(self.metadata_service_uri)[0] if self.metadata_service_uri \
            else self.zk_servers

    @property
    def ledgers_root(self) -> str:
        return parse_metadata_service_uri(self.metadata_service_uri)[1] if self.metadata_service_uri \
            else self.zk_ledgers_root_path

    @property
    def effective_http_server_host(self) -> str:
        """Where the admin API listens: httpServerHost, else the bookie's own address (never the wildcard by
        default: the admin API must not appear on interfaces nobody chose)."""
        if self.http_server_host:
            return self.http_server_host
        listening = self.listening_interface_address
        concrete = None if listening in ("", "0.0.0.0", "::") else listening
        return self.advertised_address or concrete or "127.0.0.1"

    @property
    def effective_bookie_id(self) -> str:
        if self.bookie_id:
            return self.bookie_id
        return f"{self.advertised_address or '127.0.0.1'}:{self.bookie_port}"

    # --- loading
    @classmethod
    def from_properties(cls, text: str, source: str = "<config>") -> BookieConfig:
        """Parse a ``bk_server.conf`` (Java properties, as Apache BookKeeper reads it)."""
        return cls.from_mapping(read_properties(text, source), source)

    @classmethod
    def from_file(cls, path: str | Path) -> BookieConfig:
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as exc:
            raise ConfigError(f"cannot read configuration file {path}: {exc.strerror}") from exc
        return cls.from_properties(text, str(path))

    @classmethod
    def from_mapping(cls, values: dict[str, Any], source: str = "<config>") -> BookieConfig:
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            raise ConfigError(describe_validation_error(exc, source)) from None

    def to_properties(self) -> str:
        """Render as a ``bk_server.conf``-style file (only keys that differ from defaults), escaped as Java does."""
        lines = []
        for key, value in self.model_dump(by_alias=True, exclude_defaults=True).items():
            if isinstance(value, list):
                value = ",".join(str(v) for v in value)
            elif isinstance(value, bool):
                value = str(value).lower()
            lines.append(javaproperties.join_key_value(key, str(value)))
        return "\n".join(lines) + "\n"


def read_properties(text: str, source: str = "<config>") -> dict[str, str]:
    """Every key and value of a Java properties file, by java.util.Properties' rules (``=``, ``:`` or blank
    separators, ``\\`` line continuations, escapes, ``#`` and ``!`` comments), with a maintained parser.

    Values are trimmed, as Apache BookKeeper's configuration reader (Commons Configuration) trims them.
    """
    try:
        values = javaproperties.loads(text)
    except (ValueError, javaproperties.InvalidUEscapeError) as exc:
        raise ConfigError(f"{source}: not a Java properties file: {exc}") from None
    return {key: value.strip() for key, value in values.items()}


def describe_validation_error(exc: ValidationError, source: str) -> str:
    """One line per problem, naming the BookKeeper key and what is allowed."""
    problems = []
    for err in exc.errors():
        key = ".".join(str(p) for p in err["loc"])
        if err["type"] == "extra_forbidden":
            problems.append(unknown_key_message(key))
        elif not key:  # a relation between keys (model validator): its message names them
            problems.append(str(err["msg"]).removeprefix("Value error, "))
        else:
            msg = str(err["msg"]).removeprefix("Value error, ")
            shown = "<hidden>" if "password" in key.lower() else repr(err.get("input"))  # never log a secret
            problems.append(f"{key}: {msg} (got {shown}{allowed_range(key)})")
    return f"invalid bookie configuration in {source}:\n  " + "\n  ".join(problems)


def allowed_range(key: str) -> str:
    """``; allowed: 0 < diskUsageThreshold < 1`` from the field's bounds, or ``""``."""
    name = next((n for n, f in BookieConfig.model_fields.items() if key in (n, f.alias)), None)
    if name is None:
        return ""
    low = high = ""
    for m in BookieConfig.model_fields[name].metadata:
        for attr, text in (("gt", "<"), ("ge", "<=")):
            if getattr(m, attr, None) is not None:
                low = f"{getattr(m, attr)} {text} "
        for attr, text in (("lt", "<"), ("le", "<=")):
            if getattr(m, attr, None) is not None:
                high = f" {text} {getattr(m, attr)}"
    return f"; allowed: {low}{key}{high}" if low or high else ""


def known_keys() -> list[str]:
    return sorted(f.alias or name for name, f in BookieConfig.model_fields.items())


def unknown_key_message(key: str) -> str:
    """``fooBar: unknown configuration key`` plus the closest known keys (a typo is never ignored)."""
    close = difflib.get_close_matches(key, known_keys(), n=3, cutoff=0.6)
    hint = f" (did you mean {' or '.join(close)}?)" if close else ""
    return f"{key}: unknown configuration key{hint}"


def parse_metadata_service_uri(uri: str) -> tuple[str, str]:
    """``zk+hierarchical://h1:2181;h2:2181/ledgers`` -> (``h1:2181,h2:2181``, ``/ledgers``)."""
    scheme, sep, rest = uri.partition("://")
    if not sep or not scheme.startswith("zk"):
        raise ConfigError(f"metadataServiceUri: expected zk+hierarchical://hosts/path, got {uri!r}")
    hosts, slash, path = rest.partition("/")
    return hosts.replace(";", ","), "/" + path if slash else "/ledgers"


LedgerManagerType = Literal["hierarchical", "flat", "longhierarchical"]
