"""The command-line tools reach a ZooKeeper that speaks only TLS and protects the fleet's znodes with its
identity: ``bookie-shell``, ``bookie-stream`` and ``bookie-audit snapshot`` take the bookie's ZooKeeper keys as
``--zk-tls``, ``--zk-tls-ca``, ``--zk-tls-cert``/``--zk-tls-key``, ``--zk-digest-file`` and
``--zk-enable-security``. A CA that does not sign ZooKeeper's certificate, a missing CA file, a missing client
certificate or a plaintext session is an error naming the option, not a connection that times out."""

from __future__ import annotations

import asyncio
import json
import uuid
from pathlib import Path

import pytest
import trustme
from bookie_fleet.zookeeper import ZooKeeperServer

from tests.support import cli
from tests.support.admin_api import write_ca
from tests.support.zookeeper_tls import SecureFleet, ZkIdentity


def zk_options(identity: ZkIdentity, *, ca: Path | None = None, certificate: bool = True) -> list[str]:
    """The fleet's identity as the tools' options (``ca``: another CA bundle instead of the right one)."""
    options = ["--zk-tls", "--zk-tls-ca", str(ca or identity.ca), "--zk-enable-security"]
    if certificate:
        options += ["--zk-tls-cert", str(identity.client.cert), "--zk-tls-key", str(identity.client.key)]
    if identity.digest_file is not None:
        options += ["--zk-digest-file", str(identity.digest_file)]
    return options


async def tool(name: str, *args: str, limit_s: float = 180) -> tuple[int, str, str]:
    proc = await asyncio.to_thread(cli.run, name, *args, check=False, timeout=limit_s)
    return proc.returncode, proc.stdout, proc.stderr


def shell_args(fleet: SecureFleet, *args: str) -> list[str]:
    return ["--zk", fleet.zookeeper.connect_string, "--ledgers-root", fleet.ledgers_root, *args]


