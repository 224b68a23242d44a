"""Protobuf wire bytes built by hand, and damaged copies of them: the inputs with which the tests hold our C
codecs to protobuf's own parser."""

from __future__ import annotations

import random
from collections.abc import Iterator


def varint(value: int) -> bytes:
    """A base-128 varint; negative values as their 64-bit two's complement, as protobuf writes int64."""
    out = bytearray()
    value &= (1 << 64) - 1
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def field(number: int, wire_type: int, value: bytes | int) -> bytes:
    """One field: a varint (wire type 0), length-delimited bytes (2), or raw fixed-size bytes (1, 5)."""
    tag = varint(number << 3 | wire_type)
    if wire_type == 0:
        assert isinstance(value, int)
        return tag + varint(value)
    assert isinstance(value, bytes)
    return tag + (varint(len(value)) + value if wire_type == 2 else value)


def damaged(rng: random.Random, seeds: list[bytes], count: int) -> Iterator[bytes]:
    """``count`` copies of seed frames with one to three random byte changes, cuts or insertions each."""
    for _ in range(count):
        frame = bytearray(rng.choice(seeds))
        for _ in range(rng.randint(1, 3)):
            choice, at = rng.random(), rng.randrange(len(frame) + 1)
            if choice < 0.5 and frame:
                frame[min(at, len(frame) - 1)] = rng.randrange(256)
            elif choice < 0.75:
                del frame[at:at + rng.randint(1, 8)]
            else:
                frame[at:at] = rng.randbytes(rng.randint(1, 8))
        yield bytes(frame)
