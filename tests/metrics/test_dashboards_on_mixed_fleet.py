"""Every PromQL expression of the common BookKeeper dashboards that returns data for Apache BookKeeper's
bookies returns data for ours too, evaluated by a real Prometheus scraping a mixed fleet under load; the
expressions listed as absent in 4.17 return nothing for Java bookies either (so the list stays honest)."""

from __future__ import annotations

import time

from tests.metrics.conftest import Monitored
from tests.metrics.dashboards import ABSENT_IN_4_17, JVM_ONLY, SHARED, Query

DEADLINE_S = 240  # JVMs on a busy 2-core machine, a 1 m rate window, 5 s quantile windows


def answered(m: Monitored, queries: list[Query], kind: str) -> set[str]:
    return {q.source for q in queries if m.prometheus.query(q.for_selector(m.selector(kind)))}


def wait_for_answers(m: Monitored, queries: list[Query], kind: str) -> set[str]:
    """The sources of the queries that returned data, waiting until all do or the deadline passes."""
    deadline = time.monotonic() + DEADLINE_S
    done: set[str] = set()
    while True:
        assert m.load.error is None, f"the load stopped: {m.load.error!r}"
        pending = [q for q in queries if q.source not in done]
        done |= answered(m, pending, kind)
        if len(done) == len(queries) or time.monotonic() > deadline:
            return done
        time.sleep(3)


def test_every_scrape_target_is_up(monitored: Monitored) -> None:
    deadline = time.monotonic() + 120
    while set((health := monitored.prometheus.targets_up()).values()) != {"up"}:
        assert time.monotonic() < deadline, health
        time.sleep(2)
    assert len(health) == 6


def test_dashboard_expressions_answer_for_ours_wherever_they_answer_for_java(monitored: Monitored) -> None:
    java = wait_for_answers(monitored, SHARED, "java")
    everything = {q.source for q in SHARED}
    assert java == everything, f"not answered for Java bookies: {sorted(everything - java)}"
    ours = wait_for_answers(monitored, SHARED, "python")
    assert ours == java, f"answered for Java bookies but not for ours: {sorted(java - ours)}"
    assert monitored.load.added > 0 and monitored.load.read > 0


def test_absent_expressions_are_absent_for_java_too(monitored: Monitored) -> None:
    wait_for_answers(monitored, SHARED[:3], "java")  # the Java bookies are scraped by now
    assert not answered(monitored, ABSENT_IN_4_17, "java")


def test_jvm_families_are_java_only(monitored: Monitored) -> None:
    java = wait_for_answers(monitored, JVM_ONLY, "java")
    assert java == {q.source for q in JVM_ONLY}
    assert not answered(monitored, JVM_ONLY, "python")
