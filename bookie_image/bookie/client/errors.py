"""Errors raised by the ledger client.

The names follow BookKeeper's ``BKException`` subclasses so a reader who knows the Java client knows what
each means; every message names the ledger (and bookie) concerned.
"""

from __future__ import annotations

from bookie.protocol.codes import StatusCode


class BKError(Exception):
    """Base of every client error."""


class BookieError(BKError):
    """A bookie answered a request with a non-OK status (or could not be asked)."""

    def __init__(self, message: str, *, bookie: str | None = None, status: StatusCode | None = None) -> None:
        super().__init__(message)
        self.bookie = bookie
        self.status = status


class BookieUnavailable(BookieError):
    """No connection to the bookie (refused, reset, closed while requests were pending)."""


class BookieTimeout(BookieError):
    """The bookie did not answer within the request timeout."""


class NoSuchEntry(BookieError):
    """The bookie has no such entry (ENOENTRY) or no such ledger (ENOLEDGER)."""


class LedgerFencedError(BookieError):
    """The ledger was fenced: another client opened it for recovery, this writer can add no more."""


class UnauthorizedAccess(BookieError):
    """EUA: wrong password (master key) for this ledger, or a bookie that does not serve this client
    (certificate authorization: no TLS, or no allowed role in the client certificate)."""


class NotEnoughBookies(BKError):
    """Placement could not find enough writable bookies."""


class NoSuchLedger(BKError):
    """No metadata for the ledger in ZooKeeper."""


class LedgerClosedError(BKError):
    """The ledger is closed (or being closed): no more adds."""


class DigestMismatchError(BKError):
    """An entry failed digest verification on every replica that was asked."""


class ReadError(BKError):
    """An entry could not be read from any replica."""


class LedgerRecoveryError(BKError):
    """Recovery (fence, find the last entry, re-replicate the tail, close) did not complete."""


class MetadataConflict(BKError):
    """The ledger metadata changed under this client in a way it cannot reconcile."""


class ProtocolNotSupported(BKError):
    """The operation needs the v3 protocol (explicit LAC, long poll) but the client speaks v2."""


class IncorrectParameter(BKError, ValueError):
    """A caller error (entry range, quorum sizes, ...)."""


def status_error(status: StatusCode, what: str, bookie: str) -> BookieError:
    """The exception for a non-OK bookie status."""
    message = f"{what}: bookie {bookie} answered {status.name}"
    if status in (StatusCode.ENOENTRY, StatusCode.ENOLEDGER):
        return NoSuchEntry(message, bookie=bookie, status=status)
    if status is StatusCode.EFENCED:
        return LedgerFencedError(message + " (ledger fenced by another client: this writer must stop)",
                                 bookie=bookie, status=status)
    if status is StatusCode.EUA:
        return UnauthorizedAccess(message + " (wrong ledger password, or the bookie does not authorize this client: "
                                            "TLS and a client certificate with an allowed role?)",
                                  bookie=bookie, status=status)
    return BookieError(message, bookie=bookie, status=status)
