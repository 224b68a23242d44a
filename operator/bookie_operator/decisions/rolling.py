"""Rolling restarts: one outdated pod at a time, only on a healthy cluster."""

from __future__ import annotations

from bookie_operator.decisions.observed import ObservedBookie, sort_by_ordinal


def pod_to_restart(bookies: list[ObservedBookie], update_revision: str | None, under_replicated: int | None,
                   replicas: int) -> tuple[ObservedBookie | None, str | None]:
    """One outdated pod to delete (highest ordinal first), only when every bookie is ready and nothing is
    under-replicated. Returns (pod, None) or (None, what it waits for)."""
    if update_revision is None:
        return None, None
    outdated = [b for b in sort_by_ordinal(bookies) if b.exists and b.revision != update_revision]
    if not outdated:
        return None, None
    present = [b for b in bookies if b.exists]
    if len(present) < replicas or any(not b.ready or b.terminating for b in present):
        return None, "every bookie ready before the next restart"
    if under_replicated is None or under_replicated > 0:
        return None, "no under-replicated ledgers before the next restart"
    return outdated[-1], None
