"""``bookie-shell`` speaks TLS with ``--tls-trust-store`` and presents a client certificate with
``--tls-certificate``/``--tls-key``: it loads a ledger on bookies that admit only certificate roles; without
them the bookies answer EUA and the shell says so."""

from __future__ import annotations

import asyncio
import json

from tests.security.conftest import PKI
from tests.support import cli
from tests.support.java_bookies import BookieCluster


async def shell(cluster: BookieCluster, *args: str) -> tuple[int, str, str]:
    proc = await asyncio.to_thread(cli.run, "bookie-shell", "--zk", cluster.zk_connect, "--ledgers-root",
                                   cluster.ledgers_root, *args, check=False)
    return proc.returncode, proc.stdout, proc.stderr


async def test_the_shell_loads_a_ledger_with_a_role_certificate(secured: BookieCluster, pki: PKI) -> None:
    code, out, err = await shell(secured, "--tls-trust-store", str(pki.ca), "--tls-certificate",
                                 str(pki.writer.certificate), "--tls-key", str(pki.writer.key),
                                 "load", "--entries", "200", "--ensemble", "3", "--write-quorum", "2",
                                 "--ack-quorum", "2", "--delete")
    assert code == 0, err
    summary = json.loads(out)
    assert summary["written"] == summary["read_verified"] == 200


async def test_without_a_certificate_the_shell_reports_eua(secured: BookieCluster) -> None:
    code, _, err = await shell(secured, "load", "--entries", "10", "--ensemble", "3")
    assert code == 1
    assert "answered EUA" in err and "does not authorize this client" in err


async def test_a_certificate_without_its_key_is_bad_usage(secured: BookieCluster, pki: PKI) -> None:
    code, _, err = await shell(secured, "--tls-trust-store", str(pki.ca), "--tls-certificate",
                               str(pki.writer.certificate), "bookies")
    assert code == 2 and "--tls-certificate and --tls-key go together" in err
