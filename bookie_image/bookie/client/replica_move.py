"""Moving one ledger's replica from one bookie to another, for rebalancing a fleet.

The same re-replication path autorecovery takes for a lost bookie (``Autorecovery._replicate_fragment``):
every fragment the source holds is copied to the target with recovery adds (read from the ledger's replicas,
digest verified), then read back from the target and verified, then the ensembles are changed in one
compare-and-set of the ledger's metadata (source -> target at the same position). Until that write the
ledger names the source, which still holds every entry; after it, the target holds them: the ledger never
has fewer than its write quorum of copies. The source's over-replicated ledger GC deletes its copy once the
ledger no longer names it.

Only closed ledgers move (an open one's writer may change its ensemble at any moment). The move holds the
ledger's under-replication lock, as a replication worker does, so neither a worker nor the target's
over-replicated GC (which takes the same lock) acts on the ledger while the target holds entries the metadata
does not name yet; a move that finds the lock held waits for it (``LOCK_WAIT_S``: its other holders keep it
for moments). Redoing a move that finished is a no-op, taking no lock, so a caller that lost track of one simply
asks again.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from bookie.client import errors as e
from bookie.client.bookkeeper import BookKeeper
from bookie.client.ledger import LedgerHandle, write_set
from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.store import NoSuchLedger
from bookie.protocol import messages as m
from bookie.protocol.codes import StatusCode
from bookie.protocol.entry import package_entry, verify_entry

log = logging.getLogger(__name__)

MoveState = Literal["running", "moved", "failed"]
LOCK_WAIT_S = 60.0  # for the ledger's under-replication lock, which other holders keep for moments


class MoveRefused(ValueError):
    """The move cannot be done as asked (the message says why); nothing was changed."""


@dataclass
class ReplicaMove:
    """One move's progress, as ``GET /api/v1/autorecovery/move_replica`` shows it."""

    ledger_id: int
    source: str
    target: str
    rate_bytes_per_s: int | None = None
    state: MoveState = "running"
    entries: int = 0
    bytes: int = 0
    error: str | None = None
    started: float = field(default_factory=time.time)

    def to_json(self) -> dict[str, Any]:
        return {"ledger_id": self.ledger_id, "bookie_src": self.source, "bookie_dest": self.target,
                "state": self.state, "entries_copied": self.entries, "bytes_copied": self.bytes,
                "error": self.error, "started": self.started}


class _Pace:
    """Keeps the bytes copied since ``start`` at or under ``rate`` bytes per second (None: unlimited)."""

    def __init__(self, rate: int | None) -> None:
        self.rate = rate
        self.start = time.monotonic()
        self.sent = 0

    async def account(self, size: int) -> None:
        self.sent += size
        if self.rate:
            ahead = self.start + self.sent / self.rate - time.monotonic()
            if ahead > 0:
                await asyncio.sleep(ahead)


async def copy_fragment(bk: BookKeeper, handle: LedgerHandle, first: int, last: int, index: int, target: str,
                        on_entry: Callable[[int], Awaitable[None]] | None = None) -> int:
    """Copy the entries that position ``index`` of the ensemble starting at ``first`` stores (through ``last``)
    to ``target`` with recovery adds; returns how many. Each entry is read from the ledger's replicas, digest
    verified. ``on_entry`` gets each copied entry's size (and may wait, to keep a byte rate)."""
    md = handle.metadata
    copied = 0
    for entry_id in range(first, last + 1):
        if index not in write_set(entry_id, md.ensemble_size, md.write_quorum_size):
            continue
        entry = await handle.read_entry(entry_id)
        body = package_entry(handle.digest, handle.ledger_id, entry_id, entry.last_add_confirmed, entry.length,
                             entry.payload)
        response = await bk.client.add_entry(target, handle.ledger_id, entry_id, handle.master_key, body,
                                             recovery=True)
        if response.status is not StatusCode.EOK:
            raise e.status_error(response.status, f"re-replication of entry {entry_id}", target)
        copied += 1
        if on_entry is not None:
            await on_entry(len(entry.payload))
    return copied


