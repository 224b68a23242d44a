"""Ensemble placement: which bookies store a new ledger, and which bookie replaces a failed one.

Candidates are the writable bookies registered under ``available/`` (never ``available/readonly/``), minus
quarantined ones (used only when nothing else is left). ``RandomPlacement`` picks uniformly;
``RackAwarePlacement`` spreads every write quorum over distinct racks when the racks allow it (rack of a
bookie from a configurable mapping by bookie id or host, else the default rack), like BookKeeper's
``RackawareEnsemblePlacementPolicy``.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Mapping, Sequence

from bookie.client.errors import NotEnoughBookies


class PlacementPolicy:
    """Chooses ensembles; subclasses override ``_choose``."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self.rng = rng or random.Random()

    def new_ensemble(self, ensemble_size: int, write_quorum: int, writable: Collection[str],
                     quarantined: Collection[str] = (), exclude: Collection[str] = ()) -> list[str]:
        """``ensemble_size`` distinct bookies; quarantined ones only if needed."""
        healthy = [b for b in writable if b not in exclude and b not in quarantined]
        if len(healthy) >= ensemble_size:
            return self._choose(ensemble_size, write_quorum, healthy)
        fallback = [b for b in writable if b not in exclude]
        if len(fallback) < ensemble_size:
            raise NotEnoughBookies(f"need {ensemble_size} writable bookies, {len(fallback)} available "
                                   f"({sorted(fallback)})")
        return self._choose(ensemble_size, write_quorum, fallback)

    def replace_bookie(self, ensemble: Sequence[str], index: int, write_quorum: int, writable: Collection[str],
                       quarantined: Collection[str] = (), exclude: Collection[str] = ()) -> str:
        """A bookie to take position ``index`` of ``ensemble`` (not already in it, not excluded)."""
        taken = set(ensemble) | set(exclude)
        for pool in ([b for b in writable if b not in taken and b not in quarantined],
                     [b for b in writable if b not in taken]):
            if pool:
                return self._replacement(ensemble, index, write_quorum, pool)
        raise NotEnoughBookies(f"no writable bookie left to replace {ensemble[index]} "
                               f"(ensemble {list(ensemble)}, writable {sorted(writable)})")

    def _choose(self, n: int, write_quorum: int, candidates: list[str]) -> list[str]:
        return self.rng.sample(candidates, n)

    def _replacement(self, ensemble: Sequence[str], index: int, write_quorum: int, pool: list[str]) -> str:
        return self.rng.choice(pool)


class RandomPlacement(PlacementPolicy):
    """Uniformly random ensembles (``DefaultEnsemblePlacementPolicy``)."""


class RackAwarePlacement(PlacementPolicy):
    """Every ``write_quorum`` consecutive positions (cyclically) on distinct racks when possible."""

    def __init__(self, racks: Mapping[str, str], default_rack: str = "/default-rack",
                 rng: random.Random | None = None) -> None:
        super().__init__(rng)
        self.racks = dict(racks)
        self.default_rack = default_rack

    def update_racks(self, racks: Mapping[str, str]) -> None:
        """Racks learnt since (from ZooKeeper's rack information): replace the mapping."""
        self.racks = dict(racks)

    def rack_of(self, bookie_id: str) -> str:
        if bookie_id in self.racks:
            return self.racks[bookie_id]
        host = bookie_id.rpartition(":")[0]
        return self.racks.get(host, self.default_rack)

    def _neighbour_racks(self, ensemble: Sequence[str | None], index: int, write_quorum: int) -> set[str]:
        """Racks of the positions that share a write quorum with ``index``."""
        n = len(ensemble)
        racks = set()
        for delta in range(1, min(write_quorum, n)):
            for pos in ((index - delta) % n, (index + delta) % n):
                bookie = ensemble[pos]
                if bookie is not None and pos != index:
                    racks.add(self.rack_of(bookie))
        return racks

    def _choose(self, n: int, write_quorum: int, candidates: list[str]) -> list[str]:
        pool = list(candidates)
        self.rng.shuffle(pool)
        ensemble: list[str | None] = [None] * n
        for index in range(n):
            avoid = self._neighbour_racks(ensemble, index, write_quorum)
            pick = next((b for b in pool if self.rack_of(b) not in avoid), None)
            if pick is None:  # not enough racks: take the bookie whose rack is least used so far
                used = [self.rack_of(b) for b in ensemble if b is not None]
                pick = min(pool, key=lambda b: used.count(self.rack_of(b)))
            pool.remove(pick)
            ensemble[index] = pick
        return [b for b in ensemble if b is not None]

    def _replacement(self, ensemble: Sequence[str], index: int, write_quorum: int, pool: list[str]) -> str:
        avoid = self._neighbour_racks(list(ensemble), index, write_quorum)
        preferred = [b for b in pool if self.rack_of(b) not in avoid]
        return self.rng.choice(preferred or pool)


def placement_policy(kind: str, racks: Mapping[str, str] | None = None,
                     default_rack: str = "/default-rack") -> PlacementPolicy:
    if kind == "rack":
        return RackAwarePlacement(racks or {}, default_rack)
    if kind == "random":
        return RandomPlacement()
    raise ValueError(f"unknown placement policy {kind!r} (random or rack)")
