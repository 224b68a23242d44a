"""The write cache holds what was added since the last checkpoint: any sequence of puts and ledger deletions
leaves it holding exactly what a plain mapping would, with the same sizes, last entries and checkpoint order
(ledgers in order, each one's entries in order); an empty cache takes any entry, a full one refuses more; a
cleared one holds nothing."""

from __future__ import annotations

import pytest
from bookie.storage.ledger_dir import WriteCache
from hypothesis import given, settings
from hypothesis import strategies as st

LEDGERS = st.integers(0, 6) | st.integers(2**40, 2**40 + 3)
OPS = st.lists(st.one_of(
    st.tuples(st.just("put"), LEDGERS, st.integers(0, 3000), st.binary(max_size=40)),
    st.tuples(st.just("delete"), LEDGERS, st.just(0), st.just(b""))), max_size=400)


@settings(max_examples=200, deadline=None)
@given(OPS)
def test_the_cache_holds_what_a_mapping_would(ops: list[tuple[str, int, int, bytes]]) -> None:
    cache = WriteCache(1 << 30)
    model: dict[tuple[int, int], bytes] = {}
    for op, ledger, entry, body in ops:
        if op == "put":
            cache.put(ledger, entry, body)
            model[ledger, entry] = body
        else:
            cache.delete_ledger(ledger)
            model = {k: v for k, v in model.items() if k[0] != ledger}
    assert len(cache) == cache.count == len(model)
    assert cache.size == sum(map(len, model.values()))
    for (ledger, entry), body in model.items():
        assert cache.get(ledger, entry) == body
    assert list(cache.sorted_entries()) == [(ledger, entry, model[ledger, entry]) for ledger, entry in sorted(model)]
    for ledger in {ledger for ledger, _ in model}:
        entry_ids = sorted(e for l2, e in model if l2 == ledger)
        assert cache.entry_ids(ledger) == entry_ids
        assert cache.last_entry(ledger) == entry_ids[-1]
    assert cache.get(99, 0) is None and cache.last_entry(99) is None and cache.entry_ids(99) == []


def test_a_large_cache_keeps_every_entry() -> None:
    cache = WriteCache(1 << 30)
    for i in range(200_000):
        cache.put(i % 64, i // 64, i.to_bytes(4, "big"))
    assert len(cache) == 200_000
    assert all(cache.get(i % 64, i // 64) == i.to_bytes(4, "big") for i in range(0, 200_000, 997))
    assert len(cache.sorted_entries()) == 200_000
    cache.clear()
    assert (len(cache), cache.size, cache.get(3, 5), cache.last_entry(3)) == (0, 0, None, None)


def test_an_empty_cache_takes_any_entry_and_a_full_one_refuses() -> None:
    cache = WriteCache(100)
    assert cache.has_room(10_000), "an entry larger than the cache still gets in alone"
    cache.put(1, 0, b"x" * 60)
    assert cache.has_room(40) and not cache.has_room(41)


def test_the_same_entry_again_replaces_it() -> None:
    cache = WriteCache(100)
    cache.put(1, 0, b"old")
    cache.put(1, 0, b"newer")
    assert (len(cache), cache.size, cache.get(1, 0)) == (1, 5, b"newer")


def test_only_bytes_are_cached() -> None:
    with pytest.raises(TypeError, match="must be bytes"):
        WriteCache(100).put(1, 0, bytearray(b"x"))  # type: ignore[arg-type]
