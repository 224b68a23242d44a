"""``bookie-audit`` against a ZooKeeper it cannot reach says so in one line (the address and kazoo's reason) and
exits 1, for a snapshot and for a run that takes its own snapshot; nothing is written."""

from __future__ import annotations

import asyncio
import socket
from pathlib import Path

from tests.support import cli


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def test_an_unreachable_zookeeper_is_named_without_a_traceback(tmp_path: Path) -> None:
    zk = f"127.0.0.1:{_closed_port()}"
    logs = tmp_path / "logs"
    logs.mkdir()
    commands = {
        "snapshot": ["snapshot", "--zk", zk, "--out", str(tmp_path / "snap")],
        "run": ["run", "--zk", zk, "--logs", str(logs), "--out", str(tmp_path / "audit")],
    }
    results = await asyncio.gather(*(asyncio.to_thread(cli.run, "bookie-audit", *args, check=False, timeout=120)
                                     for args in commands.values()))
    for command, proc in zip(commands, results, strict=True):
        assert proc.returncode == 1, (command, proc.stderr)
        assert f"bookie-audit {command}: cannot connect to ZooKeeper at {zk}" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
    assert not (tmp_path / "snap").exists() and not (tmp_path / "audit").exists()
