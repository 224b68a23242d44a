"""Standard conditions: lastTransitionTime moves only when the status does."""

from __future__ import annotations

import datetime as dt

from bookie_operator.decisions import condition, set_condition

from tests.operator.helpers import NOW


def test_transition_time_is_kept_while_the_status_is_unchanged() -> None:
    first = set_condition([], "Ready", False, "BookiesNotReady", "0/3", NOW, 1)
    later = NOW + dt.timedelta(minutes=1)
    same = set_condition(first, "Ready", False, "BookiesNotReady", "2/3", later, 2)
    c = condition(same, "Ready")
    assert c is not None and c.last_transition_time == "2026-11-22T12:00:00Z" and c.message == "2/3"
    assert c.observed_generation == 2
    flipped = condition(set_condition(same, "Ready", True, "BookiesReady", "", later, 2), "Ready")
    assert flipped is not None and flipped.status == "True" and flipped.last_transition_time == "2026-11-22T12:01:00Z"


def test_conditions_are_upserted_by_type() -> None:
    cs = set_condition([], "Ready", True, "A", "", NOW, 1)
    cs = set_condition(cs, "DiskPressure", None, "B", "", NOW, 1)
    cs = set_condition(cs, "Ready", False, "C", "", NOW, 1)
    assert [(c.type, c.status) for c in cs] == [("Ready", "False"), ("DiskPressure", "Unknown")]
