"""Znode paths of BookKeeper's metadata layout."""

from __future__ import annotations

import pytest
from bookie.metadata import layout as lay

L = lay.ZkLayout("/ledgers")


def test_fixed_paths() -> None:
    assert L.instance_id == "/ledgers/INSTANCEID"
    assert L.layout == "/ledgers/LAYOUT"
    assert L.available == "/ledgers/available"
    assert L.readonly == "/ledgers/available/readonly"
    assert L.bookie("10.0.0.5:3181") == "/ledgers/available/10.0.0.5:3181"
    assert L.bookie("10.0.0.5:3181", readonly=True) == "/ledgers/available/readonly/10.0.0.5:3181"
    assert L.cookie("10.0.0.5:3181") == "/ledgers/cookies/10.0.0.5:3181"
    assert L.idgen == "/ledgers/idgen" and L.idgen_long == "/ledgers/idgen-long"
    assert lay.LAYOUT_DATA == b"2\norg.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory:1"


@pytest.mark.parametrize("ledger_id,path", [
    (0, "/ledgers/00/0000/L0000"),
    (1, "/ledgers/00/0000/L0001"),
    (123456789, "/ledgers/01/2345/L6789"),
    (2**31 - 2, "/ledgers/21/4748/L3646"),
    (2**31 - 1, "/ledgers/000/0000/0021/4748/L3647"),  # Integer.MAX_VALUE itself is already "long"
    (2**63 - 1, "/ledgers/922/3372/0368/5477/L5807"),
])
def test_ledger_paths_and_back(ledger_id: int, path: str) -> None:
    assert L.ledger(ledger_id) == path
    assert L.ledger_id(path) == ledger_id


def test_negative_ledger_id_has_no_path() -> None:
    with pytest.raises(ValueError):
        L.ledger(-1)


@pytest.mark.parametrize("bad", ["/ledgers/00/0000", "/ledgers/00/0000/Labcd", "/other/00/0000/L0001",
                                 "/ledgers/00/0000/L0001/x"])
def test_not_ledger_paths(bad: str) -> None:
    with pytest.raises(ValueError):
        L.ledger_id(bad)


def test_special_znodes() -> None:
    for name in ("available", "cookies", "LAYOUT", "INSTANCEID", "underreplication", "idgen", "idgen-long",
                 "ID-0000000001"):
        assert lay.is_special_znode(name)
    assert not lay.is_special_znode("00") and not lay.is_special_znode("L0001")


def test_underreplication_paths_split_the_id_in_hex() -> None:
    ledger_id = 0x0001_0002_0003_0004
    expected = f"/ledgers/underreplication/ledgers/0001/0002/0003/0004/urL{ledger_id:010d}"
    assert L.ur_ledger(ledger_id) == expected
    assert L.ur_ledger(5) == "/ledgers/underreplication/ledgers/0000/0000/0000/0005/urL0000000005"
    assert L.ur_lock(5) == "/ledgers/underreplication/locks/urL0000000005"
    assert L.ur_layout == "/ledgers/underreplication/LAYOUT"
    assert L.auditor_election == "/ledgers/underreplication/auditorelection"
    assert lay.ZkLayout.ur_ledger_id("urL0000000005") == 5


def test_custom_root() -> None:
    assert lay.ZkLayout("/a/b").ledger(7) == "/a/b/00/0000/L0007"
    with pytest.raises(ValueError):
        lay.ZkLayout("relative")