async def verify_fragment(bk: BookKeeper, handle: LedgerHandle, first: int, last: int, index: int,
                          target: str) -> None:
    """Read back from ``target`` every entry position ``index`` stores, digest verified against the ledger's
    key: a copy is trusted only once the target serves it."""
    md = handle.metadata
    for entry_id in range(first, last + 1):
        if index not in write_set(entry_id, md.ensemble_size, md.write_quorum_size):
            continue
        response = await bk.client.read_entry(target, handle.ledger_id, entry_id)
        if not isinstance(response, m.ReadResponse) or response.status is not StatusCode.EOK \
                or response.body is None:
            raise e.ReadError(f"verification of entry {entry_id} of ledger {handle.ledger_id} on {target} "
                              f"failed: {getattr(response, 'status', response)}")
        verify_entry(handle.digest, response.body, ledger_id=handle.ledger_id, entry_id=entry_id)


def _fragments(md: LedgerMetadata, bookie: str) -> list[tuple[int, int, int]]:
    """(first, last, index) of every ensemble segment that stores ``bookie``."""
    firsts = sorted(md.ensembles)
    out = []
    for k, first in enumerate(firsts):
        last = firsts[k + 1] - 1 if k + 1 < len(firsts) else md.last_entry_id
        members = md.ensembles[first]
        if bookie in members and last >= first:
            out.append((first, last, list(members).index(bookie)))
    return out


def _check(md: LedgerMetadata, ledger_id: int, source: str, target: str, registered: set[str]) -> bool:
    """True if there is something to move; False if the move already happened. Raises MoveRefused."""
    bookies = md.bookies()
    if source not in bookies:
        if target in bookies:
            return False
        raise MoveRefused(f"ledger {ledger_id} has no replica on {source}")
    if md.state is not LedgerState.CLOSED:
        raise MoveRefused(f"ledger {ledger_id} is not closed: only closed ledgers are moved")
    if target not in registered:
        raise MoveRefused(f"bookie {target} is not registered")
    for members in md.ensembles.values():
        if source in members and target in members:
            raise MoveRefused(f"ledger {ledger_id} already has a replica on {target} next to {source}")
    return True


async def move_replica(bk: BookKeeper, move: ReplicaMove, owner: str) -> None:
    """Carry ``move`` out (see the module's docstring); its fields record the progress and the outcome."""
    if not await _to_move(bk, move):  # done already: a redo takes no lock (another holder may have it)
        return
    await _acquire_lock(bk, move.ledger_id, owner)
    try:
        md, version = await _read(bk, move.ledger_id)
        if not await _to_move(bk, move, md):
            return
        handle = LedgerHandle(bk, move.ledger_id, md, version, md.password or b"", writable=False)
        pace = _Pace(move.rate_bytes_per_s)

        async def copied(size: int) -> None:
            move.entries += 1
            move.bytes += size
            await pace.account(size)

        fragments = _fragments(md, move.source)
        for first, last, index in fragments:
            await copy_fragment(bk, handle, first, last, index, move.target, copied)
        for first, last, index in fragments:
            await verify_fragment(bk, handle, first, last, index, move.target)
        await handle.update_metadata(_swap(move, {first: index for first, _, index in fragments}))
        log.info("ledger %d: replica moved from %s to %s (%d entries, %d bytes)", move.ledger_id, move.source,
                 move.target, move.entries, move.bytes)
    finally:
        await bk.store.release_underreplicated_lock(move.ledger_id)


async def _read(bk: BookKeeper, ledger_id: int) -> tuple[LedgerMetadata, Any]:
    try:
        versioned = await bk.store.read_ledger_metadata(ledger_id)
    except NoSuchLedger:
        raise MoveRefused(f"ledger {ledger_id} does not exist") from None
    return versioned.value, versioned.version


