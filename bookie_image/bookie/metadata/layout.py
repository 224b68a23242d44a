"""Znode paths of BookKeeper's ZooKeeper metadata (``BookKeeperConstants``, ``StringUtils``, ledger managers).

Ledger metadata lives under the "hierarchical" layout: ids below ``Integer.MAX_VALUE`` use the legacy 2-4-4
split (``/ledgers/00/0000/L0001``), larger ids the long 3-4-4-4-4 split of the 19-digit id.
"""

from __future__ import annotations

import re

INSTANCEID = "INSTANCEID"
LAYOUT = "LAYOUT"
AVAILABLE = "available"
READONLY = "readonly"
COOKIES = "cookies"
UNDERREPLICATION = "underreplication"
IDGEN = "idgen"
IDGEN_LONG = "idgen-long"
ID_GEN_PREFIX = "ID-"
HOB_PREFIX = "HOB-"
LEDGER_NODE_PREFIX = "L"

# LAYOUT znode content written by initnewcluster with the hierarchical ledger manager.
HIERARCHICAL_FACTORY = "org.apache.bookkeeper.meta.HierarchicalLedgerManagerFactory"
LAYOUT_DATA = f"2\n{HIERARCHICAL_FACTORY}:1".encode()

# Underreplication (autorecovery) names.
UR_LEDGERS = "ledgers"
UR_LOCKS = "locks"
UR_DISABLE = "disable"
UR_LOST_BOOKIE_RECOVERY_DELAY = "lostBookieRecoveryDelay"
UR_CHECK_ALL_LEDGERS_CTIME = "checkallledgersctime"
UR_PLACEMENT_POLICY_CHECK_CTIME = "placementpolicycheckctime"
UR_REPLICAS_CHECK_CTIME = "replicascheckctime"
UR_AUDITOR_ELECTION = "auditorelection"
UR_VOTE_PREFIX = "V_"
UR_LAYOUT_TYPE = "BASIC"
UR_LAYOUT_VERSION = 1

INT_MAX = 2**31 - 1
# Java's String.matches with \d: ASCII digits, whole name.
LEGACY_PARENT_RE = re.compile(r"[0-9]{2}")
LONG_PARENT_RE = re.compile(r"[0-9]{3}")
_JAVA_LONG_RE = re.compile(r"[+-]?[0-9]+")
_UR_ID_RE = re.compile(r"urL([0-9]+)$")

_SPECIAL = frozenset({AVAILABLE, COOKIES, LAYOUT, INSTANCEID, UNDERREPLICATION, IDGEN, IDGEN_LONG})


def is_special_znode(name: str) -> bool:
    """Top-level names under the ledgers root that are not ledger parents (``isSpecialZnode``)."""
    return name in _SPECIAL or name.startswith(ID_GEN_PREFIX)


def short_hierarchical_path(ledger_id: int) -> str:
    """``/00/0000/L0001`` for ids below 2^31-1 (2-4-4 split of ``%010d``)."""
    s = f"{ledger_id:010d}"
    return f"/{s[0:2]}/{s[2:6]}/{LEDGER_NODE_PREFIX}{s[6:10]}"


def long_hierarchical_path(ledger_id: int) -> str:
    """``/000/0000/0000/0000/L0001`` (3-4-4-4-4 split of ``%019d``)."""
    s = f"{ledger_id:019d}"
    return f"/{s[0:3]}/{s[3:7]}/{s[7:11]}/{s[11:15]}/{LEDGER_NODE_PREFIX}{s[15:19]}"


def hierarchical_path(ledger_id: int) -> str:
    """``HierarchicalLedgerManager``'s path: legacy below ``Integer.MAX_VALUE``, long from it on."""
    if ledger_id < 0:
        raise ValueError(f"ledger id {ledger_id} is negative")
    return short_hierarchical_path(ledger_id) if ledger_id < INT_MAX else long_hierarchical_path(ledger_id)


def parse_java_long(text: str) -> int:
    """``Long.parseLong``: optional sign and ASCII digits only, within int64."""
    if not _JAVA_LONG_RE.fullmatch(text):
        raise ValueError(f"not a long: {text!r}")
    value = int(text)
    if not -(2**63) <= value < 2**63:
        raise ValueError(f"out of range for a long: {text!r}")
    return value


