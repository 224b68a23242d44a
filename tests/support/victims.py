"""A victim bookie in a ledger's ensemble, for the failing-device scenarios of tests/faults/: place a ledger on
it, know which entries it was asked to store, and read them from it alone into the history.

``ledger_on(bk, bookie_id)``: a new 3/2/2 (or 3/3/2) ledger whose ensemble holds the bookie; ``asked_of(handle,
bookie_id)``: the entries it was a write-set member of; ``read_from(victim, ...)``: raw reads of those entries
from it alone, recorded (a definite "no such entry" is ``missing``, so the checker flags an acknowledged entry it
lost); ``wait_writable(bk, victim, name)``: until it is listed as writable; ``append_batches(...)``: the writer's
appends, none of which may fail; ``victims_own_violations(history, tolerated)``: the checker's verdict, where the
victims' own wrong answers are counted rather than failed on for an implementation known to give them.
``METRICS_CONF`` and ``JAVA_METRICS``: the configuration under which both implementations serve ``/metrics`` on their
admin port; ``victim_metrics(victim)``: its exposition text; ``successful_totals(victim, family)``: the
milliseconds and events of a summary's successful events so far; ``write_caches_flushed(victim, name)``: until
everything it acknowledged is in its entry logs and indexes; ``slowed_in_log(victim, since)``: the calls the
slow-device preload says it delayed; ``storage_failure_logged(victim, since)``: the line in which it said its
storage failed; ``fail_stopped(victim, kind, name, within)``: until it has stopped itself, with the exit status
that says so.
"""

from __future__ import annotations

import asyncio
import random
import re
from typing import Any

from bookie.client import BookKeeper, LedgerHandle
from bookie.config import PROMETHEUS_PROVIDER
from bookie.protocol.codes import StatusCode

from tests.support.history import History, Op, check, report
from tests.support.raw_client import RawConnection
from tests.support.recorder import Recorder
from tests.support.rest import get

# The cluster of a failing-device scenario: Apache BookKeeper's storage as deployed, no GC to run meanwhile, and
# read-only only from the scenario's fault (the machine's disk is shared).
VICTIM_CONF: dict[str, Any] = {"ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
                               "gcWaitTime": 3_600_000, "diskUsageThreshold": 0.999, "diskUsageWarnThreshold": 0.998}
# Scenarios that read a victim's /metrics. Apache BookKeeper's bookies serve it on their admin HTTP server once a
# provider is set; the provider's own listener is turned off, the bookies sharing one machine and one port setting.
METRICS_CONF: dict[str, Any] = {"statsProviderClass": PROMETHEUS_PROVIDER}
JAVA_METRICS: dict[str, Any] = {"http": True, "prometheusStatsHttpEnable": False}
BOOKIE_EXCEPTION = 5  # the exit status of a bookie whose storage failed (BookKeeper's ExitCode)
READ_WITHIN = 30.0  # s: a bookie answers a read, success or error, well within this; longer is a hang
FLUSHED_WITHIN = 60.0  # s: a bookie empties its write caches within a few flush intervals; longer is a stuck flush
# What each implementation logs when its storage fails and it stops itself: ours, Apache BookKeeper's.
STORAGE_FAILED = ("storage cannot keep its promises any more", "Triggering shutdown of Bookie")


async def ledger_on(bk: BookKeeper, bookie_id: str, write_quorum: int = 2) -> LedgerHandle:
    """A new 3/``write_quorum``/2 ledger whose ensemble holds ``bookie_id`` (the client places ensembles at
    random)."""
    for _ in range(50):
        handle = await bk.create_ledger(3, write_quorum, 2)
        if bookie_id in handle.ensemble:
            return handle
        await handle.close()
    raise AssertionError(f"50 new ledgers and none placed on {bookie_id}")


def asked_of(handle: LedgerHandle, bookie_id: str, last: int | None = None) -> list[int]:
    """The entries up to ``last`` (default: the ledger's last) the bookie was a write-set member of, before an
    ensemble change replaced it (round robin: entry e goes to ensemble positions e to e + write quorum - 1,
    modulo the ensemble's size)."""
    firsts = sorted(handle.metadata.ensembles)
    if last is None:
        last = handle.metadata.last_entry_id
    asked = []
    for index, first in enumerate(firsts):
        ensemble = handle.metadata.ensembles[first]
        end = min(firsts[index + 1] - 1, last) if index + 1 < len(firsts) else last
        if bookie_id not in ensemble:
            continue
        position = ensemble.index(bookie_id)
        size = len(ensemble)
        quorum = handle.metadata.write_quorum_size
        asked += [entry for entry in range(first, end + 1)
                  if position in {(entry + k) % size for k in range(quorum)}]
    return asked


