"""A local ZooKeeper server is only ready when the server on its port is itself.

``free_port`` hands out a port that another process can bind before our JVM does. The server that holds
it then answers the readiness probe in our place, and every client of "our" server talks to the other one.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from bookie_fleet import zookeeper as zk_module
from bookie_fleet.zookeeper import ZooKeeperError, ZooKeeperServer, four_letter_word


def _data_dir_served(host: str, port: int) -> str:
    conf = four_letter_word(host, port, "conf")
    return next((line.split("=", 1)[1] for line in conf.splitlines() if line.startswith("dataDir=")), "")


def test_a_picked_port_taken_by_another_server_is_picked_again(
        zookeeper: ZooKeeperServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real_free_port = zk_module.free_port
    handed_out: list[int] = []

    def first_the_taken_port(host: str = "127.0.0.1", preferred: int | None = None) -> int:
        port = zookeeper.port if not handed_out else real_free_port(host, preferred)
        handed_out.append(port)
        return port

    monkeypatch.setattr(zk_module, "free_port", first_the_taken_port)
    server = ZooKeeperServer(tmp_path / "second")
    try:
        server.start()
        assert server.port != zookeeper.port
        assert _data_dir_served(server.host, server.port).startswith(str(tmp_path / "second"))
        assert _data_dir_served(zookeeper.host, zookeeper.port).startswith(str(zookeeper.data_dir))
    finally:
        server.stop()
    assert len(handed_out) == 2


def test_a_port_the_caller_chose_is_never_changed(zookeeper: ZooKeeperServer, tmp_path: Path) -> None:
    server = ZooKeeperServer(tmp_path / "second", port=zookeeper.port)
    try:
        with pytest.raises(ZooKeeperError, match=f"port {zookeeper.port} on 127.0.0.1 was taken"):
            server.start()
        assert not server.running
    finally:
        server.stop()  # nothing left running, whatever start() did
    assert server.port == zookeeper.port
