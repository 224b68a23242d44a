"""Seeded randomness for fault tests: every random choice a test makes comes from one ``random.Random``
whose seed is printed with the test's output (pytest shows it when the test fails) and replayed by setting
``BOOKIE_FLEET_SEED``.

``seeded_rng``: the fixture. ``ROUNDS_ENV`` (``BOOKIE_FLEET_FAULT_ROUNDS``) raises a scenario's number of
rounds for a soak run (``rounds(default)``); CI uses each scenario's default.
"""

from __future__ import annotations

import os
import random
import secrets

import pytest

SEED_ENV = "BOOKIE_FLEET_SEED"
ROUNDS_ENV = "BOOKIE_FLEET_FAULT_ROUNDS"


def seed_from_env() -> int:
    """The replayed seed if ``BOOKIE_FLEET_SEED`` is set, else a fresh one."""
    value = os.environ.get(SEED_ENV, "").strip()
    if not value:
        return secrets.randbits(32)
    try:
        return int(value, 0)
    except ValueError:
        raise ValueError(f"{SEED_ENV} must be an integer seed (the one a failed run printed), not {value!r}") from None


def rounds(default: int) -> int:
    """A scenario's number of seeded rounds: ``default`` in CI, ``BOOKIE_FLEET_FAULT_ROUNDS`` in a soak run."""
    value = os.environ.get(ROUNDS_ENV, "").strip()
    if not value:
        return default
    if not value.isdigit() or int(value) < 1:
        raise ValueError(f"{ROUNDS_ENV} must be a positive number of rounds, not {value!r}")
    return int(value)


@pytest.fixture
def seeded_rng(request: pytest.FixtureRequest) -> random.Random:
    seed = seed_from_env()
    # Printed, not logged: pytest shows a failed test's captured output, so the seed is in every failure report.
    print(f"random seed {seed}: replay with {SEED_ENV}={seed} python -m pytest '{request.node.nodeid}'")
    return random.Random(seed)
