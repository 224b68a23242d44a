"""Which entries of a ledger a dead bookie took with it, and the metadata repair that gives them up.

An entry is stored on its write set: ``write_quorum`` consecutive positions of its segment's ensemble starting
at ``entry_id % ensemble_size`` (BookKeeper's round-robin striping). It is lost when every bookie of its write
set is dead. Autorecovery copies an entry from any surviving replica; a lost entry has none, so autorecovery
retries that ledger forever and the dead bookie can never leave its ensembles.

``give_up_lost_entries`` is the repair an operator accepts explicitly, as BookKeeper's ``updateBookieInLedger``
tool does it (an ensemble member replaced in the metadata, no data copied), only where that copies nothing:

* a position of a segment whose every entry is lost gets a live bookie in place of the dead one. Reading a
  lost entry from it answers "no such entry"; the positions holding surviving entries keep the dead bookie,
  and autorecovery then copies those as usual;
* the lost ranges are recorded in the ledger's custom metadata under ``LOST_ENTRIES_KEY``
  (``<bookie id>:<first>-<last>,...``, appended to any earlier record), so readers and tools can tell a hole
  given up on purpose from a bug;
* a closed ledger keeps its ``lastEntryId`` and length. An open ledger that lost entries of its last segment is
  closed before the first lost one (its length is left as the open ledger's, unknown): no reader could read
  past the hole, and no recovery can tell how far its writer got (its last entries were on the dead bookie
  only). That range is open-ended (``<first>-``).

A position holding both lost and surviving entries (possible only when two bookies of a segment are dead) is
refused (``UnrepairableLoss``): giving it up would give up the surviving entries too.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace

from bookie.metadata.ledger_metadata import LedgerMetadata, LedgerState
from bookie.metadata.pulsar import pulsar_owner

LOST_ENTRIES_KEY = "bookie-fleet/lost-entries"


class UnrepairableLoss(ValueError):
    """The loss cannot be given up by replacing bookies without giving up surviving entries too."""


@dataclass(frozen=True)
class EntryRange:
    """Entries ``first`` to ``last`` inclusive; ``last`` None: to the end of a ledger that was open."""

    first: int
    last: int | None

    def __str__(self) -> str:
        return f"{self.first}-{'' if self.last is None else self.last}"


@dataclass(frozen=True)
class Replacement:
    first_entry: int      # the segment
    position: int
    dead: str
    live: str


@dataclass(frozen=True)
class Repair:
    metadata: LedgerMetadata
    lost: tuple[EntryRange, ...]
    replaced: tuple[Replacement, ...]


def _write_set(entry_id: int, ensemble_size: int, write_quorum: int) -> list[int]:
    return [(entry_id + i) % ensemble_size for i in range(write_quorum)]


def _segments(md: LedgerMetadata) -> Iterator[tuple[int, int | None, tuple[str, ...]]]:
    """(first, last, ensemble) of each segment; last None for the open end of an open ledger."""
    firsts = list(md.ensembles)
    for k, first in enumerate(firsts):
        if k + 1 < len(firsts):
            last: int | None = firsts[k + 1] - 1
        else:
            last = md.last_entry_id if md.closed else None
        yield first, last, md.ensembles[first]


def _lost_offsets(ensemble: Sequence[str], write_quorum: int, dead: set[str]) -> set[int]:
    """Offsets modulo the ensemble size whose write set is all dead (the pattern repeats every ensemble)."""
    size = len(ensemble)
    return {o for o in range(size) if all(ensemble[p] in dead for p in _write_set(o, size, write_quorum))}


def _ranges(first: int, last: int, size: int, offsets: set[int]) -> list[EntryRange]:
    if len(offsets) == size:
        return [EntryRange(first, last)]
    out: list[EntryRange] = []
    for entry in range(first, last + 1):
        if entry % size not in offsets:
            continue
        if out and out[-1].last == entry - 1:
            out[-1] = EntryRange(out[-1].first, entry)
        else:
            out.append(EntryRange(entry, entry))
    return out


def lost_entries(md: LedgerMetadata, dead: set[str]) -> list[EntryRange]:
    """The entries of ``md`` whose every replica was on a ``dead`` bookie, as ascending ranges."""
    out: list[EntryRange] = []
    for first, last, ensemble in _segments(md):
        offsets = _lost_offsets(ensemble, md.write_quorum_size, dead)
        if not offsets:
            continue
        if last is None:   # open: the writer's progress is unknown, every entry from the first lost one on
            start = next(e for e in range(first, first + len(ensemble)) if e % len(ensemble) in offsets)
            out.append(EntryRange(start, None))
        elif last >= first:
            out.extend(_ranges(first, last, len(ensemble), offsets))
    return out


def give_up_lost_entries(md: LedgerMetadata, dead: set[str], live: Sequence[str], ledger_id: int = 0) -> Repair:
    """The metadata with every all-lost position's dead bookie replaced by a live one (module docstring).

    ``live``: the bookies that may take a position (registered, not dead), tried in a rotation starting at
    ``ledger_id`` so that repaired ledgers spread over them. Raises ``UnrepairableLoss`` for a position
    holding both lost and surviving entries, or when no live bookie is outside a segment's ensemble.
    """
    lost = lost_entries(md, dead)
    if not lost:
        return Repair(md, (), ())
    candidates = [b for b in live if b not in dead]
    ensembles = dict(md.ensembles)
    replaced: list[Replacement] = []
    for first, _last, ensemble in _segments(md):
        offsets = _lost_offsets(ensemble, md.write_quorum_size, dead)
        members = list(ensemble)
        for position, bookie in enumerate(ensemble):
            if bookie not in dead:
                continue
            held = {o for o in range(len(ensemble))
                    if position in _write_set(o, len(ensemble), md.write_quorum_size)}
            if not held <= offsets:
                if held & offsets:
                    raise UnrepairableLoss(
                        f"segment from entry {first}: {bookie} holds both lost entries and entries that survive "
                        "elsewhere (more than one bookie of the ensemble is dead): bring one of them back")
                continue   # every entry it held survives elsewhere: autorecovery copies them
            members[position] = _pick(candidates, members, ledger_id, first)
            replaced.append(Replacement(first, position, bookie, members[position]))
        ensembles[first] = tuple(members)
    repaired = replace(md, ensembles=ensembles, custom_metadata=_record(md.custom_metadata, dead, lost))
    if not md.closed and lost[-1].last is None:
        repaired = _close_before(repaired, lost[-1].first)
    return Repair(repaired, tuple(lost), tuple(replaced))


def _pick(candidates: Sequence[str], members: Sequence[str], ledger_id: int, first: int) -> str:
    usable = [b for b in candidates if b not in members]
    if not usable:
        raise UnrepairableLoss(f"segment from entry {first}: no live bookie outside its ensemble {list(members)}")
    return usable[ledger_id % len(usable)]


def _record(custom: Mapping[str, bytes], dead: set[str], lost: Sequence[EntryRange]) -> dict[str, bytes]:
    entry = f"{','.join(sorted(dead))}:{','.join(str(r) for r in lost)}"
    earlier = custom.get(LOST_ENTRIES_KEY)
    value = f"{earlier.decode()};{entry}" if earlier else entry
    return {**custom, LOST_ENTRIES_KEY: value.encode()}


def recorded_losses(value: str) -> list[EntryRange]:
    """The ranges given up on a ledger, from its ``LOST_ENTRIES_KEY`` record (``_record``'s format). A part that
    does not parse is skipped: what it named is then reported missing, never hidden."""
    ranges = []
    for part in value.split(";"):
        _, _, listed = part.rpartition(":")
        for text in listed.split(","):
            first, dash, last = text.strip().partition("-")
            if not dash or not first.isdigit() or (last and not last.isdigit()):
                continue
            ranges.append(EntryRange(int(first), int(last) if last else None))
    return ranges


def _close_before(md: LedgerMetadata, first_lost: int) -> LedgerMetadata:
    """Closed at ``first_lost - 1``; segments that start after that are dropped (they hold no entry)."""
    last = first_lost - 1
    kept = {f: e for f, e in md.ensembles.items() if f <= last or f == min(md.ensembles)}
    return replace(md, ensembles=kept, state=LedgerState.CLOSED, last_entry_id=last)


@dataclass(frozen=True)
class LedgerLoss:
    """What one ledger lost, for people: its id, the Pulsar topic its custom metadata names, the ranges."""

    ledger_id: int
    topic: str | None
    lost: tuple[EntryRange, ...]


def ledger_loss(ledger_id: int, md: LedgerMetadata, dead: set[str]) -> LedgerLoss | None:
    """The loss of one ledger, None when it lost nothing."""
    lost = lost_entries(md, dead)
    return LedgerLoss(ledger_id, pulsar_owner(md.custom_metadata), tuple(lost)) if lost else None
