"""A history of client operations on ledgers, and a checker of BookKeeper's guarantees over it.

Pure logic: no I/O. Scenarios record every operation a client makes (``tests/support/recorder.py`` does it
around the real ledger client) with the moment it was invoked and the moment it completed, both taken from
one counter so that "A completed before B was invoked" is the real-time order. ``check`` then judges the
whole history at once and returns every violation it finds (an empty list: the history is one BookKeeper
allows).

The guarantees, as BookKeeper states them for one ledger:

- ``acknowledged-durable``: an entry whose append was acknowledged is readable with exactly its bytes by
  every read that starts after the acknowledgement; a read that definitely finds no such entry, or other
  bytes, is a violation (an indeterminate failure, a timeout, is not).
- ``closed-length``: every successful close or recovery of a ledger reports the same last entry and length;
  that last entry is at or after every acknowledged entry; a writer that closes its own ledger (nobody
  recovered it) ends it exactly at its last acknowledged entry; the length is the sum of the entries' sizes.
- ``fenced``: once a recovery has completed, no append is acknowledged beyond the last entry it fixed, and
  no append invoked after it is acknowledged at all (the fenced writer cannot keep writing).
- ``lac-monotonic``: a LAC read that starts after another completed never returns less; no LAC is beyond the
  closed ledger's last entry.
- ``read-past-lac``: an entry read beyond the LAC, when the ledger ends up holding that entry id, holds the
  same bytes (BookKeeper allows the ledger to end before it: that is why such reads are "unconfirmed").
- ``no-phantom``: every entry read is one some writer appended to that ledger at that entry id.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field

GUARANTEES = ("acknowledged-durable", "closed-length", "fenced", "lac-monotonic", "read-past-lac", "no-phantom")
KINDS = ("append", "read", "read-unconfirmed", "recover", "close", "lac")


@dataclass(frozen=True)
class Op:
    """One completed client operation.

    ``ok``: it succeeded. A failed read is ``missing`` when the bookies definitely have no such entry (no
    such entry / ledger), otherwise its outcome is unknown (a timeout, a partition) and nothing is concluded.
    ``entry``: the entry id appended (acknowledged or attempted) or read. ``data``: the bytes appended or
    read. ``last`` and ``length``: the last entry id and length a close or recovery fixed, or the LAC read.
    """

    kind: str
    process: str
    ledger: int
    start: int
    end: int
    ok: bool
    entry: int | None = None
    data: bytes | None = None
    last: int | None = None
    length: int | None = None
    missing: bool = False
    error: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"unknown operation kind {self.kind!r}; one of {', '.join(KINDS)}")
        if self.end < self.start:
            raise ValueError(f"{self.kind} by {self.process} completed ({self.end}) before it started "
                             f"({self.start})")
        if self.ok and self.kind in ("append", "read", "read-unconfirmed") and self.entry is None:
            raise ValueError(f"a successful {self.kind} by {self.process} needs its entry id")
        if self.ok and self.kind in ("recover", "close", "lac") and self.last is None:
            raise ValueError(f"a successful {self.kind} by {self.process} needs the last entry id it saw")

    def __str__(self) -> str:
        outcome = "ok" if self.ok else ("missing" if self.missing else f"failed ({self.error or 'unknown'})")
        what = f" entry {self.entry}" if self.entry is not None else ""
        last = f" last {self.last}" if self.last is not None else ""
        return f"[{self.start}-{self.end}] {self.process} {self.kind} L{self.ledger}{what}{last}: {outcome}"


@dataclass(frozen=True)
class Violation:
    guarantee: str
    ledger: int
    message: str
    ops: tuple[Op, ...]

    def __str__(self) -> str:
        return f"{self.guarantee} (ledger {self.ledger}): {self.message}\n" + "".join(f"    {op}\n" for op in self.ops)


@dataclass
class History:
    """Operations in the order they completed; ``clock()`` gives the shared invoke/complete counter."""

    ops: list[Op] = field(default_factory=list)
    _ticks: Iterator[int] = field(default_factory=itertools.count)

    def clock(self) -> int:
        return next(self._ticks)

    def add(self, op: Op) -> Op:
        self.ops.append(op)
        return op

    def ledgers(self) -> set[int]:
        return {op.ledger for op in self.ops}

    def acknowledged(self, ledger: int) -> dict[int, bytes]:
        return {op.entry: op.data or b"" for op in self.ops
                if op.ledger == ledger and op.kind == "append" and op.ok and op.entry is not None}

    def __len__(self) -> int:
        return len(self.ops)


def check(history: History | Iterable[Op]) -> list[Violation]:
    ops = list(history.ops if isinstance(history, History) else history)
    by_ledger: dict[int, list[Op]] = defaultdict(list)
    for op in ops:
        by_ledger[op.ledger].append(op)
    found: list[Violation] = []
    for ledger, ledger_ops in sorted(by_ledger.items()):
        found += _check_ledger(ledger, ledger_ops)
    return found


def report(violations: list[Violation], history: History | None = None) -> str:
    """The text a failing scenario prints: each violation with the operations behind it."""
    if not violations:
        return "no violations"
    counts = f" in {len(history)} operations" if history is not None else ""
    return f"{len(violations)} violation(s){counts}:\n" + "".join(str(v) for v in violations)


def _check_ledger(ledger: int, ops: list[Op]) -> list[Violation]:
    acked = {op.entry: op for op in ops if op.kind == "append" and op.ok and op.entry is not None}
    ends = [op for op in ops if op.kind in ("recover", "close") and op.ok]
    return [*_acknowledged_durable(ledger, ops, acked), *_closed_length(ledger, ops, acked, ends),
            *_fenced(ledger, ops, ends), *_lac_monotonic(ledger, ops, ends),
            *_read_past_lac(ledger, ops, acked, ends), *_no_phantom(ledger, ops)]


def _acknowledged_durable(ledger: int, ops: list[Op], acked: dict[int, Op]) -> Iterator[Violation]:
    for read in ops:
        if read.kind != "read" or read.entry not in acked:
            continue
        append = acked[read.entry]
        if read.start < append.end:
            continue  # concurrent with the add: either outcome is allowed
        if read.ok and read.data != append.data:
            yield Violation("acknowledged-durable", ledger, f"entry {read.entry} reads back different bytes",
                            (append, read))
        elif not read.ok and read.missing:
            yield Violation("acknowledged-durable", ledger, f"acknowledged entry {read.entry} is gone",
                            (append, read))


def _closed_length(ledger: int, ops: list[Op], acked: dict[int, Op], ends: list[Op]) -> Iterator[Violation]:
    if not ends:
        return
    first = ends[0]
    for other in ends[1:]:
        if (other.last, other.length) != (first.last, first.length):
            yield Violation("closed-length", ledger, f"two ends disagree: last {first.last} length {first.length} "
                            f"vs last {other.last} length {other.length}", (first, other))
    top = max(acked, default=-1)
    for end in ends:  # recoveries that cut acknowledged entries off are `fenced` violations
        assert end.last is not None  # Op checks it for successful ends
        if end.kind == "close" and end.last < top:
            yield Violation("closed-length", ledger, f"closed at {end.last} before acknowledged entry {top}",
                            (acked[top], end))
    recovered = any(op.kind == "recover" and op.ok for op in ops)
    for end in ends:
        if end.kind == "close" and not recovered and end.last is not None and end.last > top:
            cause = (acked[top],) if top >= 0 else ()
            yield Violation("closed-length", ledger, f"its writer closed it at {end.last}, not at its last "
                            f"acknowledged entry {top}", (*cause, end))
    yield from _length_matches(ledger, ops, acked, first)


def _length_matches(ledger: int, ops: list[Op], acked: dict[int, Op], end: Op) -> Iterator[Violation]:
    """The length is the sum of the entries' sizes, when every entry up to the end is known."""
    if end.length is None or end.last is None:
        return
    sizes = {entry: len(op.data or b"") for entry, op in acked.items()}
    for op in ops:
        if op.kind == "read" and op.ok and op.entry is not None:
            sizes.setdefault(op.entry, len(op.data or b""))
    if all(entry in sizes for entry in range(end.last + 1)):
        total = sum(sizes[entry] for entry in range(end.last + 1))
        if total != end.length:
            yield Violation("closed-length", ledger, f"length {end.length} but entries 0..{end.last} hold "
                            f"{total} bytes", (end,))


