"""An append sends the entry exactly as BookKeeper's client packages it (header, digest over header and payload,
payload), for every digest type: the client's C path packages CRC32, CRC32C and dummy digests itself and leaves
HMAC to ``package_entry``, and both give the same bytes."""

from __future__ import annotations

import pytest
from bookie.client import BookKeeper
from bookie.protocol.entry import DigestType, digest_manager, package_entry

from tests.support.java_bookies import BookieCluster


@pytest.mark.parametrize("digest", list(DigestType))
async def test_the_entry_sent_is_the_packaged_entry(cluster: BookieCluster, digest: DigestType) -> None:
    async with BookKeeper(cluster.client_config()) as bk:
        lh = await bk.create_ledger(3, 2, 2, digest_type=digest, password=b"secret")
        payloads = [b"", b"a", b"payload " * 300, bytes(range(256)) * 17]
        length = 0
        for entry_id, payload in enumerate(payloads):
            future = lh.append(payload)
            (op,) = [op for op in lh._pending if op.entry_id == entry_id]
            length += len(payload)
            expected = package_entry(digest_manager(digest, b"secret"), lh.ledger_id, entry_id, entry_id - 1,
                                     length, payload)
            assert op.body == expected, f"entry {entry_id} packaged differently"
            assert await future == entry_id
        await lh.close()
