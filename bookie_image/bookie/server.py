"""The bookie process: storage engine + TCP listener + admin REST API + registration in ZooKeeper.

Start order follows BookKeeper: metadata (connect, layout) -> cookies -> storage (journal replay) ->
listener -> HTTP -> registration (writable or read-only). Stop is the reverse, so a bookie is unregistered
before it stops answering. ``run_bookie`` is the ``bookie serve`` entry point.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
import time
from pathlib import Path

import uvloop
from aiohttp import web

from bookie import cookies, disks, heap, metrics, tls
from bookie.admin import AdminService
from bookie.client import BookKeeper, ClientConfig
from bookie.client.autorecovery import Autorecovery
from bookie.config import BookieConfig
from bookie.gc.collector import GarbageCollector
from bookie.http.api import build_app
from bookie.http.auth import AdminAuth, auth_middleware
from bookie.http.https import HttpsConfigError, ServerCertificates, keep_certificates_fresh
from bookie.listener import BookieConnection, Connections
from bookie.metadata import service_info
from bookie.metadata.security import ZkSecurityError
from bookie.metadata.store import MetadataError, MetadataStore
from bookie.processor import RequestProcessor
from bookie.security import BookieSecurity, client_tls
from bookie.state import DiskThresholds, DiskUsage, ReadOnlyReason, StateManager
from bookie.storage.engine import StorageEngine
from bookie.storage.index_format import IncompatibleDiskError
from bookie.termination import INCOMPATIBLE_DISK, INVALID_CONFIG, METADATA_UNREACHABLE, StartFailure, reason_for_error
from bookie.tokens import TokenFileError

log = logging.getLogger(__name__)


# Exit status after a fail-stop (storage I/O error), as BookKeeper's ExitCode.BOOKIE_EXCEPTION.
EXIT_STORAGE_FAILED = 5


class StartupError(StartFailure):
    """The bookie cannot start; the message says why and what to do, ``reason`` classifies it."""


class BookieServer:
    """One bookie process; its admin REST API is served by ``bookie.admin.AdminService``."""

    def __init__(self, conf: BookieConfig) -> None:
        self.conf = conf
        self.bookie_id = conf.effective_bookie_id
        try:  # reads zkDigestAuthFile: a credential that cannot be read stops the start, naming the file
            self.metadata = MetadataStore.from_config(conf, on_session_expired=self._on_session_expired)
        except ZkSecurityError as exc:
            raise StartupError(str(exc), INVALID_CONFIG) from None
        # Storage is opened only after the cookie check: opening it creates files (RocksDB, current/) in the
        # directories, which must not happen in a foreign or wiped directory, nor make a new one look used.
        self._engine: StorageEngine | None = None
        self._processor: RequestProcessor | None = None
        self.security: BookieSecurity | None = None
        thresholds = DiskThresholds(conf.disk_usage_threshold, conf.disk_usage_warn_threshold,
                                    conf.effective_lwm_threshold, conf.read_only_mode_on_any_disk_full_enabled)
        self.state = StateManager(thresholds, self._register, forced_read_only=conf.force_read_only_bookie,
                                  read_only_enabled=conf.read_only_mode_enabled)
        self.gc = GarbageCollector(conf, lambda: self.engine, self.metadata, bookie_id=self.bookie_id,
                                   on_space_freed=self.check_disks_now, state=self.state)
        self.autorecovery: Autorecovery | None = None
        self.connections = Connections()
        self.usages: list[DiskUsage] = []
        self._tcp: asyncio.Server | None = None
        self._http: web.AppRunner | None = None
        self._metrics_http: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._ready = False
        self._started_at = time.time()
        self.admin = AdminService(self)
        self.stopped = asyncio.Event()
        # Set when storage failed for good (fail-stop): the process exits with it once stopped.
        self.exit_code = 0
        self._stopping = False
        self._disk_full_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        try:  # before anything is written: a bookie with unreadable certificates must not join the cluster
            self.security = await asyncio.to_thread(BookieSecurity.from_config, self.conf)
        except tls.TLSConfigError as exc:
            raise StartupError(f"TLS: {exc}", INVALID_CONFIG) from None
        await asyncio.to_thread(cookies.check_writable, cookies.cookie_dirs(self.conf))
        await self._connect_metadata()
        try:
            await cookies.check_and_write(self.conf, self.metadata, await self.metadata.instance_id())
        except cookies.CookieCheckFailed as exc:
            raise StartupError(f"cookie check failed: {exc}", exc.reason) from None
        try:
            self._engine = StorageEngine(self.conf)
        except IncompatibleDiskError as exc:
            raise StartupError(str(exc), INCOMPATIBLE_DISK) from None
        self._engine.on_fatal = self._fail_stop
        self._engine.on_disk_full = self._disk_full
        self._processor = RequestProcessor(self.conf, self._engine, self.state, self.disk_space)
        await self._engine.start()
        self._hold_read_only_if_journal_damaged(self._engine)
        await self._refresh_disks()
        loop = asyncio.get_running_loop()
        security = self.security
        self._tcp = await loop.create_server(
            lambda: BookieConnection(self.processor, self.conf.netty_max_frame_size_bytes, self.connections,
                                     security),
            self.conf.listening_interface_address, self.conf.bookie_port, reuse_address=True)
        self._prepare_autorecovery()
        auth = await self._admin_auth()
        if self.conf.http_server_enabled:
            await self._start_http(auth)
        if self.conf.prometheus_stats_http_enable:
            self._metrics_http = await metrics.serve_dedicated_port(self.conf, self.metrics_text,
                                                                    [auth_middleware(auth)])
        if self.gc is not None and hasattr(self.gc, "start"):
            await self.gc.start()
        await self.state.start()
        await self.state.apply_disk_usage(self.usages)
        if self.autorecovery is not None:
            await self.autorecovery.start()
        self._tasks.append(asyncio.create_task(self._disk_monitor(), name="disk-monitor"))
        self._tasks.append(asyncio.create_task(metrics.rollover_forever(self), name="metrics-rollover"))
        if security is not None:
            self._tasks.append(asyncio.create_task(security.refresh_forever(), name="tls-refresh"))
        self._ready = True
        log.info("bookie %s ready (protocol port %d, http port %d)", self.bookie_id, self.conf.bookie_port,
                 self.conf.http_server_port)

    async def _admin_auth(self) -> AdminAuth:
        """The credential check of the admin API and of the metrics port, its token files loaded."""
        auth = AdminAuth.from_config(self.conf)
        try:
            await auth.start()
        except TokenFileError as exc:
            raise StartupError(str(exc), INVALID_CONFIG) from None
        return auth

    async def _start_http(self, auth: AdminAuth) -> None:
        """The admin REST API: on the bookie's own address, HTTPS when configured, mutating calls
        authenticated (``bookie.http.auth``)."""
        try:
            certificates = await asyncio.to_thread(ServerCertificates.from_config, self.conf)
        except HttpsConfigError as exc:
            raise StartupError(str(exc), INVALID_CONFIG) from None
        self._http = web.AppRunner(build_app(self.admin, auth), access_log=None)
        await self._http.setup()
        await web.TCPSite(self._http, self.conf.effective_http_server_host, self.conf.http_server_port,
                          ssl_context=certificates.context if certificates else None).start()
        if certificates is not None:
            self._tasks.append(asyncio.create_task(keep_certificates_fresh(certificates, self.conf),
                                                   name="https-certificates"))

    @property
    def engine(self) -> StorageEngine:
        if self._engine is None:
            raise RuntimeError("storage is not open: the bookie has not passed its cookie check")
        return self._engine

    @property
    def processor(self) -> RequestProcessor:
        if self._processor is None:
            raise RuntimeError("storage is not open: the bookie has not passed its cookie check")
        return self._processor

    async def _connect_metadata(self) -> None:
        try:
            await self.metadata.connect()
            # Idempotent and safe when several bookies of a new cluster start at once; refuses a foreign layout.
            await self.metadata.init_cluster()
        except MetadataError as exc:
            raise StartupError(f"metadata service {self.conf.zk_connect}{self.conf.ledgers_root}: {exc}",
                               METADATA_UNREACHABLE) from None

    def _hold_read_only_if_journal_damaged(self, engine: StorageEngine) -> None:
        """A replay found damaged journal groups (this start or an earlier one): serve what is here, read-only,
        until an operator has looked at the damage; writing on would hide it under new data."""
        if not engine.journal_damage:
            return
        kept = sorted({str(Path(d.kept).parent) for d in engine.journal_damage})
        why = (f"{len(engine.journal_damage)} damaged journal group(s), first: {engine.journal_damage[0].describe()}."
               f" Acknowledged entries of those groups may be missing on this bookie (their other replicas have"
               f" them). Inspect {', '.join(kept)} (bookie journal dump), then remove it and restart the bookie to"
               f" make it writable again")
        log.error("bookie %s starts read-only: %s", self.bookie_id, why)
        self.state.hold_read_only(ReadOnlyReason.JOURNAL_CORRUPT, why)

    def _fail_stop(self, reason: str) -> None:
        """Storage can no longer make writes durable: stop as BookKeeper's death watcher does, so clients
        leave this bookie (it is unregistered, ``is_ready`` fails) and the supervisor restarts it."""
        if self.exit_code:
            return
        log.critical("bookie %s is shutting down: %s", self.bookie_id, reason)
        self.exit_code = EXIT_STORAGE_FAILED
        self._ready = False
        task = asyncio.ensure_future(self._stop_after_failure())
        self._tasks.append(task)

    def _disk_full(self, why: str) -> None:
        if not self.state.read_only and self._disk_full_task is None:
            self._disk_full_task = asyncio.ensure_future(self.state.mark_disk_full(why))
            self._disk_full_task.add_done_callback(self._disk_full_done)

    def _disk_full_done(self, task: asyncio.Task[None]) -> None:
        self._disk_full_task = None
        if not task.cancelled() and task.exception() is not None:
            log.error("could not turn read-only: %r", task.exception())

    async def _stop_after_failure(self) -> None:
        try:
            await self.stop()
        except Exception:  # flushing what it can: a second failure must not keep the process alive
            log.exception("bookie %s: stopping after a storage failure failed", self.bookie_id)
            self.stopped.set()

    async def stop(self) -> None:
        """Unregister, stop accepting, finish in-flight requests, checkpoint, close."""
        if self._stopping:
            await self.stopped.wait()
            return
        self._stopping = True
        self._ready = False
        self.state.mark_shutting_down()
        for task in self._tasks:
            if task is not asyncio.current_task():
                task.cancel()
        with contextlib.suppress(MetadataError):
            await self.metadata.unregister_bookie(self.bookie_id, self.state.read_only)
        if self.gc is not None and hasattr(self.gc, "stop"):
            await self.gc.stop()
        if self.autorecovery is not None:
            await self.autorecovery.stop()
            await self.autorecovery.bk.close()
        if self._tcp is not None:
            self._tcp.close()
        for conn in list(self.connections):
            conn.close()
        if self._http is not None:
            await self._http.cleanup()
        self.admin.close()
        if self._metrics_http is not None:
            await self._metrics_http.cleanup()
        try:
            if self._engine is not None:
                await self._engine.close()
        finally:
            await self.metadata.close()
            self.stopped.set()
        log.info("bookie %s stopped", self.bookie_id)

    def _prepare_autorecovery(self) -> None:
        """autoRecoveryDaemonEnabled: auditor + replication worker sharing this bookie's ZooKeeper session."""
        if not self.conf.auto_recovery_daemon_enabled:
            return
        # Rack-aware with the racks of /bookies (published by the operator from the nodes' zones): a re-replicated
        # copy goes to another zone than the copies left. Without rack information every bookie is in the
        # default rack and the choice is random, as BookKeeper's default placement.
        client = BookKeeper(ClientConfig(zk_servers=self.conf.zk_connect, ledgers_root=self.conf.ledgers_root,
                                         zk_security=self.metadata.security, placement="rack",
                                         rack_resolver="zookeeper", tls=client_tls(self.conf)),
                            store=self.metadata)
        self.autorecovery = Autorecovery(client, self.bookie_id,
                                         lost_bookie_recovery_delay_s=self.conf.lost_bookie_recovery_delay)

    async def _register(self, read_only: bool) -> None:
        await self.metadata.register_bookie(self.bookie_id, read_only, self.service_info())

    def service_info(self) -> bytes:
        """The endpoints clients dial: needed when the bookie id is a hostname nobody can resolve (Kubernetes
        without cluster DNS), and what Apache BookKeeper publishes too."""
        host = self.conf.advertised_address or _concrete(self.conf.listening_interface_address)
        if host is None:
            try:
                host = service_info.parse_bookie_id(self.bookie_id)[0]
            except ValueError:
                host = "127.0.0.1"
        http = None
        if self.conf.http_server_enabled:
            http = (_concrete(self.conf.effective_http_server_host) or host, self.conf.http_server_port)
        # As BookKeeper's BookieService: the "tls" extension on the bookie-rpc endpoint when TLS is configured.
        extensions = [service_info.TLS_EXTENSION] if self.conf.tls_enabled else []
        return service_info.encode(host, self.bound_port(), http, extensions=extensions)

    def bound_port(self) -> int:
        """The protocol port actually listened on (``bookiePort=0`` picks a free one)."""
        if self._tcp is not None and self._tcp.sockets:
            return int(self._tcp.sockets[0].getsockname()[1])
        return self.conf.bookie_port

    async def _on_session_expired(self) -> None:
        log.warning("ZooKeeper session replaced: registering %s again", self.bookie_id)
        await self.state.reregister()

    async def _disk_monitor(self) -> None:
        while True:
            await asyncio.sleep(self.conf.disk_check_interval / 1000)
            try:
                await self.check_disks_now()
            except Exception:
                log.exception("disk check failed")

    async def _refresh_disks(self) -> None:
        measured = await asyncio.to_thread(disks.measure, self.conf.ledger_directories)
        if self._engine is None:
            self.usages = measured
            return
        self._engine.update_disk_space({u.path: (u.free_bytes, u.total_bytes) for u in measured})
        # What the next checkpoint will write counts as used: the state follows the disk the bookie is
        # committed to, not the one it has now.
        pending = {str(d.ledger_dir): d.pending_bytes() for d in self._engine.dirs}
        self.usages = [disks.with_pending(u, pending.get(u.path, 0)) for u in measured]

    async def check_disks_now(self) -> None:
        """One disk check (on the schedule, and after GC frees space). An index that kept a full disk's write
        error stops the bookie here, before the disks' room would make it writable again."""
        await self._refresh_disks()
        if self._engine is not None and await self._engine.stop_if_an_index_is_stuck():
            return
        await self.state.apply_disk_usage(self.usages)

    def is_ready(self) -> bool:
        return self._ready and self.metadata.connected

    def disk_space(self) -> tuple[int, int]:
        return disks.totals(self.usages)

    def metrics_text(self) -> tuple[bytes, str]:
        """``/metrics``: Apache BookKeeper's Prometheus exposition of this bookie."""
        return metrics.render(metrics.snapshot_of(self))


