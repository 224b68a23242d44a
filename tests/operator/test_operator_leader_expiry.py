"""When a standby may take the lease over: only after seeing the same record unchanged for the lease duration
on its own clock (the leader's clock, which may disagree, is never compared with ours)."""

from __future__ import annotations

from bookie_operator.leader import Observed


def record(holder: str, renew: str, duration: int = 15) -> dict[str, object]:
    return {"spec": {"holderIdentity": holder, "renewTime": renew, "leaseDurationSeconds": duration}}


def test_a_renewed_lease_never_expires_and_an_unrenewed_one_does_after_its_duration() -> None:
    seen = Observed()
    assert not seen.expired(record("a", "t1"), 100.0, 15)
    assert not seen.expired(record("a", "t1"), 114.0, 15)
    assert not seen.expired(record("a", "t2"), 116.0, 15)      # renewed: the wait starts again
    assert not seen.expired(record("a", "t2"), 130.0, 15)
    assert seen.expired(record("a", "t2"), 131.0, 15)


def test_a_released_or_missing_holder_can_be_taken_at_once() -> None:
    assert Observed().expired(record("", "t1"), 0.0, 15)
    assert Observed().expired({"spec": {}}, 0.0, 15)


def test_the_lease_says_how_long_to_wait() -> None:
    seen = Observed()
    assert not seen.expired(record("a", "t1", duration=5), 0.0, 15)
    assert seen.expired(record("a", "t1", duration=5), 5.0, 15)
