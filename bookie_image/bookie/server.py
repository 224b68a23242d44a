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
from typing import Any

import uvloop
from aiohttp import web
from pydantic import ValidationError

from bookie import cookies, disks
from bookie.config import BookieConfig, describe_validation_error, unknown_key_message
from bookie.gc.collector import GarbageCollector
from bookie.http.api import build_app
from bookie.listener import BookieConnection
from bookie.metadata import service_info
from bookie.metadata.ledger_metadata import LedgerMetadata, serialize_ledger_metadata
from bookie.metadata.store import MetadataError, MetadataStore, NoNode
from bookie.metrics import registry_for, render
from bookie.processor import RequestProcessor
from bookie.protocol.entry import digest_manager
from bookie.state import DiskThresholds, DiskUsage, StateManager
from bookie.storage.engine import StorageEngine
from bookie.storage.errors import NoEntryError, NoLedgerError
from bookie.termination import METADATA_UNREACHABLE, StartFailure, reason_for_error

log = logging.getLogger(__name__)


# Exit status after a fail-stop (storage I/O error), as BookKeeper's ExitCode.BOOKIE_EXCEPTION.
EXIT_STORAGE_FAILED = 5


class StartupError(StartFailure):
    """The bookie cannot start; the message says why and what to do, ``reason`` classifies it."""


