"""The committed *_pb2.py modules are what regenerate.py produces from the .proto files."""

from __future__ import annotations

import bookie.protocol.proto.regenerate as regenerate


def test_generated_modules_are_current() -> None:
    assert regenerate.stale_files() == []
