"""An add is admitted by one rule, whichever path it takes. The request hot path (C) takes an add only when the
general path (Python) would have stored it, and then answers EOK; everything else it hands back, and the general
path answers as the table below says. Both are run against every case of one table: the ledger unknown, known
or fenced; the master key right or wrong; a normal or a recovery add; the bookie writable or read-only; the
disk not measured yet, or with room to spare, exactly its reserve left, or one byte short of it, on a large disk
(diskUsageThreshold's share is the reserve) and on a small one (minUsableSizeForEntryLogCreation is).

A real storage engine and request processor in this process (tests/support/request_stream.py)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest_asyncio
from bookie.protocol import codec
from bookie.protocol import messages as m
from bookie.storage.engine import StorageEngine
from bookie.storage.errors import NoEntryError, NoLedgerError
from bookie.storage.ledger_dir import LedgerDirStorage

from tests.support.raw_client import MASTER_KEY, entry
from tests.support.request_stream import HotPathBookie, add_frame, drain, hot_path_bookie

S = m.StatusCode
DISK_USAGE_THRESHOLD = 0.95
MIN_USABLE_FOR_ENTRY_LOGS = 8 << 20
MIN_USABLE_FOR_HIGH_PRIORITY = 1 << 20
LARGE_DISK, SMALL_DISK = 1 << 30, 64 << 20  # 5% of the small one is less than MIN_USABLE_FOR_ENTRY_LOGS
ADD_SIZE = len(entry(1, 1, b"p" * 100))
OTHER_KEY = b"k" * 20

LEDGER_STATES = ("unknown", "known", "fenced")
DISKS = ("not measured", *(f"{size} disk, {margin}" for size in ("large", "small")
                           for margin in ("room to spare", "exactly the reserve left", "one byte short")))


@dataclass(frozen=True)
class Case:
    ledger: str
    right_key: bool
    recovery: bool
    read_only: bool
    disk: str

    def __str__(self) -> str:
        return (f"{self.ledger} ledger, {'right' if self.right_key else 'wrong'} key, "
                f"{'recovery' if self.recovery else 'normal'} add, {'read-only' if self.read_only else 'writable'}, "
                f"disk {self.disk}")


CASES = [Case(*values) for values in itertools.product(LEDGER_STATES, (True, False), (False, True), (False, True),
                                                        DISKS)]


def reserve(case: Case) -> int:
    """The bytes an add must leave free on its disk (the specification both paths must follow)."""
    if case.recovery:
        return MIN_USABLE_FOR_HIGH_PRIORITY
    total = LARGE_DISK if case.disk.startswith("large") else SMALL_DISK
    return max(int(total * (1 - DISK_USAGE_THRESHOLD)), MIN_USABLE_FOR_ENTRY_LOGS)


def expected_status(case: Case) -> S:
    """The table: what the bookie answers an add in this case."""
    if case.read_only and not case.recovery:
        return S.EREADONLY  # read-only for a manual reason: only recovery adds go on
    if case.ledger != "unknown" and not case.right_key:
        return S.EUA  # the first writer's master key (an unknown ledger takes this add's)
    if case.ledger == "fenced" and not case.recovery:
        return S.EFENCED
    if case.disk.endswith("one byte short"):
        return S.EREADONLY  # the directory is full for this add
    return S.EOK


def hot_path_may_take(case: Case) -> bool:
    """The adds the hot path stores itself: every plain add the general path would store the same way."""
    return expected_status(case) is S.EOK and case.ledger == "known" and not case.recovery


@pytest_asyncio.fixture
async def bookie(tmp_path: Path) -> AsyncIterator[HotPathBookie]:
    async for started in hot_path_bookie(tmp_path, diskUsageThreshold=DISK_USAGE_THRESHOLD,
                                         minUsableSizeForEntryLogCreation=MIN_USABLE_FOR_ENTRY_LOGS,
                                         minUsableSizeForHighPriorityWrites=MIN_USABLE_FOR_HIGH_PRIORITY):
        yield started


async def _prepare(bookie: HotPathBookie, case: Case, ledger: int) -> None:
    """The ledger, the bookie's state and the ledger's disk as ``case`` has them."""
    engine = bookie.engine
    d = engine.dir_of(ledger)
    d.free_bytes = None  # measured only once the ledger exists
    if case.ledger != "unknown":
        await engine.add_entry(entry(ledger, 0, b"first"), MASTER_KEY)
    if case.ledger == "fenced":
        await engine.fence(ledger, MASTER_KEY)
    await bookie.state.set_manual(case.read_only)
    _measure_disk(d, case)


def _measure_disk(d: LedgerDirStorage, case: Case) -> None:
    """The disk checker's figures: ``case``'s margin above the reserve once this add and every pending entry are
    checkpointed."""
    if case.disk == "not measured":
        return
    margin = {"room to spare": 1 << 20, "exactly the reserve left": 0, "one byte short": -1}[case.disk.split(", ")[1]]
    d.total_bytes = LARGE_DISK if case.disk.startswith("large") else SMALL_DISK
    d.free_bytes = reserve(case) + d.pending_bytes() + ADD_SIZE + margin


def _add(ledger: int, case: Case) -> bytes:
    return add_frame(ledger, 1, key=MASTER_KEY if case.right_key else OTHER_KEY, recovery=case.recovery)


async def test_the_general_path_answers_every_case_as_the_table_says(bookie: HotPathBookie) -> None:
    wrong = []
    for number, case in enumerate(CASES):
        ledger = 1000 + number
        await _prepare(bookie, case, ledger)
        request = codec.decode_request(_add(ledger, case)[4:])  # without its length prefix
        response = await bookie.processor.process(request)
        if response.status is not expected_status(case):
            wrong.append(f"{case}: {response.status.name}, the table says {expected_status(case).name}")
    assert not wrong, "\n".join(wrong)


async def test_the_hot_path_takes_exactly_the_plain_adds_the_general_path_would_store(
        bookie: HotPathBookie) -> None:
    wrong = []
    for number, case in enumerate(CASES):
        ledger = 5000 + number
        await _prepare(bookie, case, ledger)
        stream, answered = bookie.stream(), len(bookie.written)
        stream.feed(_add(ledger, case))
        handed = drain(stream)
        taken = not handed
        if taken != hot_path_may_take(case):
            wrong.append(f"{case}: {'taken' if taken else 'handed back'} by the hot path")
            continue
        if taken:
            (answer,) = (await bookie.answers(answered + 1))[answered:]
            status = answer.status
        else:
            status = (await bookie.processor.process(handed[0])).status
        if status is not expected_status(case):
            wrong.append(f"{case}: {status.name}, the table says {expected_status(case).name}")
        stored = await _stored(bookie.engine, ledger)
        if stored != (status is S.EOK):
            wrong.append(f"{case}: answered {status.name} but the entry is {'' if stored else 'not '}stored")
    assert not wrong, "\n".join(wrong)


async def _stored(engine: StorageEngine, ledger: int) -> bool:
    try:
        return await engine.read_entry(ledger, 1) == entry(ledger, 1, b"p" * 100)
    except (NoEntryError, NoLedgerError):
        return False