def _fenced(ledger: int, ops: list[Op], ends: list[Op]) -> Iterator[Violation]:
    for recovery in (op for op in ends if op.kind == "recover"):
        assert recovery.last is not None
        for append in ops:
            if append.kind != "append" or not append.ok or append.entry is None:
                continue
            if append.entry > recovery.last:
                # Recovery reads enough bookies to meet every ack quorum: an acknowledged entry is never
                # beyond it, whatever the timing.
                yield Violation("fenced", ledger, f"entry {append.entry} acknowledged beyond the recovered end "
                                f"{recovery.last}", (recovery, append))
            elif append.start > recovery.end and append.process != recovery.process:
                yield Violation("fenced", ledger, f"{append.process} appended after the ledger was recovered",
                                (recovery, append))


def _lac_monotonic(ledger: int, ops: list[Op], ends: list[Op]) -> Iterator[Violation]:
    lacs = sorted((op for op in ops if op.kind == "lac" and op.ok), key=lambda op: op.start)
    for later in lacs:
        assert later.last is not None
        earlier = [op for op in lacs if op.end < later.start and (op.last or -1) > later.last]
        if earlier:
            yield Violation("lac-monotonic", ledger, f"LAC went back from {earlier[0].last} to {later.last}",
                            (earlier[0], later))
    for end in ends:
        assert end.last is not None
        for lac in lacs:
            if (lac.last or -1) > end.last:
                yield Violation("lac-monotonic", ledger, f"LAC {lac.last} beyond the ledger's end {end.last}",
                                (end, lac))


