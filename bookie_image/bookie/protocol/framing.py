"""Splits a byte stream into frames: ``int32 length`` (big-endian, excluding itself) + payload.

Same rule as BookKeeper's ``LengthFieldBasedFrameDecoder(maxFrameSize, 0, 4, 0, 4)``: a frame longer than
the maximum (or a negative length) is an error that must close the connection.
"""

from __future__ import annotations

import struct

_LENGTH = struct.Struct(">i")


class FrameTooLarge(Exception):
    """The announced frame length is above the maximum (or negative)."""


class FrameReader:
    """Incremental frame splitter.

    ``feed(data)`` returns the payloads completed by ``data`` as memoryview slices of immutable buffers
    (no copy for frames that arrive whole). A partial frame is kept as a list of chunks and joined once,
    when its last byte arrives, so a large frame arriving in many small reads costs one copy.
    """

    __slots__ = ("_need", "_parts", "_size", "max_frame_size")

    def __init__(self, max_frame_size: int) -> None:
        self.max_frame_size = max_frame_size
        self._parts: list[bytes] = []
        self._size = 0
        self._need = 4  # bytes needed before the pending data can make progress

    @property
    def buffered(self) -> int:
        """Bytes of an incomplete frame held back."""
        return self._size

    def feed(self, data: bytes | bytearray | memoryview) -> list[memoryview]:
        if not isinstance(data, bytes):
            data = bytes(data)  # slices must not alias a buffer the caller may reuse
        if self._parts:
            self._parts.append(data)
            self._size += len(data)
            if self._size < self._need:
                return []
            data = b"".join(self._parts)
            self._parts = []
            self._size = 0
        return self._split(data)

    def _split(self, data: bytes) -> list[memoryview]:
        frames: list[memoryview] = []
        view = memoryview(data)
        n = len(data)
        pos = 0
        need = 4
        while n - pos >= 4:
            (length,) = _LENGTH.unpack_from(data, pos)
            self._check(length)
            end = pos + 4 + length
            if end > n:
                need = 4 + length
                break
            frames.append(view[pos + 4:end])
            pos = end
        if pos < n:
            rest = data[pos:] if pos else data
            self._parts = [rest]
            self._size = len(rest)
            self._need = need
        return frames

    def _check(self, length: int) -> None:
        if length < 0:
            raise FrameTooLarge(f"negative frame length {length}")
        if length > self.max_frame_size:
            raise FrameTooLarge(f"frame of {length} bytes exceeds the maximum of {self.max_frame_size}")
