"""The history checker finds every kind of violation of BookKeeper's guarantees in a recorded history, and
none in histories a correct ledger produces (random ones, from a seeded model of a writer, tailing readers
and a recovery or a close)."""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from tests.support.history import GUARANTEES, History, Op, check, report

HISTORIES = 200


class Timeline:
    """Builds a history by hand: each operation takes the next two ticks unless told otherwise."""

    def __init__(self) -> None:
        self.history = History()

    def op(self, kind: str, process: str = "w", *, overlap: bool = False, **fields: object) -> Op:
        start = self.history.clock()
        if overlap:  # invoked before the previous operation completed
            start = self.history.ops[-1].end - 1
        return self.history.add(Op(kind, process, 1, start, self.history.clock(), **fields))  # type: ignore[arg-type]


def _appended(t: Timeline, count: int) -> None:
    for i in range(count):
        t.op("append", entry=i, data=f"e{i}".encode(), ok=True)


def _lost_entry(t: Timeline) -> None:
    _appended(t, 3)
    t.op("recover", "r", ok=True, last=2, length=6)
    t.op("read", "r", entry=1, ok=False, missing=True)


def _changed_entry(t: Timeline) -> None:
    _appended(t, 3)
    t.op("read", "r", entry=2, ok=True, data=b"e1")


def _ends_disagree(t: Timeline) -> None:
    _appended(t, 3)
    t.op("recover", "r1", ok=True, last=2, length=6)
    t.op("recover", "r2", ok=True, last=1, length=4)


def _closed_short(t: Timeline) -> None:
    _appended(t, 3)
    t.op("close", ok=True, last=1, length=4)


def _closed_long(t: Timeline) -> None:
    _appended(t, 3)
    t.op("append", entry=3, data=b"e3", ok=False, error="timeout")
    t.op("close", ok=True, last=3, length=8)


def _wrong_length(t: Timeline) -> None:
    _appended(t, 3)
    t.op("close", ok=True, last=2, length=7)


def _recovery_cut_an_ack(t: Timeline) -> None:
    _appended(t, 3)
    t.op("recover", "r", ok=True, last=1, length=4)


def _writer_past_fence(t: Timeline) -> None:
    _appended(t, 2)
    t.op("recover", "r", ok=True, last=1, length=4)
    t.op("append", entry=1, data=b"x1", ok=True)  # a second writer, after the fence, at an id within it


def _ack_beyond_fence(t: Timeline) -> None:
    _appended(t, 2)
    t.op("recover", "r", ok=True, last=1, length=4)
    t.op("append", entry=2, data=b"e2", ok=True, overlap=True)


def _lac_backwards(t: Timeline) -> None:
    _appended(t, 4)
    t.op("lac", "r", ok=True, last=3)
    t.op("lac", "r2", ok=True, last=2)


def _lac_beyond_end(t: Timeline) -> None:
    _appended(t, 2)
    t.op("close", ok=True, last=1, length=4)
    t.op("lac", "r", ok=True, last=2)


def _read_past_lac_disagrees(t: Timeline) -> None:
    _appended(t, 2)
    t.op("append", entry=2, data=b"e2", ok=False, error="timeout")
    t.op("append", entry=2, data=b"E2", ok=False, error="timeout")  # a second attempt, other bytes
    t.op("read-unconfirmed", "tail", entry=2, ok=True, data=b"e2")
    t.op("recover", "r", ok=True, last=2, length=6)
    t.op("read", "r", entry=2, ok=True, data=b"E2")


def _phantom(t: Timeline) -> None:
    _appended(t, 2)
    t.op("read", "r", entry=1, ok=True, data=b"never written")


VIOLATIONS: dict[str, tuple[str, Callable[[Timeline], None]]] = {
    "acknowledged entry gone after recovery": ("acknowledged-durable", _lost_entry),
    "acknowledged entry reads other bytes": ("acknowledged-durable", _changed_entry),
    "two recoveries end it differently": ("closed-length", _ends_disagree),
    "writer closes before its last ack": ("closed-length", _closed_short),
    "writer closes after its last ack": ("closed-length", _closed_long),
    "length is not the entries' sum": ("closed-length", _wrong_length),
    "recovery cuts an acknowledged entry off": ("fenced", _recovery_cut_an_ack),
    "second writer succeeds after the fence": ("fenced", _writer_past_fence),
    "entry acknowledged beyond the fence": ("fenced", _ack_beyond_fence),
    "LAC goes backwards": ("lac-monotonic", _lac_backwards),
    "LAC beyond the closed end": ("lac-monotonic", _lac_beyond_end),
    "read past the LAC disagrees with a later reader": ("read-past-lac", _read_past_lac_disagrees),
    "read returns bytes nobody wrote": ("no-phantom", _phantom),
}


