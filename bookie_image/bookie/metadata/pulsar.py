"""Which Apache Pulsar topic a ledger belongs to, from the custom metadata a Pulsar broker writes.

A 4.0 broker writes, on every ledger of a topic's managed ledger, ``application=pulsar``,
``component=managed-ledger`` and ``pulsar/managed-ledger=<tenant>/<namespace>/persistent/<local name>`` (the
local name URL-encoded); a cursor's ledger has the same keys plus ``pulsar/cursor=<subscription>``
(tests/pulsar reads them back from a real broker's ledgers). The audit computes the same label in Spark
(``bookie_audit.audits.pulsar_owner``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from urllib.parse import unquote_plus

MANAGED_LEDGER_KEY = "pulsar/managed-ledger"
CURSOR_KEY = "pulsar/cursor"
# <tenant>/<namespace> (or the older <property>/<cluster>/<namespace>), the domain, the encoded local name.
MANAGED_LEDGER_NAME = re.compile(r"^(.+)/(persistent|non-persistent)/([^/]+)$")


def _text(value: bytes | str) -> str:
    return value.decode("utf-8", errors="backslashreplace") if isinstance(value, bytes) else value


def topic_name(managed_ledger: str) -> str:
    """``public/default/persistent/t`` -> ``persistent://public/default/t``; another name is returned as is."""
    m = MANAGED_LEDGER_NAME.match(managed_ledger)
    return f"{m[2]}://{m[1]}/{unquote_plus(m[3])}" if m else managed_ledger


def pulsar_owner(custom_metadata: Mapping[str, bytes | str]) -> str | None:
    """The topic a Pulsar ledger stores (``persistent://t/ns/name``), with ``(cursor S)`` for a subscription's
    cursor ledger; None for a ledger without Pulsar's managed-ledger metadata."""
    name = custom_metadata.get(MANAGED_LEDGER_KEY)
    if name is None:
        return None
    topic = topic_name(_text(name))
    cursor = custom_metadata.get(CURSOR_KEY)
    return f"{topic} (cursor {_text(cursor)})" if cursor is not None else topic
