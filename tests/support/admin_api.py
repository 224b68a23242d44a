"""The admin API credential every test bookie is started with (``httpServerAuthTokenFile``).

Every bookie of ``tests.support.bookies`` accepts ``TEST_ADMIN_TOKEN``; ``tests.support.rest`` sends it
unless told otherwise, and ``ADMIN_HEADERS`` is what other HTTP clients in tests send. Tests of the
credential itself (tests/security/) pass their own or none. ``write_identity`` and ``write_ca`` put a test CA's
certificates on disk as the bookie and ZooKeeper read them (PEM, PKCS#8 keys), ``swap_to`` rotates them as the
kubelet does and ``served_serial`` says which one a server presents; ``audit_records`` reads a bookie's audit
lines.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import ssl
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trustme
from cryptography import x509
from cryptography.hazmat.primitives import serialization

TEST_ADMIN_TOKEN = "test-admin-token-0123456789abcdef"
ADMIN_HEADERS = {"Authorization": f"Bearer {TEST_ADMIN_TOKEN}"}


@dataclass(frozen=True)
class PemIdentity:
    """A certificate chain and its private key as PEM files (PKCS#8, which Java's PEM readers need too)."""

    cert: Path
    key: Path

    def combined(self, path: Path) -> Path:
        """Key then chain in one file (ZooKeeper's PEM key store)."""
        path.write_bytes(self.key.read_bytes() + self.cert.read_bytes())
        return path


def write_identity(ca: trustme.CA, directory: Path, name: str, *identities: str, common_name: str | None = None,
                   organization_unit_name: str | None = None) -> PemIdentity:
    """``name.crt``/``name.key`` issued by ``ca`` for ``identities`` (hostnames, IP addresses)."""
    leaf = ca.issue_cert(*identities, common_name=common_name or name, organization_unit_name=organization_unit_name)
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    pkcs8 = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption())
    directory.mkdir(parents=True, exist_ok=True)
    identity = PemIdentity(directory / f"{name}.crt", directory / f"{name}.key")
    identity.cert.write_bytes(b"".join(blob.bytes() for blob in leaf.cert_chain_pems))
    identity.key.write_bytes(pkcs8)
    identity.key.chmod(0o600)
    return identity


def write_ca(ca: trustme.CA, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    ca.cert_pem.write_to_path(str(path))
    return path


def audit_records(log_path: Path) -> list[dict[str, Any]]:
    """The admin API's audit lines of a bookie's log, oldest first."""
    records = []
    for line in log_path.read_text(errors="replace").splitlines():
        _, marker, payload = line.partition("admin-audit ")
        if marker:
            records.append(json.loads(payload))
    return records


def swap_to(live: Path, version: Path) -> None:
    """What the kubelet does to a mounted Secret: a new directory, then one atomic rename of a symlink."""
    link = live.with_name(live.name + ".new")
    link.symlink_to(version)
    os.replace(link, live)


def served_serial(address: str, port: int, context: ssl.SSLContext) -> int:
    """The serial number of the certificate a new TLS connection to address:port is served."""
    with socket.create_connection((address, port), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname=address) as tls:
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return int(x509.load_der_x509_certificate(der).serial_number)


def serial_of(identity: PemIdentity) -> int:
    return int(x509.load_pem_x509_certificate(identity.cert.read_bytes()).serial_number)


# New connections tried, 0.25 s apart, before a rotation counts as not picked up: several refresh periods of 1 s,
# far fewer than the 30 s the admin API waits when tlsCertFilesRefreshDurationSeconds is off.
ROTATION_POLLS = 40


async def wait_until_served(address: str, port: int, context: ssl.SSLContext, identity: PemIdentity) -> None:
    """Until a new TLS connection to address:port is served ``identity``'s certificate (a rotation picked up)."""
    seen = []
    for _ in range(ROTATION_POLLS):
        seen.append(await asyncio.to_thread(served_serial, address, port, context))
        if seen[-1] == serial_of(identity):
            return
        await asyncio.sleep(0.25)
    raise AssertionError(f"still another certificate after {len(seen)} new connections")
