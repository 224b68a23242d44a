"""Ledger metadata binary format and cookie text."""

from __future__ import annotations

import pytest
from bookie.metadata.cookie import Cookie, CookieError, CookieMismatch
from bookie.metadata.ledger_metadata import (
    LedgerMetadata,
    LedgerState,
    MetadataFormatError,
    new_ledger_metadata,
    parse_ledger_metadata,
    serialize_ledger_metadata,
)
from bookie.protocol.entry import DigestType
from hypothesis import given, settings
from hypothesis import strategies as st


def _closed() -> LedgerMetadata:
    return LedgerMetadata(
        ensemble_size=3, write_quorum_size=2, ack_quorum_size=2,
        ensembles={10: ("b:3181", "c:3181", "d:3181"), 0: ("a:3181", "b:3181", "c:3181")},
        state=LedgerState.CLOSED, last_entry_id=20, length=2048, digest_type=DigestType.CRC32C,
        password=b"pw", ctime=1700000000000, custom_metadata={"app": b"pulsar"}, c_token=7)


def test_round_trip_and_ensemble_lookup() -> None:
    md = _closed()
    back = parse_ledger_metadata(serialize_ledger_metadata(md))
    assert back == md
    assert list(back.ensembles) == [0, 10]
    assert back.ensemble_at(9) == ("a:3181", "b:3181", "c:3181")
    assert back.ensemble_at(10) == ("b:3181", "c:3181", "d:3181")
    assert back.bookies() == {"a:3181", "b:3181", "c:3181", "d:3181"}


def test_hand_built_v3_bytes() -> None:
    md = LedgerMetadata(ensemble_size=1, write_quorum_size=1, ack_quorum_size=1, ensembles={0: ("a:1",)},
                        digest_type=DigestType.CRC32, password=b"")
    body = bytes([
        0x08, 0x01,  # quorumSize = 1
        0x10, 0x01,  # ensembleSize = 1
        0x18, 0x00,  # length = 0
        0x20, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01,  # lastEntryId = -1
        0x28, 0x01,  # state = OPEN
        0x32, 0x07, 0x0A, 0x03, ord("a"), ord(":"), ord("1"), 0x10, 0x00,  # segment {"a:1", firstEntryId 0}
        0x38, 0x01,  # digestType = CRC32
        0x42, 0x00,  # password = ""
        0x48, 0x01,  # ackQuorumSize = 1
        0x60, 0x00,  # cToken = 0
    ])
    expected = b"BookieMetadataFormatVersion\t3\n" + bytes([len(body)]) + body
    assert serialize_ledger_metadata(md) == expected
    assert parse_ledger_metadata(expected) == md


def test_open_ledger_ignores_stored_last_entry_and_length() -> None:
    md = new_ledger_metadata(["a:1", "b:1"], 2, 1, password=b"x")
    assert md.state is LedgerState.OPEN and md.last_entry_id == -1
    assert parse_ledger_metadata(serialize_ledger_metadata(md)) == md


def test_format_2_text_is_parsed() -> None:
    text = (b"BookieMetadataFormatVersion\t2\n"
            b'quorumSize: 2\nensembleSize: 2\nlength: 10\nlastEntryId: 4\nstate: CLOSED\n'
            b'segment {\n  ensembleMember: "a:1"\n  ensembleMember: "b:1"\n  firstEntryId: 0\n}\n'
            b'digestType: HMAC\npassword: "pw"\n')
    md = parse_ledger_metadata(text)
    assert (md.format_version, md.state, md.last_entry_id, md.length) == (2, LedgerState.CLOSED, 4, 10)
    assert md.ack_quorum_size == 2 and md.digest_type is DigestType.HMAC
    assert md.ensembles == {0: ("a:1", "b:1")}
    assert parse_ledger_metadata(serialize_ledger_metadata(md)) == md


H = b"BookieMetadataFormatVersion\t"


@pytest.mark.parametrize("bad", [b"", b"garbage", H + b"9\n", H + b"3", H + b"3\n\x50\x08", H + b"x\n",
                                 H + b"3\n\x02\x08\x01"])
def test_corrupt_metadata_raises_format_error(bad: bytes) -> None:
    with pytest.raises(MetadataFormatError):
        parse_ledger_metadata(bad)


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=120))
def test_random_metadata_bytes_only_raise_format_error(data: bytes) -> None:
    for candidate in (data, H + b"3\n" + data, H + b"2\n" + data):
        try:
            parse_ledger_metadata(candidate)
        except MetadataFormatError:
            pass


COOKIE_TEXT = ('5\nbookieHost: "10.0.0.5:3181"\njournalDir: "/data/journal"\n'
               'ledgerDirs: "1\\t/data/ledgers"\ninstanceId: "abc"\n')


def test_cookie_render_matches_bookkeeper_text() -> None:
    cookie = Cookie.generate("10.0.0.5:3181", ["/data/journal"], ["/data/ledgers"], instance_id="abc")
    assert cookie.render() == COOKIE_TEXT
    assert Cookie.parse(COOKIE_TEXT.encode()) == cookie
    assert cookie.ledger_dirs == "1\t/data/ledgers"


def test_cookie_with_index_dirs_and_several_dirs() -> None:
    cookie = Cookie.generate("b:1", ["/j1", "/j2"], ["/l1", "/l2"], index_dirs=["/i"], instance_id="x")
    text = cookie.render()
    assert 'journalDir: "/j1,/j2"' in text and 'ledgerDirs: "2\\t/l1\\t/l2"' in text
    assert 'indexDirs: "1\\t/i"' in text
    assert Cookie.parse(text) == cookie


def test_layout_3_cookie_is_parsed() -> None:
    cookie = Cookie.parse("3\nb:1\n/j\n1\t/l\n")
    assert (cookie.bookie_id, cookie.journal_dirs, cookie.ledger_dirs, cookie.layout_version) == ("b:1", "/j",
                                                                                                   "1\t/l", 3)


@pytest.mark.parametrize("bad", ["", "x\n", "5\nnot a cookie", "5\nbookieHost: \"a\"\n", "2\na\nb\nc\n"])
def test_bad_cookie_text(bad: str) -> None:
    with pytest.raises(CookieError):
        Cookie.parse(bad)


def test_cookie_verify_names_both_sides() -> None:
    mine = Cookie.generate("b:1", ["/j"], ["/l"], instance_id="i1")
    mine.verify(Cookie.parse(mine.render()))
    foreign = Cookie.generate("other:1", ["/j"], ["/l"], instance_id="i2")
    with pytest.raises(CookieMismatch) as info:
        mine.verify(foreign)
    message = str(info.value)
    assert "b:1" in message and "other:1" in message and "i1" in message and "i2" in message


def test_cookie_verify_superset_for_added_dirs() -> None:
    old = Cookie.generate("b:1", ["/j"], ["/l1"])
    expanded = Cookie.generate("b:1", ["/j"], ["/l1", "/l2"])
    with pytest.raises(CookieMismatch):
        expanded.verify(old)
    expanded.verify(old, superset=True)
    with pytest.raises(CookieMismatch):
        old.verify(expanded, superset=True)


def test_missing_index_dirs_default_to_ledger_dirs() -> None:
    with_index = Cookie.generate("b:1", ["/j"], ["/l"], index_dirs=["/l"])
    with_index.verify(Cookie.generate("b:1", ["/j"], ["/l"]))
