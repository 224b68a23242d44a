"""``LedgerHandle``: adds (pipelined, ordered completion, ensemble changes), reads, LAC, close.

Write path, as BookKeeper's ``LedgerHandle``/``PendingAddOp``: entry ``e`` goes to ensemble positions
``(e + i) % ensembleSize`` for ``i < writeQuorum``; it is acknowledged once ``ackQuorum`` of them answered OK,
and acknowledgements are delivered strictly in entry order (the LAC only moves over a contiguous prefix).
A bookie that fails (error, timeout, lost connection) is replaced: a new ensemble segment starting at
LAC + 1 is written to the metadata, and every pending add is re-sent to the replacement. While the ensemble
changes, completions are held back so no entry is acknowledged on the strength of the failed bookie.
EFENCED (another client recovered the ledger) and EUA (wrong password) are fatal for the writer.

Read path: every entry's digest is verified; one replica is asked first (sticky when ensemble == write quorum)
and another after ``speculative_read_timeout_s`` or at once on an error.

One module over the usual size on purpose: adds, ensemble changes, LAC and reads all read and move the same
handle state (ensemble, LAC, pending adds, fencing), as in BookKeeper's ``LedgerHandle``.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Protocol, TypeVar

from bookie.client import errors as e
from bookie.client._native import Appender, PendingAdd
from bookie.client.config import ClientConfig
from bookie.client.connection import BookieClient, BookieConnection
from bookie.client.placement import PlacementPolicy
from bookie.metadata.ledger_manager import LedgerManager
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.session import BadVersion, ZooKeeperUnreachable
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode
from bookie.protocol.entry import (
    DigestManager,
    DigestMismatch,
    DigestType,
    digest_manager,
    generate_master_key,
    package_entry,
    package_lac,
    parse_entry_header,
    verify_entry,
    verify_lac,
)

log = logging.getLogger(__name__)

_READ_CONCURRENCY = 256
# The digests the Appender computes in C (the others go through package_entry): _native.c's DIGEST_* values.
_C_DIGESTS = {DigestType.CRC32: 1, DigestType.CRC32C: 2, DigestType.DUMMY: 3}
_THROTTLE_RETRIES = 50
# How long a metadata write waits for ZooKeeper at a time before it looks again whether the ledger failed meanwhile.
_ZOOKEEPER_WAIT_S = 1.0
T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    ledger_id: int
    entry_id: int
    payload: bytes
    length: int  # cumulative ledger length including this entry
    last_add_confirmed: int  # the writer's LAC when it sent this entry


def write_set(entry_id: int, ensemble_size: int, write_quorum: int) -> list[int]:
    """Ensemble positions that store ``entry_id`` (round-robin striping)."""
    return [(entry_id + i) % ensemble_size for i in range(write_quorum)]


# A long poll of a bookie whose LAC is unknown may be dropped by Apache BookKeeper's bookie (see
# long_poll_targets), so it is kept short: enough for a bookie to answer with its LAC.
UNINFORMED_POLL_MS = 100
NOT_KNOWN = -2  # a bookie's LAC before it answered a long poll (-1 is a real LAC: nothing confirmed yet)


def long_poll_targets(write_set_bookies: Sequence[str], ensemble: Sequence[str], known_lac: dict[str, int],
                      previous_lac: int) -> list[str]:
    """Which bookies a long-poll LAC read for entry ``previous_lac + 1`` asks, in order.

    Apache BookKeeper's bookie drops a long-poll waiter the first time that ledger's LAC moves on that bookie,
    even when it moves to a value not past the waiter's ``previousLAC`` (its LAC watchers are one-shot); the
    poll then answers only at its timeout. That happens whenever a poll reaches a bookie whose own LAC is
    behind ``previousLAC``, which striping makes common (the reader learned the LAC from another bookie). So
    ask first a bookie known to have reached ``previous_lac`` already: one of the entry's write set if there is
    one (it can piggyback the entry), else the ensemble's bookie with the highest known LAC (it answers as soon
    as the LAC passes, without the entry; the entry is then read normally). Otherwise, the write set in order.
    """
    targets = list(write_set_bookies)
    caught_up = [b for b in targets if known_lac.get(b, NOT_KNOWN) >= previous_lac]
    if caught_up:
        return caught_up + [b for b in targets if b not in caught_up]
    others = [b for b in ensemble if b not in targets and known_lac.get(b, NOT_KNOWN) >= previous_lac]
    if others:
        return [max(others, key=lambda b: known_lac[b]), *targets]
    return targets


def _entry_from(ledger_id: int, entry_id: int, body: bytes | memoryview, dm: DigestManager) -> LedgerEntry:
    payload = verify_entry(dm, body, ledger_id=ledger_id, entry_id=entry_id)
    header = parse_entry_header(body)
    return LedgerEntry(ledger_id, entry_id, bytes(payload), header.length, header.last_add_confirmed)


class LedgerClient(Protocol):
    """What an open ledger needs from the client that opened it (``BookKeeper`` provides it). Typed here, not
    by importing ``BookKeeper``, so the client module depends on ledgers and never the reverse."""

    @property
    def config(self) -> ClientConfig: ...
    @property
    def client(self) -> BookieClient: ...
    @property
    def placement(self) -> PlacementPolicy: ...
    @property
    def store(self) -> LedgerManager: ...
    async def writable_bookies(self) -> list[str]: ...


class LedgerHandle:
    """An open ledger. Obtained from ``BookKeeper.create_ledger`` (writable) or ``open_ledger``."""

    def __init__(self, bk: LedgerClient, ledger_id: int, metadata: LedgerMetadata, version: int,
                 password: bytes, *, writable: bool) -> None:
        self.bk = bk
        self.client = bk.client
        self.config = bk.config
        self.ledger_id = ledger_id
        self._loop = asyncio.get_running_loop()
        # The connection of each ensemble position (None: look it up): appends send to them directly.
        self._position_conns: list[BookieConnection | None] = []
        self.metadata = metadata
        self.metadata_version = version
        self.password = password
        digest_type = metadata.digest_type if metadata.digest_type is not None else DigestType.CRC32C
        self.digest = digest_manager(digest_type, password)
        self.master_key = generate_master_key(password)
        self.writable = writable
        self.recovering = False
        closed = metadata.state is LedgerState.CLOSED
        self.last_add_confirmed = metadata.last_entry_id if closed else -1
        length = metadata.length if closed else 0
        self._length_at_lac = length
        self._closed = closed
        self._closing = False
        self._error: e.BKError | None = None
        self._failed: dict[int, str] = {}  # ensemble position -> failed bookie awaiting replacement
        self._down: set[int] = set()  # positions left failed because no replacement existed
        # Every entry's write set, by entry id modulo the ensemble size: ensemble and write quorum sizes are
        # fixed for a ledger's life (an ensemble change replaces bookies, not positions).
        self._write_sets = [tuple(write_set(i, metadata.ensemble_size, metadata.write_quorum_size))
                            for i in range(metadata.ensemble_size)]
        self._changing = False
        self._ensemble_changes = 0
        self._change_task: asyncio.Task[None] | None = None
        self._sticky: int | None = None
        self._bookie_lac: dict[str, int] = {}  # LAC each bookie last reported to a long poll (see long_poll_targets)
        self._space = asyncio.Event()
        self._space.set()
        self._space_waiters = 0  # add() calls waiting for fewer adds in flight: only they need _space set
        self._explicit_lac_sent = -1
        self._lac_task: asyncio.Task[None] | None = None
        # The appends' hot path (C): a plain append is packaged, queued and sent there, and every bookie's answer
        # to an add goes through it (EOK counted there, the rest to _add_failed). It owns the appends' state (the
        # pending queue, last_add_pushed, length: the properties below); what it reads of this handle by name is
        # the AppenderHandle protocol of _native.pyi, which mypy checks this class against here.
        self._appender = Appender(self, self._loop, ledger_id, self.master_key, tuple(self._write_sets),
                                  metadata.ack_quorum_size, self.config.max_outstanding_adds,
                                  self.config.add_timeout_s, _C_DIGESTS.get(digest_type, 0), self._package,
                                  self.last_add_confirmed, length)
        if writable and self.config.explicit_lac_interval_s > 0:
            self._lac_task = asyncio.get_running_loop().create_task(self._explicit_lac_loop())

    # ------------------------------------------------------------ properties

    @property
    def metadata(self) -> LedgerMetadata:
        return self._metadata

    @metadata.setter
    def metadata(self, metadata: LedgerMetadata) -> None:
        self._metadata = metadata
        self._ensemble = metadata.ensembles[max(metadata.ensembles)]
        self._position_conns = [None] * len(self._ensemble)

    @property
    def last_add_pushed(self) -> int:
        """The last entry id given to an append (the Appender's)."""
        return self._appender.last_add_pushed

    @last_add_pushed.setter
    def last_add_pushed(self, entry_id: int) -> None:
        self._appender.last_add_pushed = entry_id

    @property
    def length(self) -> int:
        """The ledger's length up to ``last_add_pushed`` (the Appender's)."""
        return self._appender.length

    @length.setter
    def length(self, length: int) -> None:
        self._appender.length = length

    @property
    def _pending(self) -> deque[PendingAdd]:
        """The appends sent and not yet acknowledged, in entry order (the Appender's queue)."""
        return self._appender.pending

    @property
    def ensemble(self) -> tuple[str, ...]:
        """The current (last) ensemble."""
        return self._ensemble

    def _connection(self, index: int) -> BookieConnection:
        """The connection to the bookie at ensemble position ``index`` (this ledger's channel to it)."""
        conn = self._position_conns[index]
        if conn is None or conn.closed:
            conn = self._position_conns[index] = self.client.connection(self._ensemble[index], self.ledger_id)
        return conn

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def is_fenced(self) -> bool:
        return isinstance(self._error, e.LedgerFencedError)

    @property
    def pending_adds(self) -> int:
        return len(self._pending)

    def __repr__(self) -> str:
        return (f"LedgerHandle({self.ledger_id}, lac={self.last_add_confirmed}, "
                f"state={self.metadata.state.name}, ensemble={list(self.ensemble)})")

    # ------------------------------------------------------------ adds

    def append(self, data: bytes) -> asyncio.Future[int]:
        """Send an entry now; the future gets its entry id once acknowledged (in entry order)."""
        return self._appender.append(data)

    def _append_general(self, data: bytes) -> asyncio.Future[int]:
        """``append`` when it is not a plain one (the Appender's way): a ledger that failed or does not take adds
        answers at once; during an ensemble change, a recovery, or with a position down, through ``_push``."""
        future: asyncio.Future[int] = self._loop.create_future()
        if self._error is not None:
            future.set_exception(self._error)
            return future
        if not self.writable or self._closed or self._closing:
            future.set_exception(e.LedgerClosedError(f"ledger {self.ledger_id} is closed for adds"))
            return future
        self._push(bytes(data), future, None)
        return future

    async def add(self, data: bytes) -> int:
        """Add one entry and wait for its acknowledgement; waits first if too many adds are in flight."""
        while len(self._pending) >= self.config.max_outstanding_adds and self._error is None:
            self._space.clear()
            self._space_waiters += 1
            try:
                await self._space.wait()
            finally:
                self._space_waiters -= 1
        return await self.append(data)

    # Alias matching BookKeeper's names.
    add_entry = add

    def _push(self, data: bytes, future: asyncio.Future[int], verbatim: tuple[int, bytes, int] | None) -> None:
        if verbatim is None:
            entry_id = self.last_add_pushed + 1
            self.length += len(data)
            body = package_entry(self.digest, self.ledger_id, entry_id, self.last_add_confirmed, self.length,
                                 data)
            length = self.length
        else:  # recovery: re-replicate the bytes exactly as the writer packaged them
            entry_id, body, length = verbatim
            self.length = length
        self.last_add_pushed = entry_id
        op = PendingAdd(entry_id, body, length, future)
        self._pending.append(op)
        if not self._changing:
            self._send(op, self._write_positions(entry_id))

    def _write_set_of(self, entry_id: int) -> tuple[int, ...]:
        return self._write_sets[entry_id % len(self._write_sets)]

    def _write_positions(self, entry_id: int) -> Sequence[int]:
        positions = self._write_set_of(entry_id)
        return [i for i in positions if i not in self._down] if self._down else positions

    def _package(self, entry_id: int, last_add_confirmed: int, length: int, payload: bytes) -> bytes:
        """An entry with a digest the Appender does not compute itself (HMAC)."""
        return package_entry(self.digest, self.ledger_id, entry_id, last_add_confirmed, length, payload)

    def _send(self, op: PendingAdd, positions: Sequence[int]) -> None:
        """Send ``op`` to these ensemble positions (re-sends, and appends the Appender leaves to Python)."""
        op.sent = True
        ensemble, done, timeout = self._ensemble, self._appender.answered, self.config.add_timeout_s
        for index in positions:
            bookie = ensemble[index]
            op.sent_to[index] = bookie
            if self.recovering:
                self.client.add_entry_then(bookie, self.ledger_id, op.entry_id, self.master_key, op.body,
                                           (done, op, index, bookie), recovery=True)
            else:
                self._connection(index).send_add(self.ledger_id, op.entry_id, self.master_key, op.body,
                                                 (done, op, index, bookie), timeout)

    def _add_failed(self, op: PendingAdd, index: int, bookie: str, outcome: int | BaseException) -> None:
        """One bookie's answer to an add other than EOK (``Appender.answered`` counts those): its status code, or
        the error that failed the request."""
        if op.future.done() or op.sent_to.get(index) != bookie:
            return  # stale answer (entry finished, or this position was re-assigned)
        if not isinstance(outcome, BaseException):
            status = StatusCode(outcome)
            if status is StatusCode.ETOOMANYREQUESTS and op.retries < _THROTTLE_RETRIES:
                op.retries += 1  # the bookie is shedding load: retry the same bookie after a pause
                asyncio.get_running_loop().call_later(0.005 * op.retries, self._retry, op, index, bookie)
                return
            err: BaseException = e.status_error(status, f"add of entry {op.entry_id} to ledger {self.ledger_id}",
                                                bookie)
        else:
            err = outcome
        if isinstance(err, e.LedgerFencedError | e.UnauthorizedAccess):
            self._fatal(err)
            return
        self._bookie_failed(index, bookie, op.entry_id, err)

    def _retry(self, op: PendingAdd, index: int, bookie: str) -> None:
        if op.future.done() or op.sent_to.get(index) != bookie or self._error is not None:
            return
        if self._changing:
            asyncio.get_running_loop().call_later(0.01, self._retry, op, index, bookie)
            return
        self._send(op, [index])

    def _complete_adds(self) -> None:
        """Acknowledge, in entry order, the appends that reached their ack quorum (not while the ensemble
        changes: an answer may count a failed bookie)."""
        self._appender.complete_adds()

    def _fatal(self, err: BaseException) -> None:
        if self._error is None:
            self._error = err if isinstance(err, e.BKError) else e.BKError(str(err))
            if isinstance(err, e.LedgerFencedError):
                self._error = e.LedgerFencedError(
                    f"ledger {self.ledger_id} was fenced by another client (opened for recovery): this writer "
                    f"can add no more entries (last acknowledged entry {self.last_add_confirmed})",
                    bookie=err.bookie, status=err.status)
            log.warning("ledger %d: %s", self.ledger_id, self._error)
        pending = list(self._pending)
        self._pending.clear()
        for op in pending:
            if not op.future.done():
                op.future.set_exception(self._error)
        self._space.set()

    # ------------------------------------------------------------ ensemble change

    def _bookie_failed(self, index: int, bookie: str, entry_id: int, err: BaseException) -> None:
        if self.ensemble[index] != bookie or index in self._failed:
            return
        log.info("ledger %d: add of entry %d failed on bookie %s: %s", self.ledger_id, entry_id, bookie, err)
        self.client.health.record_error(bookie)
        self._failed[index] = bookie
        self.client.close_bookie(bookie)
        if self._change_task is None or self._change_task.done():
            self._changing = True
            self._change_task = asyncio.get_running_loop().create_task(self._change_ensemble())

    async def _change_ensemble(self) -> None:
        try:
            while self._failed and self._error is None:
                failed = dict(self._failed)
                self._ensemble_changes += 1
                if self._ensemble_changes > self.config.max_ensemble_changes:
                    raise e.NotEnoughBookies(f"ledger {self.ledger_id}: too many ensemble changes")
                try:
                    replaced = await self._through_zookeeper_outages(
                        "ensemble change", functools.partial(self._replace_bookies, failed))
                except e.NotEnoughBookies as exc:
                    replaced = self._continue_without(failed, exc)
                for index in failed:
                    self._failed.pop(index, None)
                for op in list(self._pending):
                    if not op.sent:
                        self._send(op, self._write_positions(op.entry_id))
                        continue
                    positions = [i for i in self._write_set_of(op.entry_id) if i in replaced]
                    for index in positions:
                        op.acked.discard(index)
                        op.sent_to.pop(index, None)
                    op.completed = len(op.acked) >= self.metadata.ack_quorum_size
                    self._send(op, [i for i in positions if i not in self._down])
        except e.BKError as exc:
            self._fatal(exc)
        except Exception as exc:  # a bug must not leave adds hanging forever
            log.exception("ledger %d: ensemble change failed", self.ledger_id)
            self._fatal(e.BKError(f"ensemble change of ledger {self.ledger_id} failed: {exc!r}"))
        finally:
            self._changing = False
        self._complete_adds()

    def _continue_without(self, failed: dict[int, str], exc: e.NotEnoughBookies) -> set[int]:
        """No replacement: carry on with the remaining bookies if every entry can still reach ack quorum."""
        md = self.metadata
        down = self._down | set(failed)
        for op in self._pending:
            alive = [i for i in self._write_set_of(op.entry_id) if i not in down]
            if len(alive) < md.ack_quorum_size:
                raise exc
        if all(len([i for i in positions if i not in down]) >= md.ack_quorum_size for positions in self._write_sets):
            log.warning("ledger %d: no bookie to replace %s; continuing under-replicated (%s)", self.ledger_id,
                        sorted(failed.values()), exc)
            self._down = down
            return set()
        raise exc

    async def _replace_bookies(self, failed: dict[int, str]) -> set[int]:
        """Write a new ensemble segment starting at LAC + 1; returns the replaced positions."""
        writable = await self.bk.writable_bookies()
        quarantined = self.client.health.quarantined()
        ensemble = list(self.ensemble)
        exclude = set(failed.values())
        for index in sorted(failed):
            ensemble[index] = self.bk.placement.replace_bookie(
                ensemble, index, self.metadata.write_quorum_size, writable, quarantined, exclude)
        first = self.last_add_confirmed + 1
        new_ensemble = tuple(ensemble)
        allowed = (LedgerState.OPEN, LedgerState.IN_RECOVERY) if self.recovering else (LedgerState.OPEN,)

        def change(md: LedgerMetadata) -> LedgerMetadata:
            if md.state not in allowed:
                raise e.LedgerFencedError(
                    f"ledger {self.ledger_id} is {md.state.name} in ZooKeeper: another client fenced or closed "
                    f"it, this writer must stop")
            ensembles = dict(md.ensembles)
            ensembles[first] = new_ensemble
            return replace(md, ensembles={k: v for k, v in ensembles.items() if k <= first})

        await self.update_metadata(change)
        log.info("ledger %d: ensemble change at entry %d: %s -> %s", self.ledger_id, first,
                 sorted(failed.values()), list(new_ensemble))
        self._down -= set(failed)
        return set(failed)

    # ------------------------------------------------------------ metadata

    async def _through_zookeeper_outages(self, what: str, write: Callable[[], Awaitable[T]]) -> T:
        """``write`` (a metadata change of this ledger), tried again each time ZooKeeper comes back while it was
        unreachable. Meanwhile an add that needs the replacement bookie for its ack quorum waits: counting a bookie
        the metadata does not name yet could lose the entry with the writer. Apache BookKeeper's client is set up
        the same way: its ZooKeeper client retries an operation across a lost connection and an expired session,
        ``zkRetryBackoffMaxRetries`` times (2^31 - 1 by default). So a partition from ZooKeeper delays a writer and
        fails none of its adds. Each write is conditional on the metadata's version: trying again one that had in
        fact been applied only meets its own change."""
        outage_since: float | None = None
        while True:
            try:
                result = await write()
            except ZooKeeperUnreachable as exc:
                if self._error is not None:
                    raise self._error from exc
                if outage_since is None:
                    outage_since = asyncio.get_running_loop().time()
                    log.warning("ledger %d: %s waits for ZooKeeper: %s", self.ledger_id, what, exc)
                await self.bk.store.until_connected(_ZOOKEEPER_WAIT_S)
                continue
            if outage_since is not None:
                log.info("ledger %d: %s done after %.1f s without ZooKeeper", self.ledger_id, what,
                         asyncio.get_running_loop().time() - outage_since)
            return result

    async def update_metadata(self, change: Callable[[LedgerMetadata], LedgerMetadata | None]) -> LedgerMetadata:
        """Read-modify-write of this ledger's metadata, retried on version conflicts.

        ``change`` gets the current metadata and returns the new one (None = nothing to write).
        """
        store = self.bk.store
        md, version = self.metadata, self.metadata_version
        for _ in range(100):
            new = change(md)
            if new is None:
                self.metadata, self.metadata_version = md, version
                return md
            try:
                version = await store.write_ledger_metadata(self.ledger_id, new, version)
            except BadVersion:
                fresh = await store.read_ledger_metadata(self.ledger_id)
                md, version = fresh.value, fresh.version
                continue
            self.metadata, self.metadata_version = new, version
            return new
        raise e.MetadataConflict(f"ledger {self.ledger_id}: metadata kept changing during the update")

    # ------------------------------------------------------------ close

    async def close(self) -> None:
        """Wait for pending adds, then record the last entry and length in the metadata (state CLOSED)."""
        if self._closed:
            return
        self._closing = True
        if self._lac_task is not None:
            self._lac_task.cancel()
        while self._pending and self._error is None:
            with contextlib.suppress(e.BKError):
                await asyncio.shield(self._pending[-1].future)
        if self._change_task is not None:
            with contextlib.suppress(Exception):
                await self._change_task
        if not self.writable:
            self._closed = True
            return
        lac, length = self.last_add_confirmed, self._length_at_lac

        def close_it(md: LedgerMetadata) -> LedgerMetadata | None:
            if md.state is LedgerState.CLOSED:
                if md.last_entry_id >= lac:
                    return None  # closed by a recovering client, with every entry we acknowledged
                raise e.MetadataConflict(f"ledger {self.ledger_id} was closed at entry {md.last_entry_id} but "
                                         f"this writer acknowledged up to {lac}")
            if md.state is LedgerState.IN_RECOVERY and not self.recovering:
                raise e.LedgerFencedError(f"ledger {self.ledger_id} is being recovered by another client")
            return replace(md, state=LedgerState.CLOSED, last_entry_id=lac, length=length)

        try:
            if self.is_fenced:
                with contextlib.suppress(e.BKError):
                    await self.update_metadata(close_it)
                return
            await self._through_zookeeper_outages("close", lambda: self.update_metadata(close_it))
        finally:
            self._closed = True
            if self.metadata.closed:
                self.last_add_confirmed = self.metadata.last_entry_id
                self.length = self.metadata.length

    # ------------------------------------------------------------ explicit LAC

    async def write_lac(self) -> int:
        """Send the current LAC to the ensemble as an explicit LAC (WRITE_LAC, v3); waits for ack quorum."""
        lac = self.last_add_confirmed
        body = package_lac(self.digest, self.ledger_id, lac)
        futures = [self.client.write_lac(b, self.ledger_id, lac, self.master_key, body) for b in self.ensemble]
        ok = 0
        for fut in asyncio.as_completed(futures):
            with contextlib.suppress(e.BookieError):
                if (await fut).status is StatusCode.EOK:
                    ok += 1
                    if ok >= self.metadata.ack_quorum_size:
                        break
        if ok < self.metadata.ack_quorum_size:
            raise e.BKError(f"ledger {self.ledger_id}: explicit LAC {lac} reached only {ok} bookies")
        self._explicit_lac_sent = max(self._explicit_lac_sent, lac)
        return lac

    async def _explicit_lac_loop(self) -> None:
        while not self._closed and self._error is None:
            await asyncio.sleep(self.config.explicit_lac_interval_s)
            if self.last_add_confirmed > self._explicit_lac_sent and not self._closing:
                try:
                    await self.write_lac()
                except e.BKError as exc:
                    log.info("ledger %d: explicit LAC not written: %s", self.ledger_id, exc)

    async def read_explicit_lac(self) -> int:
        """Max of the explicit LAC and the last entries' LAC over the ensemble (READ_LAC, v3)."""
        best = -1
        responses = await asyncio.gather(*(self.client.read_lac(b, self.ledger_id) for b in self.ensemble),
                                         return_exceptions=True)
        for r in responses:
            if not isinstance(r, m.ReadLacResponse) or r.status is not StatusCode.EOK:
                continue
            with contextlib.suppress(DigestMismatch, ValueError):
                if r.lac_body is not None:
                    best = max(best, verify_lac(self.digest, r.lac_body, ledger_id=self.ledger_id))
            with contextlib.suppress(DigestMismatch, ValueError):
                if r.last_entry_body is not None:
                    entry = _entry_from(self.ledger_id, parse_entry_header(r.last_entry_body).entry_id,
                                        r.last_entry_body, self.digest)
                    best = max(best, entry.last_add_confirmed)
        self.last_add_confirmed = max(self.last_add_confirmed, best)
        return self.last_add_confirmed

    # ------------------------------------------------------------ LAC from the last entries

    async def read_last_add_confirmed(self) -> int:
        """Ask the last ensemble for its last entries; the LAC is the highest LAC they carry."""
        if self._closed or (self.writable and self._error is None):
            return self.last_add_confirmed
        lac, _ = await self._read_last_entries(fence=False)
        self.last_add_confirmed = max(self.last_add_confirmed, lac)
        return self.last_add_confirmed

    async def _read_last_entries(self, *, fence: bool) -> tuple[int, LedgerEntry | None]:
        """Read entry -1 on every bookie of the last ensemble (fencing it when ``fence``).

        Returns (max LAC found, the entry with that LAC) once the responders cover every write quorum with
        ``wq - aq + 1`` bookies, so no entry could have been acknowledged without one of them seeing it.
        """
        md = self.metadata
        ensemble = self.ensemble
        n, wq, aq = md.ensemble_size, md.write_quorum_size, md.ack_quorum_size
        need = wq - aq + 1
        futures = {
            self.client.read_entry(b, self.ledger_id, -1, fence=fence, master_key=self.master_key if fence
                                   else None): i for i, b in enumerate(ensemble)}
        responded: set[int] = set()
        failed: dict[int, str] = {}  # ensemble index -> why its bookie did not answer
        best_lac, best_entry = -1, None
        quorums = [set(write_set(i, n, wq)) for i in range(n)]
        pending = set(futures)
        while pending:
            done, pending = await asyncio.wait(pending, return_when=asyncio.FIRST_COMPLETED)
            for fut in done:
                index = futures[fut]
                bookie = ensemble[index]
                try:
                    response = fut.result()
                    if not isinstance(response, m.ReadResponse):
                        raise e.BookieError(f"unexpected response {response!r}", bookie=bookie)
                    if response.status is StatusCode.EOK and response.body is not None:
                        header = parse_entry_header(response.body)
                        entry = _entry_from(self.ledger_id, header.entry_id, response.body, self.digest)
                        if entry.last_add_confirmed > best_lac or best_entry is None:
                            best_lac = max(best_lac, entry.last_add_confirmed)
                            best_entry = entry
                        responded.add(index)
                    elif response.status in (StatusCode.ENOENTRY, StatusCode.ENOLEDGER):
                        responded.add(index)
                    else:
                        raise e.status_error(response.status, f"read of the last entry of ledger "
                                             f"{self.ledger_id}", bookie)
                except e.UnauthorizedAccess:
                    raise
                except (e.BookieError, DigestMismatch, ValueError) as exc:
                    log.info("ledger %d: %s on %s: %s", self.ledger_id, "fencing" if fence else "LAC read",
                             bookie, exc)
                    failed[index] = str(exc) or type(exc).__name__
            if all(len(q & responded) >= need for q in quorums):
                break
            if any(len(q - failed.keys()) < need for q in quorums):
                reasons = "; ".join(f"{ensemble[i]}: {why}" for i, why in sorted(failed.items()))
                raise e.LedgerRecoveryError(
                    f"ledger {self.ledger_id}: could not {'fence' if fence else 'read the LAC of'} enough bookies "
                    f"of {list(ensemble)} (failed: {reasons})")
        return best_lac, best_entry

    # ------------------------------------------------------------ reads

    async def read(self, first: int, last: int | None = None) -> list[LedgerEntry]:
        """Entries ``first..last`` (inclusive), which must all be confirmed (<= LAC)."""
        last = first if last is None else last
        if first < 0 or last < first:
            raise e.IncorrectParameter(f"bad entry range {first}..{last}")
        if last > self.last_add_confirmed:
            raise e.ReadError(f"ledger {self.ledger_id}: entry {last} is beyond the last add confirmed "
                              f"{self.last_add_confirmed}")
        return await self.read_unconfirmed(first, last)

    async def read_unconfirmed(self, first: int, last: int) -> list[LedgerEntry]:
        """Entries ``first..last`` without checking them against the LAC (``readUnconfirmedEntries``)."""
        if first < 0 or last < first:
            raise e.IncorrectParameter(f"bad entry range {first}..{last}")
        out: list[LedgerEntry] = []
        for start in range(first, last + 1, _READ_CONCURRENCY):
            stop = min(last, start + _READ_CONCURRENCY - 1)
            out.extend(await asyncio.gather(*(self.read_entry(i) for i in range(start, stop + 1))))
        return out

    async def read_entry(self, entry_id: int) -> LedgerEntry:
        """One entry, verified, from the first replica that has it (sticky, speculative, failover)."""
        md = self.metadata
        ensemble = md.ensemble_at(entry_id)
        order = self._read_order(entry_id, ensemble)
        spec = self.config.speculative_read_timeout_s
        started: dict[asyncio.Future[m.Response], int] = {}
        errors: list[BaseException] = []
        next_index = 0

        def launch() -> None:
            nonlocal next_index
            index = order[next_index]
            next_index += 1
            started[self.client.read_entry(ensemble[index], self.ledger_id, entry_id)] = index

        launch()
        pending = set(started)
        while pending:
            timeout = spec if spec > 0 and next_index < len(order) else None
            done, pending = await asyncio.wait(pending, timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
            if not done:
                launch()  # speculative read: the first replica is slow
                pending = {f for f in started if not f.done()}
                continue
            for fut in done:
                index = started[fut]
                bookie = ensemble[index]
                try:
                    response = fut.result()
                    if not isinstance(response, m.ReadResponse):
                        raise e.BookieError(f"unexpected response {response!r}", bookie=bookie)
                    if response.status is not StatusCode.EOK or response.body is None:
                        raise e.status_error(response.status, f"read of entry {entry_id} of ledger "
                                             f"{self.ledger_id}", bookie)
                    entry = _entry_from(self.ledger_id, entry_id, response.body, self.digest)
                except (e.BookieError, DigestMismatch, ValueError) as exc:
                    errors.append(exc)
                    if not isinstance(exc, e.NoSuchEntry):
                        self.client.health.record_error(bookie)
                    if self._sticky == index:
                        self._sticky = None
                    if next_index < len(order):
                        launch()
                        pending = {f for f in started if not f.done()}
                    continue
                if self._sticky is None and self._sticky_enabled():
                    self._sticky = index
                return entry
        raise self._read_failure(entry_id, errors)

    def _sticky_enabled(self) -> bool:
        md = self.metadata
        return self.config.sticky_reads and md.ensemble_size == md.write_quorum_size

    def _read_order(self, entry_id: int, ensemble: Sequence[str]) -> list[int]:
        md = self.metadata
        order = write_set(entry_id, md.ensemble_size, md.write_quorum_size)
        if self._sticky_enabled():
            if self._sticky is None:
                self._sticky = order[0]
            if self._sticky in order:
                order.remove(self._sticky)
                order.insert(0, self._sticky)
        quarantined = self.client.health.quarantined()
        return sorted(order, key=lambda i: ensemble[i] in quarantined)  # stable: healthy replicas first

    def _read_failure(self, entry_id: int, errors: list[BaseException]) -> e.BKError:
        where = f"entry {entry_id} of ledger {self.ledger_id}"
        if errors and all(isinstance(x, e.NoSuchEntry) for x in errors):
            return e.NoSuchEntry(f"{where} does not exist on any replica")
        if errors and all(isinstance(x, DigestMismatch) for x in errors):
            return e.DigestMismatchError(f"{where}: digest mismatch on every replica ({errors[0]})")
        if any(isinstance(x, e.UnauthorizedAccess) for x in errors):
            return e.UnauthorizedAccess(f"{where}: unauthorized")
        return e.ReadError(f"{where} could not be read: {'; '.join(str(x) for x in errors)}")

    async def read_lac_and_entry(self, entry_id: int, timeout_ms: int = 1000, *,
                                 parallel: bool = False) -> tuple[int, LedgerEntry | None]:
        """Long-poll tailing read (``readLastAddConfirmedAndEntry``): wait up to ``timeout_ms`` for the LAC
        to reach ``entry_id``; returns (LAC, the entry if it is now confirmed).

        While no bookie of the ensemble is known to have reached ``entry_id - 1`` (a new reader, or one that
        learned the LAC from an explicit LAC), it polls in short slices (``UNINFORMED_POLL_MS``), each answer
        saying how far that bookie is; then the rest of the time goes to one poll of a bookie that has (see
        ``long_poll_targets``)."""
        if entry_id <= self.last_add_confirmed:
            return self.last_add_confirmed, await self.read_entry(entry_id)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_ms / 1000
        while not self._knows_bookie_at(entry_id - 1):
            started, remaining = loop.time(), deadline - loop.time()
            if remaining <= 0:
                return self.last_add_confirmed, None
            slice_s = min(remaining, UNINFORMED_POLL_MS / 1000)
            lac, entry = await self._long_poll(entry_id, int(slice_s * 1000), parallel)
            if entry is not None or lac >= entry_id:
                return lac, entry
            await asyncio.sleep(max(0.0, started + slice_s - loop.time()))  # an error answered at once: no spin
        return await self._long_poll(entry_id, max(0, int((deadline - loop.time()) * 1000)), parallel)

    def _knows_bookie_at(self, lac: int) -> bool:
        return any(self._bookie_lac.get(b, NOT_KNOWN) >= lac for b in self.ensemble)

    async def _long_poll(self, entry_id: int, timeout_ms: int, parallel: bool) -> tuple[int, LedgerEntry | None]:
        md = self.metadata
        ensemble = self.ensemble
        stores = [ensemble[i] for i in write_set(entry_id, md.ensemble_size, md.write_quorum_size)]
        targets = long_poll_targets(stores, ensemble, self._bookie_lac, entry_id - 1)
        timeout = self.config.read_timeout_s + timeout_ms / 1000

        def ask(bookie: str) -> asyncio.Future[m.Response]:
            return self.client.read_entry(bookie, self.ledger_id, -1, previous_lac=entry_id - 1,
                                          long_poll_timeout_ms=timeout_ms, piggyback=True, timeout=timeout)

        futures = [ask(b) for b in targets] if parallel else []
        for position, bookie in enumerate(targets):
            fut = futures[position] if parallel else ask(bookie)
            try:
                response = await fut
            except e.BookieError:
                continue
            if not isinstance(response, m.ReadResponse) or response.status is not StatusCode.EOK:
                continue
            if response.max_lac is not None:
                self.last_add_confirmed = max(self.last_add_confirmed, response.max_lac)
                self._bookie_lac[bookie] = max(self._bookie_lac.get(bookie, NOT_KNOWN), response.max_lac)
            if response.body is not None:
                try:
                    entry = _entry_from(self.ledger_id, entry_id, response.body, self.digest)
                except (DigestMismatch, ValueError):
                    continue
                self.last_add_confirmed = max(self.last_add_confirmed, entry.last_add_confirmed, entry_id)
                return self.last_add_confirmed, entry
            if self.last_add_confirmed < entry_id:
                return self.last_add_confirmed, None  # long poll timed out: nothing new yet
            break  # the LAC passed entry_id without the entry (a bookie outside its write set): read it below
        if entry_id <= self.last_add_confirmed:
            return self.last_add_confirmed, await self.read_entry(entry_id)
        return self.last_add_confirmed, None

    # ------------------------------------------------------------ recovery support

    async def recovery_read(self, entry_id: int, md: LedgerMetadata | None = None) -> LedgerEntry | None:
        """Read ``entry_id`` for recovery: None when more than ``wq - aq`` replicas say it does not exist
        (so it was never acknowledged); raises when the replicas cannot tell. ``md``: the metadata to read
        with (recovery reads the tail with the ensemble it was written to, whatever changed since)."""
        md = md or self.metadata
        ensemble = md.ensemble_at(entry_id)
        positions = write_set(entry_id, md.ensemble_size, md.write_quorum_size)
        allowed_missing = md.write_quorum_size - md.ack_quorum_size
        futures = {self.client.read_entry(ensemble[i], self.ledger_id, entry_id): i for i in positions}
        missing = 0
        errors: list[BaseException] = []
        for fut in asyncio.as_completed(list(futures)):
            try:
                response = await fut
                if not isinstance(response, m.ReadResponse):
                    raise e.BookieError(f"unexpected response {response!r}")
                if response.status is StatusCode.EOK and response.body is not None:
                    return _entry_from(self.ledger_id, entry_id, response.body, self.digest)
                raise e.status_error(response.status, f"recovery read of entry {entry_id}", "?")
            except e.NoSuchEntry:
                missing += 1
                if missing > allowed_missing:
                    return None
            except (e.BookieError, DigestMismatch, ValueError) as exc:
                errors.append(exc)
        raise e.LedgerRecoveryError(f"ledger {self.ledger_id}: cannot tell whether entry {entry_id} exists "
                                    f"({missing} replicas miss it, errors: {'; '.join(map(str, errors))})")

    def recovery_add(self, entry: LedgerEntry) -> asyncio.Future[int]:
        """Re-replicate a recovered entry with the recovery flag (same bytes as the writer packaged)."""
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        if self._error is not None:
            future.set_exception(self._error)
            return future
        body = package_entry(self.digest, self.ledger_id, entry.entry_id, entry.last_add_confirmed, entry.length,
                             entry.payload)
        self._push(b"", future, (entry.entry_id, body, entry.length))
        return future

    def check_writable_error(self) -> None:
        if self._error is not None:
            raise self._error