def ledger_id_from_relative_path(relative: str) -> int:
    """Ledger id of a path relative to the root (``00/0000/L0001`` or the 5-level long form).

    As BookKeeper: drop the leading ``L`` of the last component and parse the concatenation.
    """
    parts = relative.strip("/").split("/")
    if len(parts) not in (3, 5):
        raise ValueError(f"not a hierarchical ledger path: {relative!r}")
    parts[-1] = parts[-1][len(LEDGER_NODE_PREFIX):]
    return parse_java_long("".join(parts))


class ZkLayout:
    """All paths below one ledgers root (default ``/ledgers``)."""

    def __init__(self, root: str = "/ledgers") -> None:
        if not root.startswith("/") or (root != "/" and root.endswith("/")):
            raise ValueError(f"ledgers root must be an absolute znode path: {root!r}")
        self.root = root
        self.instance_id = f"{root}/{INSTANCEID}"
        self.layout = f"{root}/{LAYOUT}"
        self.available = f"{root}/{AVAILABLE}"
        self.readonly = f"{root}/{AVAILABLE}/{READONLY}"
        self.cookies = f"{root}/{COOKIES}"
        self.idgen = f"{root}/{IDGEN}"
        self.idgen_long = f"{root}/{IDGEN_LONG}"
        ur = f"{root}/{UNDERREPLICATION}"
        self.underreplication = ur
        self.ur_layout = f"{ur}/{LAYOUT}"
        self.ur_ledgers = f"{ur}/{UR_LEDGERS}"
        self.ur_locks = f"{ur}/{UR_LOCKS}"
        self.ur_disable = f"{ur}/{UR_DISABLE}"
        self.ur_lost_bookie_recovery_delay = f"{ur}/{UR_LOST_BOOKIE_RECOVERY_DELAY}"
        self.ur_check_all_ledgers_ctime = f"{ur}/{UR_CHECK_ALL_LEDGERS_CTIME}"
        self.ur_placement_policy_check_ctime = f"{ur}/{UR_PLACEMENT_POLICY_CHECK_CTIME}"
        self.ur_replicas_check_ctime = f"{ur}/{UR_REPLICAS_CHECK_CTIME}"
        self.auditor_election = f"{ur}/{UR_AUDITOR_ELECTION}"

    def bookie(self, bookie_id: str, readonly: bool = False) -> str:
        """Ephemeral registration znode of a bookie."""
        return f"{self.readonly if readonly else self.available}/{bookie_id}"

    def cookie(self, bookie_id: str) -> str:
        return f"{self.cookies}/{bookie_id}"

    def ledger(self, ledger_id: int) -> str:
        return self.root + hierarchical_path(ledger_id)

    def ledger_id(self, path: str) -> int:
        """Inverse of ``ledger``; raises ValueError for paths that are not ledger znodes."""
        if not path.startswith(self.root + "/"):
            raise ValueError(f"{path!r} is not below {self.root!r}")
        return ledger_id_from_relative_path(path[len(self.root) + 1:])

    def ur_ledger_parent(self, ledger_id: int) -> str:
        """Four ``%04x`` groups of the id, high bits first (``getParentZnodePath``)."""
        groups = [(ledger_id >> shift) & 0xFFFF for shift in (48, 32, 16, 0)]
        return self.ur_ledgers + "".join(f"/{g:04x}" for g in groups)

    def ur_ledger(self, ledger_id: int) -> str:
        return f"{self.ur_ledger_parent(ledger_id)}/urL{ledger_id:010d}"

    def ur_lock(self, ledger_id: int) -> str:
        return f"{self.ur_locks}/urL{ledger_id:010d}"

    @staticmethod
    def ur_ledger_id(name: str) -> int:
        """Ledger id of an ``urL%010d`` node name or path."""
        match = _UR_ID_RE.search(name)
        if match is None:
            raise ValueError(f"not an underreplicated ledger node: {name!r}")
        return int(match.group(1))
