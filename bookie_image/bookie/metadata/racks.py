"""Which rack (zone) each bookie is in: the ``/bookies`` znode Apache Pulsar's ``BookieRackAffinityMapping`` reads.

Its content is Pulsar's ``BookiesRackConfiguration``, JSON of groups of bookies::

    {"<group>": {"<bookie id>": {"rack": "/<region>/<zone>", "hostname": "<host>"}, ...}, ...}

A Pulsar broker's rack-aware (or region-aware) placement reads every group and resolves a bookie by its id,
its host name or its IP. A rack that does not start with ``/`` gets one; an empty rack, or ``/``, means
"unknown" (the placement's default rack). The znode lives at ``/bookies`` of the ZooKeeper that Pulsar uses for
its configuration, which in the usual deployment (Pulsar's Helm chart) is the bookies' own ZooKeeper: so this
path is absolute, not under the ledgers root.

Writers change only their own entries, with a version check, so several writers (two clusters' operators,
``pulsar-admin bookies set-bookie-rack``) never lose each other's updates.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from bookie.metadata.session import BadVersion, NodeExists, NoNode, Versioned, ZkSession

RACK_INFO_PATH = "/bookies"
RackConfiguration = dict[str, dict[str, dict[str, Any]]]     # group -> bookie id -> {"rack", "hostname"}


class InvalidRackInfo(ValueError):
    """The znode holds something that is not a BookiesRackConfiguration; the message says what."""


@dataclass(frozen=True)
class BookieRack:
    rack: str
    hostname: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"rack": self.rack}
        if self.hostname:
            out["hostname"] = self.hostname
        return out


def parse_rack_info(data: bytes) -> RackConfiguration:
    if not data.strip():
        return {}
    try:
        value = json.loads(data)
    except ValueError as exc:
        raise InvalidRackInfo(f"{RACK_INFO_PATH} is not JSON: {exc}") from None
    if not isinstance(value, dict) or not all(isinstance(g, dict) and all(isinstance(b, dict) for b in g.values())
                                              for g in value.values()):
        raise InvalidRackInfo(f"{RACK_INFO_PATH} is not {{group: {{bookie: {{rack, hostname}}}}}}")
    return value


def normalize_rack(rack: object) -> str | None:
    """As Pulsar's mapping: a leading ``/`` added; empty or ``/`` is no rack."""
    text = str(rack or "").strip()
    if not text or text == "/":
        return None
    return text if text.startswith("/") else "/" + text


def racks_of(config: RackConfiguration) -> dict[str, str]:
    """bookie id, and its host name when given -> rack, over every group."""
    out: dict[str, str] = {}
    for bookies in config.values():
        for bookie_id, info in bookies.items():
            rack = normalize_rack(info.get("rack"))
            if rack is None:
                continue
            out[bookie_id] = rack
            if info.get("hostname"):
                out.setdefault(str(info["hostname"]), rack)
    return out


def with_group(config: RackConfiguration, group: str, bookies: Mapping[str, BookieRack],
               remove: Iterable[str] = ()) -> RackConfiguration:
    """``config`` with ``bookies`` set in ``group`` and ``remove`` gone from it; other entries untouched."""
    out = {g: dict(b) for g, b in config.items()}
    entries = out.setdefault(group, {})
    for bookie_id in remove:
        entries.pop(bookie_id, None)
    for bookie_id, info in bookies.items():
        entries[bookie_id] = {**entries.get(bookie_id, {}), **info.to_json()}
    if not entries:
        out.pop(group)
    return out


class RackInfoStore(ZkSession):
    """Read and update the ``/bookies`` rack information."""

    async def read_rack_info(self) -> Versioned[RackConfiguration] | None:
        try:
            data, stat = await self._get(RACK_INFO_PATH)
        except NoNode:
            return None
        return Versioned(parse_rack_info(data), stat.version)

    async def bookie_racks(self) -> dict[str, str]:
        current = await self.read_rack_info()
        return racks_of(current.value) if current is not None else {}

    async def update_rack_info(self, group: str, bookies: Mapping[str, BookieRack], remove: Iterable[str] = (),
                               attempts: int = 5) -> bool:
        """Set ``bookies`` (and drop ``remove``) in ``group``; True if the znode changed. Retries a concurrent
        writer's update (version check) up to ``attempts`` times."""
        remove = list(remove)
        for _ in range(attempts):
            current = await self.read_rack_info()
            old = current.value if current is not None else {}
            new = with_group(old, group, bookies, remove)
            if new == old:
                return False
            data = json.dumps(new, sort_keys=True).encode()
            try:
                if current is None:
                    await self._create(RACK_INFO_PATH, data)
                else:
                    await self._call("set", RACK_INFO_PATH, data, version=current.version)
                return True
            except (BadVersion, NodeExists):
                continue
        raise BadVersion(f"{RACK_INFO_PATH}: changed by another writer {attempts} times in a row")