async def read_from(victim: Any, ledger_id: int, entries: list[int], history: History,
                    process: str) -> dict[int, StatusCode]:
    """Read each entry from this bookie alone and record it: no such entry is a definite answer. Returns each
    entry's status; a read unanswered within ``READ_WITHIN`` (a hang) or a connection the bookie closes fails the
    caller, with whether the bookie still runs and its log's end."""
    acknowledged = history.acknowledged(ledger_id)
    statuses: dict[int, StatusCode] = {}
    async with await RawConnection.open(victim.bookie_id) as conn:
        for entry in entries:
            start = history.clock()
            try:
                response = await asyncio.wait_for(conn.read(ledger_id, entry), READ_WITHIN)
            except TimeoutError:
                raise AssertionError(f"{victim.bookie_id} did not answer a read of {ledger_id}:{entry} within "
                                     f"{READ_WITHIN} s; log:\n{victim.tail_log(80)}") from None
            except (ConnectionError, asyncio.IncompleteReadError) as exc:
                raise AssertionError(f"{victim.bookie_id} closed the connection of a read of {ledger_id}:{entry} "
                                     f"({exc!r}); {'running' if victim.running else 'not running'}; log:\n"
                                     f"{victim.tail_log(80)}") from None
            statuses[entry] = response.status
            if response.status == StatusCode.EOK:
                body = bytes(response.body)
                wanted = acknowledged.get(entry)
                data = wanted if wanted is not None and body.endswith(wanted) else body
                history.add(Op("read", process, ledger_id, start, history.clock(), True, entry=entry, data=data))
            else:
                missing = response.status in (StatusCode.ENOENTRY, StatusCode.ENOLEDGER)
                history.add(Op("read", process, ledger_id, start, history.clock(), False, entry=entry,
                               missing=missing, error=str(response.status)))
    return statuses


async def served_after_a_restart(victim: Any, ledger_id: int, asked: list[int], history: History, name: str) -> int:
    """The victim started again (stopped first if it runs), as its supervisor would, and each entry it acknowledged
    read from it alone into ``history``; returns how many it served."""
    await asyncio.to_thread(victim.stop)
    await asyncio.to_thread(victim.start)
    statuses = await read_from(victim, ledger_id, asked, history, f"victim-reader-{name}")
    return sum(1 for status in statuses.values() if status == StatusCode.EOK)


async def wait_writable(bk: BookKeeper, victim: Any, name: str) -> None:
    for _ in range(600):
        if victim.bookie_id in await bk.writable_bookies():
            return
        await asyncio.sleep(0.1)
    read_only = victim.bookie_id in await bk.readonly_bookies()
    raise AssertionError(f"{name}: {victim.bookie_id} not writable within 60 s (read-only: "
                         f"{read_only}); log:\n{victim.tail_log()}")


async def closed_ledger_on(bk: BookKeeper, victim: Any, history: History, payloads: random.Random, count: int,
                           name: str, in_flight: int, why: str) -> tuple[LedgerHandle, list[int]]:
    """A 3/2/2 ledger with ``victim`` in its ensemble, ``count`` entries appended (each acknowledged) and closed;
    returns it and the entries the victim acknowledged."""
    handle = await ledger_on(bk, victim.bookie_id)
    writer = Recorder(history, f"writer-{name}")
    await append_batches(writer, handle, payloads, count, name, in_flight, why)
    assert await writer.close(handle), f"{name}: the first writer could not close its ledger"
    asked = asked_of(handle, victim.bookie_id)
    assert asked, f"{name}: {victim.bookie_id} was asked to store nothing"
    return handle, asked


async def append_batches(writer: Recorder, handle: LedgerHandle, payloads: random.Random, count: int, name: str,
                         in_flight: int, why: str) -> None:
    """``count`` appends (or up to ``in_flight`` more), ``in_flight`` at a time, seeded payloads named after the
    round; every one must be acknowledged (``why`` says why none may fail)."""
    done = 0
    while done < count:
        batch = [f"{name} {handle.last_add_pushed + 1 + i} ".encode() + payloads.randbytes(payloads.randint(100, 4000))
                 for i in range(in_flight)]
        results = await asyncio.gather(*(writer.append(handle, data) for data in batch))
        assert None not in results, f"{name}: an append failed; {why}"
        done += len(results)


