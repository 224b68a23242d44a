"""Numbers of the bookie protocol: v3 status codes and operations, v2 opcodes, flags and rc codes.

The v2 protocol has its own return codes (small integers); the bookie thinks in v3 ``StatusCode`` and the
codec converts at the edge, so both mappings live here.
"""

from __future__ import annotations

from enum import IntEnum, IntFlag


class StatusCode(IntEnum):
    """v3 ``StatusCode`` (also what the processor returns for every protocol)."""

    EOK = 0
    ENOLEDGER = 402
    ENOENTRY = 403
    EBADREQ = 404
    EIO = 501
    EUA = 502
    EBADVERSION = 503
    EFENCED = 504
    EREADONLY = 505
    ETOOMANYREQUESTS = 506
    EUNKNOWNLEDGERSTATE = 507


class V2Rc(IntEnum):
    """v2 int32 return codes (``BookieProtocol.E*``)."""

    EOK = 0
    ENOLEDGER = 1
    ENOENTRY = 2
    EBADREQ = 100
    EIO = 101
    EUA = 102
    EBADVERSION = 103
    EFENCED = 104
    EREADONLY = 105
    ETOOMANYREQUESTS = 106
    EUNKNOWNLEDGERSTATE = 107


_V3_TO_V2 = {s: V2Rc[s.name] for s in StatusCode}
_V2_TO_V3 = {r: StatusCode[r.name] for r in V2Rc}


def status_to_v2(status: StatusCode) -> int:
    """v3 status -> v2 rc (every v3 status has a v2 twin of the same name)."""
    return _V3_TO_V2[status]


def v2_to_status(rc: int) -> StatusCode:
    """v2 rc -> v3 status; unknown rc codes become EIO so a client never trusts an unknown answer."""
    try:
        return _V2_TO_V3[V2Rc(rc)]
    except ValueError:
        return StatusCode.EIO


class ProtocolVersion(IntEnum):
    VERSION_ONE = 1
    VERSION_TWO = 2
    VERSION_THREE = 3


class OperationType(IntEnum):
    """v3 ``OperationType``."""

    READ_ENTRY = 1
    ADD_ENTRY = 2
    RANGE_READ_ENTRY = 3
    RANGE_ADD_ENTRY = 4
    AUTH = 5
    WRITE_LAC = 6
    READ_LAC = 7
    GET_BOOKIE_INFO = 8
    START_TLS = 9
    FORCE_LEDGER = 10
    GET_LIST_OF_ENTRIES_OF_LEDGER = 11
    BATCH_READ_ENTRY = 12


class V2OpCode(IntEnum):
    """v2 opcodes (``BookieProtocol``)."""

    ADDENTRY = 1
    READENTRY = 2
    AUTH = 3
    READ_LAC = 4
    WRITE_LAC = 5
    GET_BOOKIE_INFO = 6
    BATCH_READ_ENTRY = 7


class V2Flag(IntFlag):
    """Flags in the low 16 bits of the v2 packet header."""

    NONE = 0x0
    DO_FENCING = 0x0001
    RECOVERY_ADD = 0x0002
    HIGH_PRIORITY = 0x0004


# v2 protocol versions: the client sends CURRENT; the server accepts LOWEST_COMPAT..CURRENT.
V2_CURRENT_PROTOCOL_VERSION = 2
V2_LOWEST_COMPAT_PROTOCOL_VERSION = 0

# v3 ReadRequest.Flag / AddRequest.Flag / AddRequest.writeFlags / GetBookieInfoRequest.Flags.
READ_FLAG_FENCE_LEDGER = 1
READ_FLAG_ENTRY_PIGGYBACK = 2
ADD_FLAG_RECOVERY_ADD = 1
WRITE_FLAG_DEFERRED_SYNC = 0x1
BOOKIE_INFO_TOTAL_DISK_CAPACITY = 0x01
BOOKIE_INFO_FREE_DISK_SPACE = 0x02

# Priority the Java client uses for recovery adds and fencing reads; > 0 means high priority.
HIGH_PRIORITY_VALUE = 100

MASTER_KEY_LENGTH = 20
INVALID_ENTRY_ID = -1
LAST_ADD_CONFIRMED = -1

# Plugin name that means "authentication disabled" to the Java client.
AUTH_DISABLED_PLUGIN = "AuthDisabledPlugin"