@pytest.fixture(scope="module")
def other_ca(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return write_ca(trustme.CA(organization_name="not ZooKeeper's CA"), tmp_path_factory.mktemp("other-ca") / "ca.crt")


async def test_the_shell_lists_bookies_and_loads_a_ledger(secure_fleet: SecureFleet) -> None:
    options = zk_options(secure_fleet.identity)
    code, out, err = await tool("bookie-shell", *shell_args(secure_fleet, *options, "bookies", "--json"))
    assert code == 0, err
    listed = json.loads(out)
    assert sorted(listed["writable"]) == sorted(b.bookie_id for b in secure_fleet.bookies), listed
    code, out, err = await tool("bookie-shell", *shell_args(secure_fleet, *options, "load", "--entries", "50",
                                                            "--ensemble", "3", "--write-quorum", "2",
                                                            "--ack-quorum", "2"))
    assert code == 0, err
    assert json.loads(out)["read_verified"] == 50


async def test_the_stream_tool_appends_and_reads(secure_fleet: SecureFleet) -> None:
    base = ["--zk", secure_fleet.zookeeper.connect_string, "--ledgers-root", secure_fleet.ledgers_root,
            "--streams-root", f"/streams-{uuid.uuid4().hex[:8]}", *zk_options(secure_fleet.identity)]
    for args in (("namespace", "create", "ns", "ensemble=3", "write_quorum=2", "ack_quorum=2"),
                 ("create", "ns/secure"), ("append", "ns/secure", "one", "two", "--key", "k")):
        code, _, err = await tool("bookie-stream", *base, *args)
        assert code == 0, err
    code, out, err = await tool("bookie-stream", *base, "read", "ns/secure")
    assert code == 0, err
    assert [line.split("\t")[2] for line in out.splitlines()] == ["one", "two"]


async def test_the_audit_snapshots_the_protected_metadata(secure_fleet: SecureFleet, tmp_path: Path) -> None:
    code, _, err = await tool("bookie-shell", *shell_args(secure_fleet, *zk_options(secure_fleet.identity), "load",
                                                          "--entries", "10", "--ensemble", "3"))
    assert code == 0, err
    code, _, err = await tool("bookie-audit", "snapshot", "--zk", secure_fleet.zookeeper.connect_string,
                                "--root", secure_fleet.ledgers_root, "--out", str(tmp_path / "snap"),
                                *zk_options(secure_fleet.identity))
    assert code == 0, err
    manifest = json.loads((tmp_path / "snap" / "manifest.json").read_text())
    assert manifest["ledgers"] >= 1, manifest
    assert sorted(manifest["bookies"]) == sorted(b.bookie_id for b in secure_fleet.bookies)


@pytest.mark.parametrize("name", ["bookie-shell", "bookie-stream", "bookie-audit"])
async def test_a_ca_that_does_not_sign_zookeepers_certificate_is_named(secure_fleet: SecureFleet, other_ca: Path,
                                                                       name: str) -> None:
    options = zk_options(secure_fleet.identity, ca=other_ca)
    code, _, err = await tool(name, *tool_args(name, secure_fleet, options), limit_s=60)
    assert code != 0
    assert "--zk-tls-ca" in err and str(other_ca) in err and "does not verify" in err, err


def tool_args(name: str, fleet: SecureFleet, options: list[str]) -> list[str]:
    """A read-only command of each tool."""
    zk = ["--zk", fleet.zookeeper.connect_string]
    if name == "bookie-shell":
        return shell_args(fleet, *options, "ledgers")
    if name == "bookie-stream":
        return [*zk, "--ledgers-root", fleet.ledgers_root, *options, "list"]
    return ["snapshot", *zk, "--root", fleet.ledgers_root, "--out", "/nonexistent-never-written", *options]


async def test_a_missing_ca_file_is_named(secure_fleet: SecureFleet, tmp_path: Path) -> None:
    missing = tmp_path / "no-such-ca.crt"
    code, _, err = await tool("bookie-shell", *shell_args(secure_fleet, *zk_options(secure_fleet.identity,
                                                                                      ca=missing), "ledgers"))
    assert code == 2
    assert f"--zk-tls-ca {missing}" in err, err


async def test_without_a_ca_the_system_cas_are_named(secure_fleet: SecureFleet) -> None:
    identity = secure_fleet.identity
    code, _, err = await tool("bookie-stream", "--zk", secure_fleet.zookeeper.connect_string, "--zk-tls",
                              "--zk-tls-cert", str(identity.client.cert), "--zk-tls-key", str(identity.client.key),
                              "list", limit_s=60)
    assert code == 1
    assert "no --zk-tls-ca given" in err, err


async def test_without_a_client_certificate_the_option_is_named(secure_fleet: SecureFleet) -> None:
    options = zk_options(secure_fleet.identity, certificate=False)
    code, _, err = await tool("bookie-shell", *shell_args(secure_fleet, *options, "ledgers"), limit_s=60)
    assert code == 1
    assert "requires a client certificate" in err and "--zk-tls-cert" in err, err


async def test_a_tls_only_zookeeper_without_zk_tls_is_refused(secure_fleet: SecureFleet) -> None:
    """Plaintext to a TLS port: the session never establishes; the tool gives up and says so."""
    code, _, err = await tool("bookie-shell", *shell_args(secure_fleet, "ledgers"), limit_s=120)
    assert code == 1
    assert "cannot connect to ZooKeeper" in err, err


async def test_zk_tls_against_a_plaintext_port_is_named(zookeeper: ZooKeeperServer,
                                                        fleet_zk_identity: ZkIdentity) -> None:
    code, _, err = await tool("bookie-shell", "--zk", zookeeper.connect_string, *zk_options(fleet_zk_identity),
                              "ledgers", limit_s=60)
    assert code == 1
    assert "does not speak TLS on this port" in err and "--zk-tls" in err, err