async def _to_move(bk: BookKeeper, move: ReplicaMove, md: LedgerMetadata | None = None) -> bool:
    """``_check`` on the ledger's metadata as it is (read unless given) and the bookies registered now."""
    if md is None:
        md, _ = await _read(bk, move.ledger_id)
    registered = set(await bk.store.list_bookies()) | set(await bk.store.list_bookies(readonly=True))
    return _check(md, move.ledger_id, move.source, move.target, registered)


async def _acquire_lock(bk: BookKeeper, ledger_id: int, owner: str) -> None:
    """The ledger's under-replication lock, waited for up to ``LOCK_WAIT_S``: its other holders (a replication
    worker copying a fragment, a bookie's over-replicated GC deleting its copy) hold it for moments."""
    deadline, pause = time.monotonic() + LOCK_WAIT_S, 0.1
    while not await bk.store.acquire_underreplicated_lock(ledger_id, owner):
        if time.monotonic() >= deadline:
            raise e.MetadataConflict(f"ledger {ledger_id}'s under-replication lock stayed held for {LOCK_WAIT_S:.0f} "
                                     "s (a replication worker or a bookie's over-replicated GC has it); ask again")
        await asyncio.sleep(pause)
        pause = min(pause * 2, 2.0)


def _swap(move: ReplicaMove, positions: dict[int, int]) -> Callable[[LedgerMetadata], LedgerMetadata | None]:
    def change(current: LedgerMetadata) -> LedgerMetadata | None:
        ensembles = dict(current.ensembles)
        for first, index in positions.items():
            members = list(ensembles.get(first, ()))
            if index >= len(members) or members[index] != move.source:
                # Changed under us (the lock keeps replication workers out, not every writer of metadata):
                # the copies stay unnamed on the target, whose GC reclaims them; the caller asks again.
                raise e.MetadataConflict(f"ledger {move.ledger_id}: ensemble at entry {first} changed during "
                                         "the move")
            members[index] = move.target
            ensembles[first] = tuple(members)
        return replace(current, ensembles=ensembles)

    return change


class ReplicaMoves:
    """The moves this process runs, at most one per ledger, each in its own task; the last one per ledger is
    kept for ``GET`` (bounded: ``KEEP`` finished ones)."""

    KEEP = 1000

    def __init__(self, bk: BookKeeper, owner: str) -> None:
        self.bk = bk
        self.owner = owner
        self.moves: dict[int, ReplicaMove] = {}
        self._tasks: dict[int, asyncio.Task[None]] = {}

    def start(self, ledger_id: int, source: str, target: str, rate_bytes_per_s: int | None) -> ReplicaMove:
        """Start the move, or return the same one already running (a repeated request)."""
        running = self.moves.get(ledger_id)
        if running is not None and running.state == "running":
            if (running.source, running.target) != (source, target):
                raise MoveRefused(f"ledger {ledger_id} is already being moved from {running.source} to "
                                  f"{running.target}")
            return running
        move = ReplicaMove(ledger_id, source, target, rate_bytes_per_s)
        self.moves.pop(ledger_id, None)
        self.moves[ledger_id] = move
        while len(self.moves) > self.KEEP:
            del self.moves[next(iter(self.moves))]
        self._tasks[ledger_id] = asyncio.get_running_loop().create_task(self._run(move))
        return move

    async def _run(self, move: ReplicaMove) -> None:
        try:
            await move_replica(self.bk, move, self.owner)
            move.state = "moved"
        except Exception as exc:  # a background task: every failure is recorded for the caller to see
            move.state, move.error = "failed", str(exc) or type(exc).__name__
            log.warning("move of ledger %d from %s to %s failed: %s", move.ledger_id, move.source, move.target,
                        move.error)
        finally:
            self._tasks.pop(move.ledger_id, None)

    async def stop(self) -> None:
        for task in list(self._tasks.values()):
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)
