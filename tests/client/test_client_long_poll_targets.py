"""Which bookies a tailing reader's long poll asks (pure logic): first one known to have reached the LAC the
poll waits to pass, so that Apache BookKeeper's one-shot LAC watchers never leave the poll to its timeout."""

from __future__ import annotations

from bookie.client.ledger import long_poll_targets

ENSEMBLE = ["b0", "b1", "b2"]


def test_without_knowledge_the_write_set_in_order() -> None:
    assert long_poll_targets(["b1", "b2"], ENSEMBLE, {}, previous_lac=9) == ["b1", "b2"]


def test_a_write_set_bookie_that_reached_the_lac_goes_first() -> None:
    known = {"b1": 8, "b2": 9}
    assert long_poll_targets(["b1", "b2"], ENSEMBLE, known, previous_lac=9) == ["b2", "b1"]


def test_otherwise_the_caught_up_bookie_outside_the_write_set_then_the_write_set() -> None:
    known = {"b0": 12, "b1": 5, "b2": 8}
    assert long_poll_targets(["b1", "b2"], ENSEMBLE, known, previous_lac=9) == ["b0", "b1", "b2"]


def test_bookies_behind_the_lac_or_gone_from_the_ensemble_are_not_preferred() -> None:
    known = {"b0": 3, "old": 50}
    assert long_poll_targets(["b1", "b2"], ENSEMBLE, known, previous_lac=9) == ["b1", "b2"]


def test_an_unknown_bookie_is_not_taken_for_one_at_lac_minus_one() -> None:
    # previous_lac -1: the poll waits for entry 0; a bookie never heard from has not shown it reached -1
    assert long_poll_targets(["b0", "b1"], ENSEMBLE, {"b2": -1}, previous_lac=-1) == ["b2", "b0", "b1"]
