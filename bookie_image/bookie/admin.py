"""The bookie's admin operations behind the REST API (``bookie.http``): configuration, state, disks, cluster
views, ledgers, metrics. ``AdminService`` implements ``bookie.http.backend.AdminBackend`` over a running bookie
process (``bookie.server.BookieServer``), which keeps only the process lifecycle.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sized
from typing import Any, Protocol

from pydantic import ValidationError

from bookie.client.config import ClientConfig
from bookie.client.connection import BookieAddressResolver, BookieClient
from bookie.config import BookieConfig, describe_validation_error, unknown_key_message
from bookie.http.backend import AutorecoveryAdmin, EntryLogFilesAdmin, GcAdmin
from bookie.log_reads import EntryLogReads
from bookie.metadata.ledger_metadata import LedgerMetadata, serialize_ledger_metadata
from bookie.metadata.store import MetadataStore, NoNode
from bookie.processor import RequestProcessor
from bookie.protocol.codes import StatusCode
from bookie.protocol.entry import DigestType, digest_manager, package_entry
from bookie.protocol.messages import GetBookieInfoResponse
from bookie.security import SECURITY_FIELDS, client_tls
from bookie.state import DiskUsage, StateManager
from bookie.storage.engine import StorageEngine
from bookie.storage.errors import NoEntryError, NoLedgerError

log = logging.getLogger(__name__)
# Keys (snake_case) read once at start-up that guard the bookie itself: an admin call must not lift them.
START_UP_ONLY_PREFIXES = ("http_server_", "zk_")


class BookieGc(GcAdmin, Protocol):
    """The GC as the admin service sees it: the REST calls plus its metrics."""

    def metrics(self) -> tuple[dict[str, float], dict[str, float]]: ...


class BookieProcess(Protocol):
    """What the admin service reads from the running bookie (``bookie.server.BookieServer``)."""

    @property
    def conf(self) -> BookieConfig: ...
    @property
    def bookie_id(self) -> str: ...
    @property
    def metadata(self) -> MetadataStore: ...
    @property
    def state(self) -> StateManager: ...
    @property
    def engine(self) -> StorageEngine: ...
    @property
    def processor(self) -> RequestProcessor: ...
    @property
    def usages(self) -> list[DiskUsage]: ...
    @property
    def connections(self) -> Sized: ...
    @property
    def gc(self) -> BookieGc | None: ...
    @property
    def autorecovery(self) -> AutorecoveryAdmin | None: ...
    def is_ready(self) -> bool: ...
    def disk_space(self) -> tuple[int, int]: ...
    def metrics_text(self) -> tuple[bytes, str]: ...


class AdminService:
    """The admin operations of one bookie (``bookie.http.backend.AdminBackend``)."""

    def __init__(self, bookie: BookieProcess) -> None:
        self.bookie = bookie
        self._log_reads: EntryLogReads | None = None

    @property
    def bookie_id(self) -> str:
        return self.bookie.bookie_id

    @property
    def gc(self) -> GcAdmin | None:
        return self.bookie.gc

    @property
    def autorecovery(self) -> AutorecoveryAdmin | None:
        return self.bookie.autorecovery

    @property
    def entry_log_files(self) -> EntryLogFilesAdmin | None:
        """Created at first use: storage is open only once the bookie passed its cookie check."""
        if self._log_reads is None:
            self._log_reads = EntryLogReads(self.bookie.conf, self.bookie.engine)
        return self._log_reads

    def close(self) -> None:
        if self._log_reads is not None:
            self._log_reads.close()

    def server_config(self) -> dict[str, Any]:
        return {k: _jsonable(v) for k, v in self.bookie.conf.model_dump(by_alias=True).items()}

    def update_server_config(self, values: dict[str, Any]) -> None:
        """``PUT server_config``: all or nothing. Raises ValueError naming the keys and allowed values."""
        fields = {f.alias or name: name for name, f in BookieConfig.model_fields.items()}
        unknown = [k for k in values if k not in fields and k not in BookieConfig.model_fields]
        if unknown:
            raise ValueError("; ".join(unknown_key_message(k) for k in sorted(unknown)))
        fixed = sorted(k for k in values if fields.get(k, k).startswith(START_UP_ONLY_PREFIXES)
                       or fields.get(k, k) in SECURITY_FIELDS)
        if fixed:  # the admin API's guard, ZooKeeper's and the bookie port's TLS and roles were built at start
            raise ValueError(f"{', '.join(fixed)}: read at start-up only (the admin API, ZooKeeper security and the "
                             "bookie port's TLS and authorization cannot be changed through the admin API); change "
                             "the configuration file and restart")
        merged = {**self.bookie.conf.model_dump(by_alias=True), **values}
        try:
            # Validate the whole result first: assigning field by field would check each value against the
            # old values of the others (a valid pair of thresholds refused) and leave half of a refused
            # change applied.
            checked = BookieConfig.model_validate(merged)
        except ValidationError as exc:
            raise ValueError(describe_validation_error(exc, "server_config")) from None
        for key in values:
            name = fields.get(key, key)
            self.bookie.conf.__dict__[name] = getattr(checked, name)

    def state_json(self) -> dict[str, Any]:
        st = self.bookie.state.status
        return {"running": st.running, "readOnly": st.read_only, "shuttingDown": st.shutting_down,
                "availableForHighPriorityWrites": self.bookie.state.available_for_high_priority_writes,
                "readOnlyReason": st.reason.value, "fullDirs": list(st.full_dirs), "warnDirs": list(st.warn_dirs),
                "journalDamage": [{"file": d.file, "offset": d.offset, "reason": d.reason, "keptAs": d.kept}
                                  for d in self.bookie.engine.journal_damage]}

    def is_ready(self) -> bool:
        return self.bookie.is_ready()

    async def set_read_only(self, read_only: bool) -> None:
        await self.bookie.state.set_manual(read_only)

    def disk_space(self) -> tuple[int, int]:
        return self.bookie.disk_space()

    async def sanity_check(self) -> bool:
        """Write, read back and forget one entry in a private ledger id (never in metadata)."""
        if self.bookie.state.read_only:
            return True
        ledger_id = -(int(time.time() * 1000) % 2**40) - 1  # negative: no client can ever use it
        body = package_entry(digest_manager(DigestType.CRC32C), ledger_id, 0, -1, 1, b"x")
        try:
            await self.bookie.engine.add_entry(body, b"sanity")
            ok = await self.bookie.engine.read_entry(ledger_id, 0) == body
        finally:
            await self.bookie.engine.delete_ledger(ledger_id)
        return ok

    def last_log_mark(self) -> tuple[int, int]:
        mark = self.bookie.engine.last_checkpoint
        return (mark.log_id, mark.offset) if mark else (0, 0)

    def list_disk_files(self) -> dict[str, list[str]]:
        """File names (not paths), as BookKeeper's ``list_disk_file`` prints them."""
        return self.bookie.engine.disk_files()

    def metrics_text(self) -> tuple[bytes, str]:
        return self.bookie.metrics_text()

    async def cluster_info(self) -> dict[str, Any]:
        """BookKeeper's ``ClusterInfoService``: bookies with a cookie are the cluster's bookies."""
        writable = await self.bookie.metadata.list_bookies(False)
        read_only = await self.bookie.metadata.list_bookies(True)
        known = await self.bookie.metadata.list_cookies()
        total = len(set(known) | set(writable) | set(read_only))
        under = await self.bookie.metadata.list_underreplicated()
        auditor = await self.bookie.metadata.auditor_id()
        return {"auditorElected": auditor is not None, "auditorId": auditor or "",
                "clusterUnderReplicated": bool(under),
                "ledgerReplicationEnabled": await self.bookie.metadata.is_replication_enabled(),
                "totalBookiesCount": total, "writableBookiesCount": len(writable),
                "readonlyBookiesCount": len(read_only),
                "unavailableBookiesCount": total - len(writable) - len(read_only)}

    async def list_bookies(self, read_only: bool) -> list[str]:
        return await self.bookie.metadata.list_bookies(read_only)

    async def bookie_disk_info(self) -> dict[str, tuple[int, int]]:
        """Free and total disk space of every writable bookie, asked over the wire (GetBookieInfo) like
        BookKeeper's ``BookieInfoReader``; bookies that do not answer are left out."""
        out: dict[str, tuple[int, int]] = {self.bookie.bookie_id: self.bookie.disk_space()}
        others = [b for b in await self.bookie.metadata.list_bookies(False) if b != self.bookie.bookie_id]
        if not others:
            return out
        conf = self.bookie.conf
        client = BookieClient(ClientConfig(zk_servers=conf.zk_connect, ledgers_root=conf.ledgers_root,
                                           read_timeout_s=5, connect_timeout_s=5, tls=client_tls(conf)),
                              BookieAddressResolver(self.bookie.metadata.bookie_service_info))
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
        return await self.bookie.metadata.all_ledger_ids()

    async def ledger_metadata(self, ledger_id: int) -> dict[str, Any] | None:
        try:
            md = (await self.bookie.metadata.read_ledger_metadata(ledger_id)).value
        except NoNode:
            return None
        return metadata_json(md)

    async def ledger_metadata_bytes(self, ledger_id: int) -> bytes | None:
        try:
            return serialize_ledger_metadata((await self.bookie.metadata.read_ledger_metadata(ledger_id)).value)
        except NoNode:
            return None

    async def read_ledger(self, ledger_id: int, first: int, last: int) -> dict[str, str]:
        """Entries of the ledger stored on this bookie, payload only (digest stripped)."""
        md = (await self.bookie.metadata.read_ledger_metadata(ledger_id)).value
        skip = 32 + (len(digest_manager(md.digest_type).compute((b"",))) if md.digest_type else 0)
        engine = self.bookie.engine
        end = last if last >= 0 else (md.last_entry_id if md.closed else engine.last_add_confirmed(ledger_id))
        out: dict[str, str] = {}
        for entry_id in range(first, end + 1):
            try:
                body = await engine.read_entry(ledger_id, entry_id)
            except (NoEntryError, NoLedgerError):
                continue
            out[str(entry_id)] = body[skip:].decode(errors="replace")
        return out

    async def delete_ledger(self, ledger_id: int) -> None:
        await self.bookie.metadata.delete_ledger_metadata(ledger_id)


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


def _jsonable(value: Any) -> Any:
    if isinstance(value, list):
        return ",".join(str(v) for v in value)
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)
