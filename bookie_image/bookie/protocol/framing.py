"""Splits a byte stream into frames: ``int32 length`` (big-endian, excluding itself) + payload.

Same rule as BookKeeper's ``LengthFieldBasedFrameDecoder(maxFrameSize, 0, 4, 0, 4)``: a frame longer than
the maximum (or a negative length) is an error that must close the connection.

``FrameReader(max_frame_size)`` is written in C (``bookie.protocol._native``): the bookie's request hot path
reads frames from it in place, without a Python object per frame. ``feed(data)`` returns the payloads that
``data`` completes, as bytes, in order; ``buffered`` is the number of bytes of an incomplete frame held back,
and ``has_frame`` says whether a complete frame is waiting (frames the hot path has not taken yet).
"""

from __future__ import annotations

from bookie.protocol._native import FrameReader, FrameTooLarge

__all__ = ["FrameReader", "FrameTooLarge"]
