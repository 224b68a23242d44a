"""Image or config changes restart one bookie at a time, after readiness and full replication."""

from __future__ import annotations

from bookie_operator.decisions import pod_to_restart

from tests.operator.helpers import bookie


def test_the_highest_outdated_ordinal_restarts_first_when_all_is_well() -> None:
    bookies = [bookie(0, revision="old"), bookie(1, revision="old"), bookie(2, revision="new")]
    pod, waiting = pod_to_restart(bookies, "new", 0, 3)
    assert pod is not None and pod.ordinal == 1 and waiting is None


def test_nothing_restarts_while_a_bookie_is_not_ready_or_ledgers_are_under_replicated() -> None:
    bookies = [bookie(0, revision="old"), bookie(1, revision="new", ready=False), bookie(2, revision="new")]
    assert pod_to_restart(bookies, "new", 0, 3) == (None, "every bookie ready before the next restart")
    ready = [bookie(0, revision="old"), bookie(1, revision="new"), bookie(2, revision="new")]
    assert pod_to_restart(ready, "new", 3, 3) == (None, "no under-replicated ledgers before the next restart")
    assert pod_to_restart(ready, "new", None, 3)[0] is None
    missing = [bookie(0, revision="old"), bookie(1, revision="new")]
    assert pod_to_restart(missing, "new", 0, 3)[0] is None


def test_up_to_date_clusters_restart_nothing() -> None:
    assert pod_to_restart([bookie(0, revision="new")], "new", 0, 1) == (None, None)
