"""A status write says exactly what the new status is, at any depth: applying the operator's merge patch to
the stored status (as the API server does, RFC 7386) gives the new status, removed nested keys included."""

from __future__ import annotations

from typing import Any

from bookie_operator.status_patch import merge_patch
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.operator.merge_patch import apply_merge_patch

KEYS = st.sampled_from(["run", "active", "done", "pending", "scheduledFor", "compaction", "phase", "a", "b"])
LEAVES = st.one_of(st.integers(-3, 3), st.text(max_size=3), st.booleans(), st.lists(st.integers(0, 3), max_size=3))
# Status documents: nested objects without nulls (the operator never writes a null value on purpose).
DOCS = st.recursive(LEAVES, lambda children: st.dictionaries(KEYS, children, max_size=4), max_leaves=12)
OBJECTS = st.dictionaries(KEYS, DOCS, max_size=5)


@settings(max_examples=500, deadline=None)
@given(old=OBJECTS, new=OBJECTS)
def test_applying_the_patch_to_the_old_status_gives_the_new_one(old: dict[str, Any], new: dict[str, Any]) -> None:
    assert apply_merge_patch(old, merge_patch(old, new)) == new


def test_a_finished_compaction_run_is_removed_from_status() -> None:
    old = {"compaction": {"lastScheduleTime": "2026-11-24T02:48:00Z",
                          "run": {"active": 3, "done": [0, 1, 2], "pending": [], "scheduledFor": "02:48"}}}
    new = {"compaction": {"lastScheduleTime": "2026-11-24T02:48:00Z", "lastCompletionTime": "2026-11-24T02:49:10Z"}}
    patch = merge_patch(old, new)
    assert patch == {"compaction": {"run": None, "lastCompletionTime": "2026-11-24T02:49:10Z"}}
    assert apply_merge_patch(old, patch) == new


def test_an_unchanged_status_gives_an_empty_patch() -> None:
    status = {"conditions": [{"type": "Ready", "status": "True"}], "compaction": {"missedRuns": 0}}
    assert merge_patch(status, status) == {}
