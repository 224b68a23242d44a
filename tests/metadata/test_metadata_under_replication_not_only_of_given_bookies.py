"""The operator's count of under-replicated ledgers, on a real ZooKeeper: every mark; with bookies excluded (the
dead bookies a user named for decommission), only the marks that miss some other bookie, or that name none."""

from __future__ import annotations

from bookie.metadata.store import MetadataStore
from bookie_operator.zk import ClusterMetadata

DEAD, OTHER, THIRD = "bk-1.h:3181", "bk-2.h:3181", "bk-3.h:3181"


async def test_marks_missing_only_excluded_bookies_are_not_counted(metadata_store: MetadataStore) -> None:
    await metadata_store.mark_ledger_underreplicated(1, [DEAD])
    await metadata_store.mark_ledger_underreplicated(2, [DEAD, OTHER])
    await metadata_store.mark_ledger_underreplicated(3, [OTHER])
    await metadata_store.mark_ledger_underreplicated(4, [DEAD, THIRD])
    await metadata_store.mark_ledger_underreplicated(5, [])
    metadata = ClusterMetadata(metadata_store)
    assert await metadata.under_replicated() == 5
    assert await metadata.under_replicated(excluding={DEAD}) == 4
    assert await metadata.under_replicated(excluding={DEAD, THIRD}) == 3
    assert await metadata.under_replicated(excluding={DEAD, OTHER, THIRD}) == 1     # the mark naming none
    await metadata_store.mark_ledger_replicated(2)
    assert await metadata.under_replicated(excluding={DEAD}) == 3
