"""Autorecovery: an auditor elected through ZooKeeper marks under-replicated ledgers, replication workers
copy the missing fragments to other bookies and clear the marks (BookKeeper's ``AutoRecoveryMain``).

Everything lives in BookKeeper's ZooKeeper layout (``underreplication/``: auditor votes, ``urL`` marks, locks,
``disable``, ``lostBookieRecoveryDelay``), so it interoperates with BookKeeper's own tools.

* Auditor (the lowest ``auditorelection/V_`` vote): a bookie that appears in some ledger's ensembles and is
  registered neither under ``available/`` nor ``available/readonly/`` is lost; once it has been lost for
  ``lostBookieRecoveryDelay`` seconds every ledger holding it is marked under-replicated with it as the
  missing replica, unless replication is disabled (``underreplication/disable``): then, as BookKeeper's auditor
  waits, nothing lost is marked until it is enabled again. ``trigger_audit()`` audits now.
* Worker (every instance): takes a mark under its lock, and for every ensemble segment holding a missing
  replica copies that position's entries (read from the surviving replicas, digest verified) to a new bookie
  with recovery adds, then swaps the bookie in the metadata. An open ledger whose last ensemble lost a bookie
  is first recovered (fenced and closed) once ``open_ledger_grace_s`` has passed. A ledger a worker failed on
  (its copies or the new bookie out of its reach) is left to the other workers for a while, doubling.
* Replica moves (``replica_move``): one closed ledger's replica from a named bookie to another, the same copy
  and ensemble swap, for the operator's rebalancing.
* Decommission: every ledger holding the bookie is marked (the bookie may still be up); the report lists
  the ledgers moved and is done once no ledger references it. With ``delete_cookie`` (Apache BookKeeper 4.18's
  decommission call), the bookie's cookie is then deleted from ZooKeeper, so that a new bookie can later take
  its id on empty disks without a cookie mismatch.

The auditor's stats (``AuditorStats``) are BookKeeper's (``replication_auditor_*`` in the bookie's
``/metrics``, docs/monitoring.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any

from bookie.client import errors as e
from bookie.client.bookkeeper import BookKeeper
from bookie.client.ledger import LedgerHandle
from bookie.client.replica_move import ReplicaMoves, copy_fragment
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.store import MetadataError, NoSuchLedger
from bookie.stats import OpStat
from bookie.waits import wait_event

log = logging.getLogger(__name__)
FAILED_LEDGER_BACKOFF_MAX_S = 60.0  # the longest a worker leaves a ledger it failed on to the others


@dataclass
class DecommissionReport:
    bookie: str
    started: float = field(default_factory=time.time)
    ledgers: list[int] = field(default_factory=list)  # ledgers that held the bookie when it started
    remaining: list[int] = field(default_factory=list)
    done: bool = False
    delete_cookie: bool = False   # once done, delete the bookie's cookie
    cookie_deleted: bool = False

    def to_json(self) -> dict[str, Any]:
        return {"bookie": self.bookie, "done": self.done, "ledgers_moved": sorted(set(self.ledgers)
                                                                                 - set(self.remaining)),
                "remaining": sorted(self.remaining), "started": self.started,
                "delete_cookie": self.delete_cookie, "cookie_deleted": self.cookie_deleted}


@dataclass
class AuditorStats:
    """BookKeeper's ``AuditorStats``, kept while this instance is the auditor.

    ``under_replicated``: ledgers marked under-replicated now (BookKeeper's ``NUM_UNDER_REPLICATED_LEDGERS_GUAGE``
    gauge), refreshed by every audit; None while another instance is the auditor, so only the auditor
    exports it, as in BookKeeper, where the gauge exists only in the elected auditor. The summaries record,
    per audit that marks ledgers, how many it marked and their total size (``NUM_UNDER_REPLICATED_LEDGERS``,
    ``UNDER_REPLICATED_LEDGERS_TOTAL_SIZE``)."""

    under_replicated: int | None = None
    num_under_replicated: OpStat = field(default_factory=OpStat)
    under_replicated_total_size: OpStat = field(default_factory=OpStat)

    def op_stats(self) -> tuple[OpStat, ...]:
        return (self.num_under_replicated, self.under_replicated_total_size)


class Autorecovery:
    """Auditor + replication worker. ``await start()`` / ``await stop()``."""

    def __init__(self, bk: BookKeeper, worker_id: str, *, check_interval_s: float = 5.0,
                 lost_bookie_recovery_delay_s: int = 0, open_ledger_grace_s: float = 30.0) -> None:
        self.bk = bk
        self.store = bk.store
        self.worker_id = worker_id
        self.check_interval_s = check_interval_s
        self.default_delay_s = lost_bookie_recovery_delay_s
        self.open_ledger_grace_s = open_ledger_grace_s
        self._vote: str | None = None
        self._lost_since: dict[str, float] = {}
        self._marked_at: dict[int, float] = {}
        # ledger id -> (failed attempts in a row, when this worker may try it again)
        self._failed: dict[int, tuple[int, float]] = {}
        self._tasks: list[asyncio.Task[None]] = []
        self._audit_now = asyncio.Event()
        self._work_now = asyncio.Event()
        self.decommissions: dict[str, DecommissionReport] = {}
        self._decommission_tasks: dict[str, asyncio.Task[None]] = {}
        self.replicated: list[int] = []
        self.replica_moves = ReplicaMoves(bk, worker_id)   # rebalancing: PUT /api/v1/autorecovery/move_replica
        self.stats = AuditorStats()

    # ------------------------------------------------------------ lifecycle

    async def start(self) -> Autorecovery:
        self._vote = await self.store.submit_auditor_vote(self.worker_id)
        loop = asyncio.get_running_loop()
        self._tasks = [loop.create_task(self._loop(self._audit_now, self._audit_if_auditor)),
                       loop.create_task(self._loop(self._work_now, self.replicate_marked))]
        return self

    async def stop(self) -> None:
        await self.replica_moves.stop()
        tasks = [*self._tasks, *self._decommission_tasks.values()]
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if self._vote is not None:
            with contextlib.suppress(MetadataError):
                await self.store.withdraw_auditor_vote(self._vote)

    async def _loop(self, wake: asyncio.Event, step: Callable[[], Awaitable[Any]]) -> None:
        while True:
            try:
                await step()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("autorecovery step failed; retrying")
            await wait_event(wake, self.check_interval_s)
            wake.clear()

    # ------------------------------------------------------------ auditor

    async def is_auditor(self) -> bool:
        votes = await self.store.auditor_votes()
        return self._vote is not None and bool(votes) and self._vote.endswith("/" + votes[0])

    async def _audit_if_auditor(self) -> None:
        if await self.is_auditor():
            await self.audit()
        else:
            self.stats.under_replicated = None

    def trigger_audit(self) -> None:
        self._audit_now.set()

    async def lost_bookie_recovery_delay(self) -> int:
        stored = await self.store.lost_bookie_recovery_delay()
        return self.default_delay_s if stored is None else stored

    async def audit(self) -> list[int]:
        """Mark ledgers holding lost bookies (past the delay) or bookies being decommissioned."""
        already = set(await self.store.list_underreplicated())
        registered = set(await self.store.list_bookies()) | set(await self.store.list_bookies(readonly=True))
        delay = await self.lost_bookie_recovery_delay()
        now = time.monotonic()
        holders: dict[str, list[int]] = {}
        lengths: dict[int, int] = {}
        for ledger_id in await self.store.all_ledger_ids():
            with contextlib.suppress(NoSuchLedger):
                md = (await self.store.read_ledger_metadata(ledger_id)).value
                lengths[ledger_id] = md.length
                for bookie in md.bookies():
                    holders.setdefault(bookie, []).append(ledger_id)
        lost = {b for b in holders if b not in registered}
        for bookie in list(self._lost_since):
            if bookie not in lost:
                del self._lost_since[bookie]
        # As BookKeeper's auditor: while replication is disabled (``underreplication/disable``, set for planned
        # restarts) a lost bookie is not marked; it is once replication is enabled again, if it is still lost
        # by then and its delay has passed. A decommissioned bookie that still runs was asked for explicitly and
        # is marked regardless.
        enabled = await self.store.is_replication_enabled()
        marked: list[int] = []
        sizes: dict[int, int] = {}
        for bookie in sorted(lost | set(self.decommissions)):
            since = self._lost_since.setdefault(bookie, now)
            if bookie in lost and (now - since < delay or not enabled):
                continue
            for ledger_id in holders.get(bookie, []):
                await self.store.mark_ledger_underreplicated(ledger_id, [bookie])
                marked.append(ledger_id)
                if ledger_id not in already:
                    sizes[ledger_id] = lengths.get(ledger_id, 0)
        self.stats.under_replicated = len(already | set(marked))
        if sizes:  # newly marked: a lost bookie stays marked at every audit, recorded once
            self.stats.num_under_replicated.record(len(sizes))
            self.stats.under_replicated_total_size.record(sum(sizes.values()))
        if marked:
            log.info("auditor: marked ledgers %s under-replicated", sorted(set(marked)))
            self._work_now.set()
        return marked

    # ------------------------------------------------------------ decommission

    async def decommission(self, bookie: str, delete_cookie: bool = False) -> DecommissionReport:
        """Start moving every fragment off ``bookie``; progress in ``self.decommissions[bookie]``, followed here
        (whichever instance is the auditor) until no ledger references the bookie, then its cookie deleted if
        ``delete_cookie``."""
        report = DecommissionReport(bookie, delete_cookie=delete_cookie)
        report.ledgers = await self._ledgers_holding(bookie)
        for ledger_id in report.ledgers:
            await self.store.mark_ledger_underreplicated(ledger_id, [bookie])
        report.remaining = list(report.ledgers)
        previous = self._decommission_tasks.pop(bookie, None)
        if previous is not None:
            previous.cancel()
        self.decommissions[bookie] = report
        self._decommission_tasks[bookie] = asyncio.create_task(self._follow_decommission(report),
                                                               name=f"decommission {bookie}")
        self._work_now.set()
        return report

    async def _ledgers_holding(self, bookie: str) -> list[int]:
        held = []
        for ledger_id in await self.store.all_ledger_ids():
            with contextlib.suppress(NoSuchLedger):
                if bookie in (await self.store.read_ledger_metadata(ledger_id)).value.bookies():
                    held.append(ledger_id)
        return held

    async def _follow_decommission(self, report: DecommissionReport) -> None:
        while not report.done:
            try:
                report.remaining = await self._ledgers_holding(report.bookie)
                report.done = not report.remaining
            except MetadataError as exc:
                log.warning("decommission of %s: progress not read (will retry): %s", report.bookie, exc)
            if not report.done:
                await asyncio.sleep(self.check_interval_s)
        while report.delete_cookie and not report.cookie_deleted:
            try:
                await self._delete_cookie(report.bookie)
                report.cookie_deleted = True
            except MetadataError as exc:
                log.warning("decommission of %s: cookie not deleted (will retry): %s", report.bookie, exc)
                await asyncio.sleep(self.check_interval_s)

    async def _delete_cookie(self, bookie: str) -> None:
        """Delete the cookie at the version read (a bookie writing it meanwhile makes this retry)."""
        cookie = await self.store.read_cookie(bookie)
        if cookie is None:
            log.info("decommission of %s: it has no cookie to delete", bookie)
            return
        await self.store.delete_cookie(bookie, cookie.version)
        log.info("decommission of %s: its cookie is deleted", bookie)

    # ------------------------------------------------------------ replication worker

    async def replicate_marked(self) -> list[int]:
        """Fix every marked ledger this worker can lock; returns the ledgers it cleared."""
        if not await self.store.is_replication_enabled():
            return []
        cleared = []
        marked = await self.store.list_underreplicated()
        for gone in self._failed.keys() - set(marked):  # fixed by another worker, or deleted
            del self._failed[gone]
        for ledger_id in marked:
            if self._backing_off(ledger_id) or \
                    not await self.store.acquire_underreplicated_lock(ledger_id, self.worker_id):
                continue
            try:
                mark = await self.store.get_underreplicated(ledger_id)
                if mark is None:
                    continue
                if await self.replicate_ledger(ledger_id, set(mark.replicas)):
                    await self.store.mark_ledger_replicated(ledger_id)
                    cleared.append(ledger_id)
                    self.replicated.append(ledger_id)
                self._failed.pop(ledger_id, None)
            except e.BKError as exc:
                wait_s = self._failed_now(ledger_id)
                log.warning("replication of ledger %d failed (this worker tries it again in %.0f s; another may "
                            "first): %s", ledger_id, wait_s, exc)
            finally:
                await self.store.release_underreplicated_lock(ledger_id)
        if cleared:
            log.info("replication worker %s: ledgers %s fully replicated", self.worker_id, cleared)
            self._audit_now.set()
        return cleared

    def _backing_off(self, ledger_id: int) -> bool:
        failed = self._failed.get(ledger_id)
        return failed is not None and time.monotonic() < failed[1]

    def _failed_now(self, ledger_id: int) -> float:
        """Back off a ledger this worker failed to replicate (doubling from the check interval, up to
        ``FAILED_LEDGER_BACKOFF_MAX_S``), so that a worker that can reach its copies takes it meanwhile: one
        that cannot (a partition between it and the ledger's bookies) would otherwise take it again the moment
        it let it go, every time, and keep the others out. Returns the wait."""
        attempts = self._failed.get(ledger_id, (0, 0.0))[0] + 1
        wait_s = min(FAILED_LEDGER_BACKOFF_MAX_S, self.check_interval_s * 2 ** (attempts - 1))
        self._failed[ledger_id] = (attempts, time.monotonic() + wait_s)
        return wait_s

    async def replicate_ledger(self, ledger_id: int, missing: set[str]) -> bool:
        """Move every fragment of ``ledger_id`` off the ``missing`` bookies; False = not yet (retry)."""
        try:
            versioned = await self.store.read_ledger_metadata(ledger_id)
        except NoSuchLedger:
            return True  # deleted meanwhile: nothing to replicate
        md = versioned.value
        registered = set(await self.store.list_bookies()) | set(await self.store.list_bookies(readonly=True))
        missing = missing | {b for b in md.bookies() if b not in registered}
        if not missing & md.bookies():
            return True
        password = md.password or b""
        if md.state is not LedgerState.CLOSED:
            marked_at = self._marked_at.setdefault(ledger_id, time.monotonic())
            if time.monotonic() - marked_at < self.open_ledger_grace_s:
                return False  # its writer may still be replacing the bookie itself
            await self.bk.open_ledger(ledger_id, password)  # fence and close it first
            versioned = await self.store.read_ledger_metadata(ledger_id)
            md = versioned.value
        self._marked_at.pop(ledger_id, None)
        handle = LedgerHandle(self.bk, ledger_id, md, versioned.version, password, writable=False)
        firsts = list(md.ensembles)
        for k, first in enumerate(firsts):
            last = firsts[k + 1] - 1 if k + 1 < len(firsts) else md.last_entry_id
            ensemble = handle.metadata.ensembles[first]
            for index, bookie in enumerate(ensemble):
                if bookie in missing:
                    await self._replicate_fragment(handle, first, last, index, bookie, missing)
        return True

    async def _replicate_fragment(self, handle: LedgerHandle, first: int, last: int, index: int, bad: str,
                                  missing: set[str]) -> None:
        md = handle.metadata
        writable = await self.bk.writable_bookies()
        ensemble = md.ensembles[first]
        target = self.bk.placement.replace_bookie(ensemble, index, md.write_quorum_size, writable,
                                                  self.bk.client.health.quarantined(), exclude=missing)
        copied = await copy_fragment(self.bk, handle, first, last, index, target)

        def swap(current: LedgerMetadata) -> LedgerMetadata | None:
            members = list(current.ensembles.get(first, ()))
            if index >= len(members) or members[index] != bad:
                return None  # someone else already fixed it
            members[index] = target
            return replace(current, ensembles={**current.ensembles, first: tuple(members)})

        await handle.update_metadata(swap)
        log.info("ledger %d: fragment [%d, %d] moved from %s to %s (%d entries)", handle.ledger_id, first, last,
                 bad, target, copied)
