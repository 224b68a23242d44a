"""``webhdfs://`` log inputs on a real HDFS: logs found and named as on a local disk (RocksDB WALs and other
files skipped), read by exact byte ranges; a missing path or an unreachable NameNode is a clear input error."""

from __future__ import annotations

import random
import socket
from pathlib import Path
from typing import Any

import pytest
from bookie.storage import entrylog_format as ef
from bookie_audit.files import AuditInputError, LogInput, LogReader, discover


def test_logs_are_found_and_named_by_their_folder_without_a_cookie(hdfs: Any, tmp_path: Path) -> None:
    for rel in ("b1/current/a.log", "b1/current/ledgers/000004.log", "b2/current/1f.log", "b2/current/x.txt"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_bytes(ef.LogHeader().encode())
    hdfs.put_tree(tmp_path, "/inputs/fleet")
    found = discover([LogInput(hdfs.uri("/inputs/fleet"))])
    assert [(f.bookie, f.path, f.log_id, f.size) for f in found] == [
        ("b1", hdfs.uri("/inputs/fleet/b1/current/a.log"), 0xA, ef.HEADER_SIZE),
        ("b2", hdfs.uri("/inputs/fleet/b2/current/1f.log"), 0x1F, ef.HEADER_SIZE),
    ]


def test_a_reader_gets_the_bytes_at_the_offsets_it_asks(hdfs: Any, tmp_path: Path) -> None:
    data = random.Random(5).randbytes(300_000)
    (tmp_path / "0.log").write_bytes(data)
    hdfs.put_file(tmp_path / "0.log", "/inputs/ranges/0.log")
    reader = LogReader(hdfs.uri("/inputs/ranges/0.log"))
    try:
        assert reader.size == len(data) and reader.whole is None
        for offset, length in ((0, 1024), (123_457, 70_001), (299_990, 100), (0, len(data))):
            assert bytes(reader.read(offset, length)) == data[offset:offset + length]
    finally:
        reader.close()


def test_a_missing_path_or_an_unreachable_namenode_is_an_input_error(hdfs: Any) -> None:
    with pytest.raises(AuditInputError, match="does not exist"):
        discover([LogInput(hdfs.uri("/inputs/no-such-folder"))])
    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        with pytest.raises(AuditInputError, match="cannot reach"):
            discover([LogInput(f"webhdfs://127.0.0.1:{port}/fleet")])
