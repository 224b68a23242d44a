"""Entry format, digests (known vectors), master key, explicit LAC and entry availability encoding."""

from __future__ import annotations

import hashlib
import hmac
import struct
import zlib

import bookie.protocol.entry as e
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

HEADER = struct.pack(">qqqq", 1, 0, -1, 5)


def test_master_key_of_empty_password_is_sha1_of_ledger() -> None:
    assert e.generate_master_key(b"").hex() == "850bf1071c5e3d8c24235676f8816ae0cbe2f14f"
    assert e.generate_master_key(b"secret") == hashlib.sha1(b"ledgersecret").digest()


def test_crc32_digest_is_int64_of_java_crc32() -> None:
    assert e.Crc32DigestManager().compute([b"123456789"]) == struct.pack(">q", 0xCBF43926)


def test_crc32c_digest_is_4_byte_castagnoli() -> None:
    assert e.Crc32cDigestManager().compute([b"1234", b"56789"]) == struct.pack(">I", 0xE3069283)


def test_hmac_digest_keyed_with_sha1_of_mac_and_password() -> None:
    key = hashlib.sha1(b"macpw").digest()
    expected = hmac.new(key, HEADER + b"hello", hashlib.sha1).digest()
    assert e.MacDigestManager(b"pw").compute([HEADER, b"hello"]) == expected


@pytest.mark.parametrize("kind,length", [(e.DigestType.CRC32, 8), (e.DigestType.HMAC, 20),
                                         (e.DigestType.CRC32C, 4), (e.DigestType.DUMMY, 0)])
def test_package_entry_layout(kind: e.DigestType, length: int) -> None:
    dm = e.digest_manager(kind, b"pw")
    packed = e.package_entry(dm, 1, 0, -1, 5, b"hello")
    assert packed[:32] == HEADER
    assert packed[32:32 + length] == dm.compute([HEADER, b"hello"])
    assert packed[32 + length:] == b"hello"
    assert e.parse_entry_header(packed) == e.EntryHeader(1, 0, -1, 5)
    assert bytes(e.verify_entry(dm, packed, ledger_id=1, entry_id=0)) == b"hello"


def test_crc32_entry_hand_built_vector() -> None:
    crc = zlib.crc32(HEADER + b"hello")
    expected = HEADER + struct.pack(">q", crc) + b"hello"
    assert e.package_entry(e.Crc32DigestManager(), 1, 0, -1, 5, b"hello") == expected


@pytest.mark.parametrize("kind", [e.DigestType.CRC32, e.DigestType.HMAC, e.DigestType.CRC32C])
def test_corruption_is_detected(kind: e.DigestType) -> None:
    dm = e.digest_manager(kind, b"pw")
    packed = bytearray(e.package_entry(dm, 1, 0, -1, 5, b"hello"))
    packed[-1] ^= 1
    with pytest.raises(e.DigestMismatch):
        e.verify_entry(dm, bytes(packed))


def test_wrong_ids_and_short_entries_are_refused() -> None:
    dm = e.Crc32cDigestManager()
    packed = e.package_entry(dm, 1, 0, -1, 5, b"hello")
    with pytest.raises(e.DigestMismatch):
        e.verify_entry(dm, packed, ledger_id=2)
    with pytest.raises(e.DigestMismatch):
        e.verify_entry(dm, packed, entry_id=1)
    with pytest.raises(e.DigestMismatch):
        e.verify_entry(dm, packed[:35])
    with pytest.raises(e.MalformedEntry):
        e.parse_entry_header(b"\x00" * 31)


def test_wrong_password_fails_hmac() -> None:
    packed = e.package_entry(e.MacDigestManager(b"a"), 1, 0, -1, 5, b"hello")
    with pytest.raises(e.DigestMismatch):
        e.verify_entry(e.MacDigestManager(b"b"), packed)


def test_explicit_lac_packet() -> None:
    dm = e.Crc32cDigestManager()
    packet = e.package_lac(dm, 9, 41)
    assert packet[:16] == struct.pack(">qq", 9, 41) and len(packet) == 16 + 4
    assert e.verify_lac(dm, packet, ledger_id=9) == 41
    with pytest.raises(e.DigestMismatch):
        e.verify_lac(dm, packet[:16] + b"\x00\x00\x00\x00")


def test_availability_layout_matches_bookkeeper() -> None:
    data = e.encode_availability([0, 1, 2, 5, 6, 9])
    assert len(data) == 64 + 3 * 24
    assert struct.unpack_from(">ii", data, 0) == (0, 3)
    assert data[8:64] == b"\x00" * 56
    groups = [struct.unpack_from(">qqii", data, 64 + i * 24) for i in range(3)]
    # BookKeeper never merges runs into one group: each run is its own group with period 0.
    assert groups == [(0, 0, 3, 0), (5, 5, 2, 0), (9, 9, 1, 0)]


def test_availability_of_nothing_is_the_bare_header() -> None:
    assert e.encode_availability([]) == struct.pack(">ii", 0, 0) + b"\x00" * 56


def test_decode_availability_with_periodic_groups() -> None:
    # A group written by a peer: runs of 2 starting every 5 ids from 0 to 10 -> 0,1,5,6,10,11
    data = struct.pack(">ii", 0, 1) + b"\x00" * 56 + struct.pack(">qqii", 0, 10, 2, 5)
    assert e.available_entries(data) == [0, 1, 5, 6, 10, 11]
    group = e.decode_availability(data)[0]
    assert 6 in group and 7 not in group and 12 not in group


@settings(max_examples=200, deadline=None)
@given(st.sets(st.integers(0, 500), max_size=80))
def test_availability_round_trip(ids: set[int]) -> None:
    assert e.available_entries(e.encode_availability(ids)) == sorted(ids)


def test_unsupported_availability_version_is_refused() -> None:
    with pytest.raises(ValueError):
        e.decode_availability(struct.pack(">ii", 1, 0) + b"\x00" * 56)