class BookieServer:
    """One bookie. Implements ``bookie.http.api.AdminBackend`` for the REST API."""

    def __init__(self, conf: BookieConfig) -> None:
        self.conf = conf
        self.bookie_id = conf.effective_bookie_id
        self.metadata = MetadataStore.from_config(conf, on_session_expired=self._on_session_expired)
        # Storage is opened only after the cookie check: opening it creates files (RocksDB, current/) in the
        # directories, which must not happen in a foreign or wiped directory, nor make a new one look used.
        self._engine: StorageEngine | None = None
        self._processor: RequestProcessor | None = None
        thresholds = DiskThresholds(conf.disk_usage_threshold, conf.disk_usage_warn_threshold,
                                    conf.effective_lwm_threshold, conf.read_only_mode_on_any_disk_full_enabled)
        self.state = StateManager(thresholds, self._register, forced_read_only=conf.force_read_only_bookie,
                                  read_only_enabled=conf.read_only_mode_enabled)
        self.gc: Any = GarbageCollector(conf, lambda: self.engine, self.metadata, bookie_id=self.bookie_id,
                                        on_space_freed=self.check_disks_now, state=self.state)
        self.autorecovery: Any = None
        self.connections: set[BookieConnection] = set()
        self.usages: list[DiskUsage] = []
        self._tcp: asyncio.Server | None = None
        self._http: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._ready = False
        self._started_at = time.time()
        self._metrics = registry_for(self.metrics_snapshot)
        self.stopped = asyncio.Event()
        # Set when storage failed for good (fail-stop): the process exits with it once stopped.
        self.exit_code = 0
        self._stopping = False
        self._disk_full_task: asyncio.Task[None] | None = None

    # ------------------------------------------------------------------ lifecycle
    async def start(self) -> None:
        await asyncio.to_thread(cookies.check_writable, cookies.cookie_dirs(self.conf))
        await self._connect_metadata()
        try:
            await cookies.check_and_write(self.conf, self.metadata)
        except cookies.CookieCheckFailed as exc:
            raise StartupError(f"cookie check failed: {exc}", exc.reason) from None
        self._engine = StorageEngine(self.conf)
        self._engine.on_fatal = self._fail_stop
        self._engine.on_disk_full = self._disk_full
        self._processor = RequestProcessor(self.conf, self._engine, self.state, self.disk_space)
        await self._engine.start()
        await self._refresh_disks()
        loop = asyncio.get_running_loop()
        self._tcp = await loop.create_server(
            lambda: BookieConnection(self.processor, self.conf.netty_max_frame_size_bytes, self.connections),
            self.conf.listening_interface_address, self.conf.bookie_port, reuse_address=True)
        self._prepare_autorecovery()
        if self.conf.http_server_enabled:
            self._http = web.AppRunner(build_app(self), access_log=None)
            await self._http.setup()
            await web.TCPSite(self._http, self.conf.http_server_host, self.conf.http_server_port).start()
        if self.gc is not None and hasattr(self.gc, "start"):
            await self.gc.start()
        await self.state.start()
        await self.state.apply_disk_usage(self.usages)
        if self.autorecovery is not None:
            await self.autorecovery.start()
        self._tasks.append(asyncio.create_task(self._disk_monitor(), name="disk-monitor"))
        self._ready = True
        log.info("bookie %s ready (protocol port %d, http port %d)", self.bookie_id, self.conf.bookie_port,
                 self.conf.http_server_port)

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
        from bookie.client import BookKeeper, ClientConfig
        from bookie.client.autorecovery import Autorecovery

        client = BookKeeper(ClientConfig(zk_servers=self.conf.zk_connect, ledgers_root=self.conf.ledgers_root),
                            store=self.metadata)
        self.autorecovery = Autorecovery(client, self.bookie_id,
                                         lost_bookie_recovery_delay_s=self.conf.lost_bookie_recovery_delay)

    def autorecovery_routes(self) -> dict[str, Any]:
        """/api/v1/autorecovery/* when autorecovery runs in this bookie (mounted by ``build_app``)."""
        return self.autorecovery.autorecovery_routes() if self.autorecovery is not None else {}

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
            http = (_concrete(self.conf.http_server_host) or host, self.conf.http_server_port)
        return service_info.encode(host, self.bound_port(), http)

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
                await self._refresh_disks()
                await self.state.apply_disk_usage(self.usages)
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
        """One disk check outside the schedule (used after GC frees space)."""
        await self._refresh_disks()
        await self.state.apply_disk_usage(self.usages)

    # ------------------------------------------------------------------ AdminBackend
    def server_config(self) -> dict[str, Any]:
        return {k: _jsonable(v) for k, v in self.conf.model_dump(by_alias=True).items()}

    def update_server_config(self, values: dict[str, Any]) -> None:
        """``PUT server_config``: all or nothing. Raises ValueError naming the keys and allowed values."""
        fields = {f.alias or name: name for name, f in BookieConfig.model_fields.items()}
        unknown = [k for k in values if k not in fields and k not in BookieConfig.model_fields]
        if unknown:
            raise ValueError("; ".join(unknown_key_message(k) for k in sorted(unknown)))
        merged = {**self.conf.model_dump(by_alias=True), **values}
        try:
            # Validate the whole result first: assigning field by field would check each value against the
            # old values of the others (a valid pair of thresholds refused) and leave half of a refused
            # change applied.
            checked = BookieConfig.model_validate(merged)
        except ValidationError as exc:
            raise ValueError(describe_validation_error(exc, "server_config")) from None
        for key in values:
            name = fields.get(key, key)
            self.conf.__dict__[name] = getattr(checked, name)

    def state_json(self) -> dict[str, Any]:
        st = self.state.status
        return {"running": st.running, "readOnly": st.read_only, "shuttingDown": st.shutting_down,
                "availableForHighPriorityWrites": self.state.available_for_high_priority_writes,
                "readOnlyReason": st.reason.value, "fullDirs": list(st.full_dirs), "warnDirs": list(st.warn_dirs)}

    def is_ready(self) -> bool:
        return self._ready and self.metadata.connected

    async def set_read_only(self, read_only: bool) -> None:
        await self.state.set_manual(read_only)

    def disk_space(self) -> tuple[int, int]:
        return disks.totals(self.usages)

    async def sanity_check(self) -> bool:
        """Write, read back and forget one entry in a private ledger id (never in metadata)."""
        if self.state.read_only:
            return True
        from bookie.protocol.entry import DigestType, package_entry

        ledger_id = -(int(time.time() * 1000) % 2**40) - 1  # negative: no client can ever use it
        body = package_entry(digest_manager(DigestType.CRC32C), ledger_id, 0, -1, 1, b"x")
        try:
            await self.engine.add_entry(body, b"sanity")
            ok = await self.engine.read_entry(ledger_id, 0) == body
        finally:
            await self.engine.delete_ledger(ledger_id)
        return ok

    def last_log_mark(self) -> tuple[int, int]:
        mark = self.engine.last_checkpoint
        return (mark.log_id, mark.offset) if mark else (0, 0)

    def list_disk_files(self) -> dict[str, list[str]]:
        """File names (not paths), as BookKeeper's ``list_disk_file`` prints them."""
        return self.engine.disk_files()

    def metrics_text(self) -> tuple[bytes, str]:
        return render(self._metrics)

    def metrics_snapshot(self) -> dict[str, Any]:
        write_cache_bytes, read_cache_bytes = self.engine.cache_sizes()
        counters = {k: float(v) for k, v in self.engine.stats.items()}
        counters.update(self.processor.limits.metrics())
        gauges = {"ledgers": float(len(self.engine.ledgers)), "read_only": float(self.state.read_only),
                  "adds_in_progress": float(self.processor.adds.count),
                  "reads_in_progress": float(self.processor.reads.count),
                  "long_polls_parked": float(self.processor.long_polls.count),
                  "connections": float(len(self.connections)),
                  "write_cache_bytes": float(write_cache_bytes), "read_cache_bytes": float(read_cache_bytes)}
        if self.gc is not None and hasattr(self.gc, "metrics"):
            gc_counters, gc_gauges = self.gc.metrics()
            counters.update(gc_counters)
            gauges.update(gc_gauges)
        return {"counters": counters, "gauges": gauges,
                "ledger_dirs": {u.path: u.used_fraction for u in self.usages}}

    async def cluster_info(self) -> dict[str, Any]:
        """BookKeeper's ``ClusterInfoService``: bookies with a cookie are the cluster's bookies."""
        writable = await self.metadata.list_bookies(False)
        read_only = await self.metadata.list_bookies(True)
        known = await self.metadata.list_cookies()
        total = len(set(known) | set(writable) | set(read_only))
        under = await self.metadata.list_underreplicated()
        auditor = await self.metadata.auditor_id()
        return {"auditorElected": auditor is not None, "auditorId": auditor or "",
                "clusterUnderReplicated": bool(under),
                "ledgerReplicationEnabled": await self.metadata.is_replication_enabled(),
                "totalBookiesCount": total, "writableBookiesCount": len(writable),
                "readonlyBookiesCount": len(read_only),
                "unavailableBookiesCount": total - len(writable) - len(read_only)}

    async def list_bookies(self, read_only: bool) -> list[str]:
        return await self.metadata.list_bookies(read_only)

    async def bookie_disk_info(self) -> dict[str, tuple[int, int]]:
        """Free and total disk space of every writable bookie, asked over the wire (GetBookieInfo) like
        BookKeeper's ``BookieInfoReader``; bookies that do not answer are left out."""
        from bookie.client import ClientConfig
        from bookie.client.connection import BookieAddressResolver, BookieClient
        from bookie.protocol.codes import StatusCode
        from bookie.protocol.messages import GetBookieInfoResponse

        out: dict[str, tuple[int, int]] = {self.bookie_id: self.disk_space()}
        others = [b for b in await self.metadata.list_bookies(False) if b != self.bookie_id]
        if not others:
            return out
        client = BookieClient(ClientConfig(zk_servers=self.conf.zk_connect, ledgers_root=self.conf.ledgers_root,
                                           read_timeout_s=5, connect_timeout_s=5),
                              BookieAddressResolver(self.metadata.bookie_service_info))
        try:
            answers = await asyncio.gather(*(client.get_bookie_info(b) for b in others), return_exceptions=True)
        finally:
            await client.close()
        for bookie_id, answer in zip(others, answers, strict=True):
            if not isinstance(answer, GetBookieInfoResponse) or answer.status != StatusCode.EOK:
                log.info("no disk info from %s: %s", bookie_id, answer)
                continue
            out[bookie_id] = (answer.free_disk_space or 0, answer.total_disk_capacity or 0)
        return dict(sorted(out.items()))

    async def list_ledgers(self) -> list[int]:
        return await self.metadata.all_ledger_ids()

    async def ledger_metadata(self, ledger_id: int) -> dict[str, Any] | None:
        try:
            md = (await self.metadata.read_ledger_metadata(ledger_id)).value
        except NoNode:
            return None
        return metadata_json(md)

    async def ledger_metadata_bytes(self, ledger_id: int) -> bytes | None:
        try:
            return serialize_ledger_metadata((await self.metadata.read_ledger_metadata(ledger_id)).value)
        except NoNode:
            return None

    async def read_ledger(self, ledger_id: int, first: int, last: int) -> dict[str, str]:
        """Entries of the ledger stored on this bookie, payload only (digest stripped)."""
        md = (await self.metadata.read_ledger_metadata(ledger_id)).value
        skip = 32 + (len(digest_manager(md.digest_type).compute((b"",))) if md.digest_type else 0)
        end = last if last >= 0 else (md.last_entry_id if md.closed else self.engine.last_add_confirmed(ledger_id))
        out: dict[str, str] = {}
        for entry_id in range(first, end + 1):
            try:
                body = await self.engine.read_entry(ledger_id, entry_id)
            except (NoEntryError, NoLedgerError):
                continue
            out[str(entry_id)] = body[skip:].decode(errors="replace")
        return out

    async def delete_ledger(self, ledger_id: int) -> None:
        await self.metadata.delete_ledger_metadata(ledger_id)


def metadata_json(md: LedgerMetadata) -> dict[str, Any]:
    """Ledger metadata in the shape of BookKeeper's REST answers."""
    return {
        "metadataFormatVersion": md.format_version, "ensembleSize": md.ensemble_size,
        "writeQuorumSize": md.write_quorum_size, "ackQuorumSize": md.ack_quorum_size,
        "lastEntryId": md.last_entry_id, "length": md.length, "state": md.state.name,
        "digestType": md.digest_type.name if md.digest_type else None, "ctime": md.ctime,
        "closed": md.closed, "allEnsembles": {str(k): list(v) for k, v in md.ensembles.items()},
        "customMetadata": {k: v.decode(errors="replace") for k, v in md.custom_metadata.items()},
    }


def _concrete(address: str) -> str | None:
    """A listen address clients can dial; None for the wildcards."""
    return None if address in ("", "0.0.0.0", "::") else address


def _jsonable(value: Any) -> Any:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


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
