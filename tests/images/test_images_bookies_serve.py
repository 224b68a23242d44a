"""The bookie images serve: each runs as a container under runc (the image's user, read-only root, no
capabilities, host network) with its data volume and configuration mounted, registers in ZooKeeper, passes
the readiness check the operator's pods use, and stores a client's entries, which land on its volume."""

from __future__ import annotations

import asyncio
import os
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from bookie.client import BookKeeper
from bookie.client.config import ClientConfig
from bookie.metadata.store import MetadataStore
from bookie_fleet.processes import free_port, write_properties
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.support import oci

CONF = {"bookie": ("/opt/bookie/conf", ["serve", "--conf", "/opt/bookie/conf/bk_server.conf"]),
        "apache-bookkeeper": ("/opt/bookkeeper/conf/bk_server.conf", ["bookie"])}
JAVA_ONLY = {"httpServerClass": "org.apache.bookkeeper.http.vertx.VertxHttpServer",
             "ledgerStorageClass": "org.apache.bookkeeper.bookie.storage.ldb.DbLedgerStorage",
             "dbStorage_writeCacheMaxSizeMb": 16, "dbStorage_readAheadCacheMaxSizeMb": 16}


def ready(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return bool(response.status == 200)
    except OSError:
        return False


@pytest.mark.parametrize("role", sorted(CONF))
async def test_bookie_image_serves_a_client_from_its_volume(
        images: dict[str, oci.Image], rootfs: Callable[[str], Path], tmp_path: Path, zookeeper: ZooKeeperServer,
        metadata_store: MetadataStore, ledgers_root: str, role: str) -> None:
    img = images[role]
    uid, _, gid = img.runtime["User"].partition(":")
    data = tmp_path / "data"
    data.mkdir()
    os.chown(data, int(uid), int(gid))
    port, http_port = free_port("0.0.0.0"), free_port("0.0.0.0")
    values: dict[str, Any] = {
        "bookiePort": port, "advertisedAddress": "127.0.0.1", "allowLoopback": True,
        "metadataServiceUri": f"zk+hierarchical://{zookeeper.connect_string}{ledgers_root}",
        "journalDirectories": "/bookie/journal", "ledgerDirectories": "/bookie/ledgers",
        "httpServerEnabled": True, "httpServerPort": http_port, "journalSyncData": False,
        "diskUsageThreshold": 0.999, "diskUsageWarnThreshold": 0.998, "autoRecoveryDaemonEnabled": False,
        # The Java bookie's id given as the operator gives it: without one, Apache BookKeeper 4.18 also derives
        # a hostname id at start (its cookie check) and refuses to start where its address has no reverse name,
        # as in this container (no runtime-written /etc/hosts).
        **({**JAVA_ONLY, "bookieId": f"127.0.0.1:{port}"} if role == "apache-bookkeeper"
           else {"httpServerHost": "127.0.0.1"}),
    }
    conf_dest, args = CONF[role]
    conf_dir = tmp_path / "conf"
    conf_dir.mkdir()
    write_properties(conf_dir / "bk_server.conf", values)
    # Our image reads a mounted directory (the operator's ConfigMap volume), the Java image one mounted file.
    conf_source = conf_dir / "bk_server.conf" if conf_dest.endswith(".conf") else conf_dir
    binds = {"/bookie": data, conf_dest: conf_source}
    bookie_id = f"127.0.0.1:{port}"
    with oci.running(img, rootfs(role), tmp_path / "bundle", args, binds=binds) as proc:
        for _ in range(600):
            if proc.poll() is not None:
                break
            if ready(f"http://127.0.0.1:{http_port}/api/v1/bookie/is_ready") \
                    and bookie_id in await metadata_store.list_bookies():
                break
            await asyncio.sleep(0.5)
        log = (tmp_path / "bundle" / "output.log").read_text(errors="replace")
        assert proc.poll() is None, f"{role} container exited {proc.returncode}: {log[-3000:]}"
        assert bookie_id in await metadata_store.list_bookies(), log[-3000:]

        config = ClientConfig(zk_servers=zookeeper.connect_string, ledgers_root=ledgers_root)
        async with BookKeeper(config) as bk:
            handle = await bk.create_ledger(ensemble_size=1, write_quorum=1, ack_quorum=1)
            for i in range(10):
                await handle.add(f"entry-{i}".encode())
            await handle.close()
            entries = await (await bk.open_ledger(handle.ledger_id)).read(0, 9)
            assert [e.payload for e in entries] == [f"entry-{i}".encode() for i in range(10)]
    journal = list((data / "journal").rglob("*.txn"))
    assert journal and all(p.stat().st_uid == int(uid) for p in journal), sorted(data.rglob("*"))
    assert any((data / "ledgers").rglob("*")), "no ledger files on the volume"
