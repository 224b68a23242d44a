"""The ``/bookies`` rack information in Pulsar's BookiesRackConfiguration format: racks resolved by bookie id
and host name over every group, normalised as Pulsar's mapping does, updates that touch only their own
entries, and a damaged znode named in the error."""

from __future__ import annotations

import json

import pytest
from bookie.metadata.racks import BookieRack, InvalidRackInfo, normalize_rack, parse_rack_info, racks_of, with_group

PULSAR_WRITTEN = json.dumps({
    "default": {"bk-0:3181": {"rack": "zone-a", "hostname": "bk-0.example"},
                "bk-1:3181": {"rack": "/region-1/zone-b"}},
    "other": {"bk-2:3181": {"rack": "/"}, "bk-3:3181": {"rack": ""}},
}).encode()


def test_racks_over_every_group_by_id_and_host_name() -> None:
    racks = racks_of(parse_rack_info(PULSAR_WRITTEN))
    assert racks == {"bk-0:3181": "/zone-a", "bk-0.example": "/zone-a", "bk-1:3181": "/region-1/zone-b"}


@pytest.mark.parametrize(("rack", "normal"), [("zone-a", "/zone-a"), ("/r/z", "/r/z"), ("/", None), ("", None),
                                             (None, None)])
def test_racks_normalised_as_pulsar_does(rack: str | None, normal: str | None) -> None:
    assert normalize_rack(rack) == normal


def test_an_update_keeps_other_writers_entries() -> None:
    old = parse_rack_info(PULSAR_WRITTEN)
    new = with_group(old, "default", {"bk-9:3181": BookieRack("/zone-c", "bk-9")}, remove=["bk-1:3181"])
    assert new["default"] == {"bk-0:3181": {"rack": "zone-a", "hostname": "bk-0.example"},
                              "bk-9:3181": {"rack": "/zone-c", "hostname": "bk-9"}}
    assert new["other"] == old["other"] and "bk-1:3181" in old["default"]
    assert "gone" not in with_group(new, "gone", {}, remove=["x"])


@pytest.mark.parametrize("data", [b"{not json", b"[1, 2]", b'{"default": {"bk-0:3181": "zone-a"}}'])
def test_a_damaged_znode_is_named(data: bytes) -> None:
    with pytest.raises(InvalidRackInfo, match="/bookies"):
        parse_rack_info(data)
