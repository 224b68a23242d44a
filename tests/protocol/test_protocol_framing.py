"""FrameReader: any split of the stream yields the same frames; oversized or negative lengths are refused."""

from __future__ import annotations

import struct

import pytest
from bookie.protocol.framing import FrameReader, FrameTooLarge
from hypothesis import given, settings
from hypothesis import strategies as st


def _stream(payloads: list[bytes]) -> bytes:
    return b"".join(struct.pack(">i", len(p)) + p for p in payloads)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.binary(max_size=300), max_size=12), st.lists(st.integers(1, 64), min_size=1, max_size=50))
def test_any_chunking_gives_the_same_frames(payloads: list[bytes], cuts: list[int]) -> None:
    data = _stream(payloads)
    reader = FrameReader(1024)
    out: list[bytes] = []
    pos = 0
    i = 0
    while pos < len(data):
        step = cuts[i % len(cuts)]
        out.extend(bytes(f) for f in reader.feed(data[pos:pos + step]))
        pos += step
        i += 1
    assert out == payloads
    assert reader.buffered == 0


def test_frames_do_not_alias_the_buffer_they_arrived_in() -> None:
    data = bytearray(_stream([b"abc", b"defg"]))
    frames = FrameReader(100).feed(data)
    data[:] = bytes(len(data))  # the caller reuses its buffer
    assert frames == [b"abc", b"defg"]


def test_partial_frame_is_held_until_complete() -> None:
    reader = FrameReader(100)
    data = _stream([b"x" * 50])
    assert reader.feed(data[:2]) == [] and reader.feed(data[2:30]) == []
    assert reader.buffered == 30
    assert [bytes(f) for f in reader.feed(data[30:])] == [b"x" * 50]


def test_frame_above_maximum_is_refused_before_its_body_arrives() -> None:
    with pytest.raises(FrameTooLarge):
        FrameReader(1000).feed(struct.pack(">i", 1001))


def test_frame_at_maximum_is_accepted() -> None:
    assert len(FrameReader(1000).feed(_stream([b"a" * 1000]))) == 1


def test_negative_length_is_refused() -> None:
    with pytest.raises(FrameTooLarge):
        FrameReader(1000).feed(struct.pack(">i", -1))


def test_empty_frame_is_a_frame() -> None:
    assert [bytes(f) for f in FrameReader(10).feed(struct.pack(">i", 0))] == [b""]