@pytest.mark.parametrize("name", VIOLATIONS)
def test_each_known_violation_is_found_and_named(name: str) -> None:
    guarantee, build = VIOLATIONS[name]
    t = Timeline()
    build(t)
    found = check(t.history)
    assert guarantee in {v.guarantee for v in found}, f"{name}: not found in\n{report(found, t.history)}"
    assert all(v.ops for v in found), "every violation names the operations behind it"


def test_every_guarantee_has_a_known_violation() -> None:
    assert {guarantee for guarantee, _ in VIOLATIONS.values()} == set(GUARANTEES)


def _correct_ledger(rng: random.Random) -> History:
    """A history a correct ledger could produce: a writer appends (some adds time out, their outcome unknown),
    readers read acknowledged entries and read the LAC and past it, and the ledger ends by its writer's close
    or by a reader's recovery, after which everyone reads it back."""
    h = History()
    acked: dict[int, bytes] = {}
    written: dict[int, bytes] = {}  # on some bookie, acknowledged or not
    lac, next_id = -1, 0
    for step in range(rng.randint(5, 60)):
        start = h.clock()
        action = rng.random()
        if action < 0.5:
            data = f"entry {next_id} step {step}".encode()
            written[next_id] = data
            ok = rng.random() < 0.9
            if ok:
                acked[next_id] = data
                lac = next_id - 1  # the LAC a bookie learns rides on the next add
            h.add(Op("append", "w", 7, start, h.clock(), ok, entry=next_id, data=data, error="" if ok else "timeout"))
            if not ok:
                break  # the writer's handle is broken: it stops, a reader recovers
            next_id += 1
        elif action < 0.7 and acked:
            entry = rng.choice(sorted(acked))
            h.add(Op("read", f"r{rng.randint(1, 3)}", 7, start, h.clock(), True, entry=entry, data=acked[entry]))
        elif action < 0.85:
            h.add(Op("lac", f"r{rng.randint(1, 3)}", 7, start, h.clock(), True, last=lac))
        elif written:
            entry = rng.choice(sorted(written))
            h.add(Op("read-unconfirmed", "tail", 7, start, h.clock(), True, entry=entry, data=written[entry]))
    # Recovery may keep an unacknowledged entry that reached a bookie; a writer closes at its last ack.
    recovering = not acked or len(written) > len(acked) or rng.random() < 0.5
    last = max(written, default=-1) if recovering and rng.random() < 0.5 else max(acked, default=-1)
    length = sum(len(written[i]) for i in range(last + 1))
    start = h.clock()
    h.add(Op("recover" if recovering else "close", "r1" if recovering else "w", 7, start, h.clock(), True,
             last=last, length=length))
    for entry in range(last + 1):
        start = h.clock()
        h.add(Op("read", "r2", 7, start, h.clock(), True, entry=entry, data=written[entry]))
    start = h.clock()
    h.add(Op("lac", "r2", 7, start, h.clock(), True, last=last))
    return h


def test_histories_of_a_correct_ledger_have_no_violation(seeded_rng: random.Random) -> None:
    for i in range(HISTORIES):
        history = _correct_ledger(seeded_rng)
        assert check(history) == [], f"history {i}: {report(check(history), history)}"


def test_bad_operations_are_refused_with_the_reason() -> None:
    with pytest.raises(ValueError, match="unknown operation kind 'write'"):
        Op("write", "w", 1, 0, 1, True)
    with pytest.raises(ValueError, match=r"completed .* before it started"):
        Op("read", "w", 1, 5, 2, True, entry=0)
    with pytest.raises(ValueError, match="needs its entry id"):
        Op("append", "w", 1, 0, 1, True)
    with pytest.raises(ValueError, match="needs the last entry id"):
        Op("recover", "r", 1, 0, 1, True)