def _concrete(address: str) -> str | None:
    """A listen address clients can dial; None for the wildcards."""
    return None if address in ("", "0.0.0.0", "::") else address


async def serve(conf: BookieConfig) -> int:
    server = BookieServer(conf)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    try:
        await server.start()
    except StartFailure as exc:
        log.error("bookie %s cannot start: %s", server.bookie_id, exc)
        await _close_quietly(server)
        raise
    except Exception as exc:  # a full disk, a taken port, ...: still reported with its reason
        log.exception("bookie %s cannot start", server.bookie_id)
        await _close_quietly(server)
        raise StartupError(f"{type(exc).__name__}: {exc}", reason_for_error(exc)) from exc
    heap.settle_after_start()
    signalled = asyncio.ensure_future(stop.wait())
    stopped = asyncio.ensure_future(server.stopped.wait())
    await asyncio.wait((signalled, stopped), return_when=asyncio.FIRST_COMPLETED)
    signalled.cancel()
    stopped.cancel()
    if not server.stopped.is_set():
        log.info("signal received: stopping bookie %s", server.bookie_id)
    await server.stop()
    await server.stopped.wait()
    return server.exit_code


async def _close_quietly(server: BookieServer) -> None:
    with contextlib.suppress(Exception):
        if server._engine is not None:
            await server._engine.close()
    with contextlib.suppress(Exception):
        await server.metadata.close()


def run_bookie(conf: BookieConfig) -> int:
    """Serve until SIGTERM/SIGINT; raises ``StartFailure`` when the bookie cannot start."""
    return uvloop.run(serve(conf))
