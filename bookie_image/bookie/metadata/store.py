"""``MetadataStore``: every BookKeeper metadata role over one ZooKeeper session.

The roles live in their own modules, as in BookKeeper: ``registration`` (``RegistrationManager``),
``cookie_store`` (cookies), ``ledger_ids`` (``LedgerIdGenerator``), ``ledger_manager`` (``LedgerManager``)
``underreplication`` (``LedgerUnderreplicationManager``) and ``racks`` (the ``/bookies`` rack information
Pulsar's rack-aware placement reads), each a ``ZkSession``. A process opens one
``MetadataStore`` (one session, so one set of ephemeral znodes) and hands each component the role it uses,
typed as that role.
"""

from __future__ import annotations

from bookie.metadata.cookie_store import CookieStore
from bookie.metadata.ledger_ids import LedgerIdGenerator
from bookie.metadata.ledger_manager import LedgerManager
from bookie.metadata.racks import RackInfoStore
from bookie.metadata.registration import BookieRegistration
from bookie.metadata.session import (
    BadVersion,
    LayoutMismatch,
    LedgerRange,
    MetadataError,
    NoAuth,
    NodeExists,
    NoNode,
    NoSuchLedger,
    NotEmpty,
    RegistrationError,
    UnderreplicatedLedger,
    Versioned,
    ZkSession,
    ZooKeeperUnreachable,
)
from bookie.metadata.underreplication import UnderreplicationManager

__all__ = [
    "BadVersion",
    "BookieRegistration",
    "CookieStore",
    "LayoutMismatch",
    "LedgerIdGenerator",
    "LedgerManager",
    "LedgerRange",
    "MetadataError",
    "MetadataStore",
    "NoAuth",
    "NoNode",
    "NoSuchLedger",
    "NodeExists",
    "NotEmpty",
    "RackInfoStore",
    "RegistrationError",
    "UnderreplicatedLedger",
    "UnderreplicationManager",
    "Versioned",
    "ZkSession",
    "ZooKeeperUnreachable",
]


class MetadataStore(BookieRegistration, CookieStore, LedgerManager, UnderreplicationManager, RackInfoStore):
    """All metadata roles on one session. Use ``async with`` or ``connect()``/``close()``."""
