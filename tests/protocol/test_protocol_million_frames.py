"""One million generated and mutated frames through the bookie's frame splitter and decoder: each is a
request or a MalformedFrame naming the problem, never a crash or a hang (seeded, so a failure replays)."""

from __future__ import annotations

import random

import bookie.protocol.codec as codec
import bookie.protocol.messages as m
from bookie.protocol.framing import FrameReader, FrameTooLarge

from tests.protocol.test_protocol_fuzz import VALID_FRAMES

FRAMES = 1_000_000
MAX_FRAME = 5 * 1024 * 1024


def _mutate(rng: random.Random, frame: bytes) -> bytes:
    buf = bytearray(frame)
    for _ in range(rng.randint(1, 4)):
        roll = rng.random()
        pos = rng.randrange(len(buf)) if buf else 0
        if roll < 0.5 and buf:
            buf[pos] ^= rng.randint(1, 255)
        elif roll < 0.65:
            del buf[pos:]
        elif roll < 0.85:
            buf[pos:pos] = rng.randbytes(rng.randint(1, 8))
        elif buf:
            del buf[pos]
    return bytes(buf)


def test_a_million_hostile_frames_decode_or_fail_cleanly() -> None:
    rng = random.Random(20261122)
    decoded = malformed = 0
    for n in range(FRAMES):
        frame = rng.randbytes(rng.randint(0, 64)) if n % 10 == 0 else _mutate(rng, rng.choice(VALID_FRAMES))
        try:
            request = codec.decode_request(frame)
        except codec.MalformedFrame as exc:
            assert str(exc)
            malformed += 1
            continue
        codec.encode_response(request, m.error_response(request, m.StatusCode.EBADREQ))
        decoded += 1
    assert decoded + malformed == FRAMES
    assert decoded > 0 and malformed > 0


def test_the_frame_splitter_survives_a_hostile_byte_stream() -> None:
    rng = random.Random(7)
    reader = FrameReader(MAX_FRAME)
    stream = b"".join(len(f).to_bytes(4, "big") + f for f in (_mutate(rng, rng.choice(VALID_FRAMES))
                                                            for _ in range(20000)))
    frames = []
    pos = 0
    while pos < len(stream):
        chunk = rng.randint(1, 300)
        frames += reader.feed(stream[pos:pos + chunk])
        pos += chunk
    assert len(frames) == 20000
    try:
        FrameReader(MAX_FRAME).feed((MAX_FRAME + 1).to_bytes(4, "big"))
    except FrameTooLarge as exc:
        assert str(exc)
    else:
        raise AssertionError("an oversized frame length must be refused")