def victims_own_violations(history: History, tolerated: bool) -> int:
    """Fail on every violation the checker finds, except, when ``tolerated``, those of the victims' own reads (an
    implementation known to lose or misanswer what it acknowledged: counted and printed, not failed on). Returns
    how many of the victims' own there were."""
    violations = check(history)
    own = [v for v in violations if any(op.process.startswith("victim-reader") for op in v.ops)]
    if tolerated:
        violations = [v for v in violations if v not in own]
    assert not violations, report(violations, history)
    return len(own)


async def victim_metrics(victim: Any) -> str:
    """The victim's ``/metrics`` exposition (either implementation, under ``METRICS_CONF``)."""
    answer = await get(f"{victim.http_url}/metrics")
    assert answer.status == 200, f"{victim.bookie_id}'s /metrics answered {answer.status}: {answer.text[:300]}"
    return answer.text


async def successful_totals(victim: Any, family: str) -> tuple[float, float]:
    """(milliseconds, events) of the victim's successful ``family`` events so far (a summary of either
    implementation), summed over its label sets (journals, ledger directories)."""
    text = await victim_metrics(victim)
    pattern = re.compile(rf'^{re.escape(family)}_(sum|count)\{{([^}}]*)\}} (\S+)$', re.MULTILINE)
    totals, found = {"sum": 0.0, "count": 0.0}, False
    for kind, labels, value in pattern.findall(text):
        if 'success="true"' in labels:
            totals[kind] += float(value)
            found = True
    assert found, f"{victim.bookie_id}'s /metrics has no {family}:\n{text[:3000]}"
    return totals["sum"], totals["count"]


async def write_caches_flushed(victim: Any, name: str) -> None:
    """Until the victim's write caches are empty: every entry it acknowledged is in its entry logs and indexes, so
    its reads of them go to its ledger device. Both implementations count the cache being flushed in
    ``bookie_write_cache_size`` until its whole flush, the indexes' syncs included, is over (under
    ``METRICS_CONF``). A fixed wait is not enough on a loaded host: a flush still syncing our location index when
    the device starts failing reads back the table it wrote, and fails."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + FLUSHED_WITHIN
    pattern = re.compile(r"^bookie_write_cache_size(?:\{[^}]*\})? (\S+)$", re.MULTILINE)
    while True:
        sizes = [float(value) for value in pattern.findall(await victim_metrics(victim))]
        assert sizes, f"{name}: {victim.bookie_id}'s /metrics has no bookie_write_cache_size"
        if not any(sizes):
            return
        assert loop.time() < deadline, (f"{name}: {victim.bookie_id} still had {sum(sizes):.0f} bytes in its write "
                                        f"caches after {FLUSHED_WITHIN} s; log:\n{victim.tail_log()}")
        await asyncio.sleep(0.1)


def storage_failure_logged(victim: Any, since: int) -> str | None:
    """The line, from byte ``since`` of the victim's log, in which it said its storage failed and it stops."""
    with victim.log_path.open("rb") as log:
        log.seek(since)
        lines = log.read().decode(errors="replace").splitlines()
    return next((line.strip() for line in lines if any(said in line for said in STORAGE_FAILED)), None)


async def fail_stopped(victim: Any, kind: str, name: str, within: float) -> str:
    """Until the victim has stopped itself, within ``within`` s; ours must exit with BookKeeper's
    ``BOOKIE_EXCEPTION`` status (5), the one that tells its supervisor storage failed. Apache BookKeeper 4.17.3's
    logs that status but its process exits with 0 (docs/reliability.md), so for it only the stop is required."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while victim.running:
        if loop.time() > deadline:
            raise AssertionError(f"{name}: {victim.bookie_id} still running {within} s after its storage failed; "
                                 f"log:\n{victim.tail_log()}")
        await asyncio.sleep(0.1)
    status = victim.proc.returncode
    if kind == "python":
        assert status == BOOKIE_EXCEPTION, (f"{name}: {victim.bookie_id} exited with {status}, not "
                                            f"{BOOKIE_EXCEPTION}; log:\n{victim.tail_log()}")
    return f"exited with status {status}"


def slowed_in_log(victim: Any, since: int) -> int:
    """How many calls the slow-device preload delayed, by the victim's log from byte ``since``."""
    with victim.log_path.open("rb") as log:
        log.seek(since)
        return log.read().decode(errors="replace").count(": slowed by ")