def _final_content(ops: list[Op], acked: dict[int, Op], ends: list[Op]) -> dict[int, bytes]:
    """The bytes the ledger ends up holding at each id: acknowledged entries, and entries read at or below
    its end by plain reads after it ended."""
    content = {entry: op.data or b"" for entry, op in acked.items()}
    if ends:
        end = ends[0]
        assert end.last is not None
        for op in ops:
            if (op.kind == "read" and op.ok and op.entry is not None and op.entry <= end.last
                    and op.start > end.end):
                content.setdefault(op.entry, op.data or b"")
    return content


def _read_past_lac(ledger: int, ops: list[Op], acked: dict[int, Op], ends: list[Op]) -> Iterator[Violation]:
    content = _final_content(ops, acked, ends)
    for read in ops:
        if read.kind == "read-unconfirmed" and read.ok and read.entry in content:
            if read.data != content[read.entry]:
                witness = acked.get(read.entry) or next(
                    op for op in ops if op.kind == "read" and op.ok and op.entry == read.entry)
                yield Violation("read-past-lac", ledger, f"entry {read.entry} read past the LAC holds bytes a "
                                "later reader disagrees with", (read, witness))


def _no_phantom(ledger: int, ops: list[Op]) -> Iterator[Violation]:
    written: dict[int, set[bytes]] = defaultdict(set)
    unplaced: set[bytes] = set()  # appends that failed before an entry id was known
    for op in ops:
        if op.kind == "append" and op.data is not None:
            (written[op.entry] if op.entry is not None else unplaced).add(op.data)
    for read in ops:
        if read.kind in ("read", "read-unconfirmed") and read.ok and read.entry is not None:
            if read.data not in written[read.entry] and read.data not in unplaced:
                yield Violation("no-phantom", ledger, f"entry {read.entry} holds bytes nobody appended there",
                                (read,))
