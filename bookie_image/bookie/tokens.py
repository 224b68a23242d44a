"""Bearer token files: one token per line, or ``sha256:<hex>`` of one, so that whoever checks a token need not
hold it. Compared in constant time by digest; a file is re-read when it changes (a Kubernetes Secret volume
swaps it), so a rotated token applies without a restart.

Used by the bookie's admin API (``bookie.http.auth``) and by the audit's report store, whose image has none of the
bookie's server dependencies: this module imports only the standard library.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import os
import re
from pathlib import Path

log = logging.getLogger(__name__)

MIN_TOKEN_LENGTH = 16  # shorter tokens are guessable; the operator generates 43 characters
HASHED = re.compile(r"sha256:([0-9a-f]{64})")


class TokenFileError(Exception):
    """The token file cannot be used; the message names the file and the problem."""


def parse_tokens(text: str, source: str) -> tuple[str, ...]:
    """One token per line, or ``sha256:<64 hex>`` of one; blank lines and ``#`` comments are skipped (several
    lines: rotation overlap, or one token per consumer)."""
    tokens = []
    for number, line in enumerate(text.splitlines(), 1):
        token = line.strip()
        if not token or token.startswith("#"):
            continue
        if token.startswith("sha256:") and not HASHED.fullmatch(token):
            raise TokenFileError(f"{source}:{number}: a hashed token is sha256: then 64 lowercase hex digits")
        if len(token) < MIN_TOKEN_LENGTH:
            raise TokenFileError(f"{source}:{number}: a token must have at least {MIN_TOKEN_LENGTH} characters "
                                 f"(this one has {len(token)})")
        tokens.append(token)
    return tuple(tokens)


def token_digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


def hashed_line(token: str) -> str:
    """The line a token file holds for ``token`` when whoever reads the file must not learn it: ``sha256:<hex>``
    (a line that is a hash already stays as it is)."""
    return token if HASHED.fullmatch(token) else "sha256:" + token_digest(token).hex()


def token_identity(token: str) -> str:
    """What the audit log says about a token: a fingerprint, never the token (the same for its hash)."""
    return "token:" + hashlib.sha256(token.encode()).hexdigest()[:12]


def _entry(token: str) -> tuple[bytes, str]:
    """The digest a presented token must have, and its identity; a hashed line is its own digest."""
    hashed = HASHED.fullmatch(token)
    if hashed:
        return bytes.fromhex(hashed.group(1)), "token:" + hashed.group(1)[:12]
    return token_digest(token), token_identity(token)


class TokenFile:
    """The bearer tokens of one scope, from a file re-read whenever it changes (a Secret volume swaps it)."""

    def __init__(self, path: Path, key: str = "httpServerAuthTokenFile") -> None:
        self.path = path
        self.key = key
        self._signature: tuple[int, int, int, int] | None = None
        self._digests: tuple[bytes, ...] = ()
        self._identities: tuple[str, ...] = ()

    def _stat(self) -> tuple[int, int, int, int]:
        st = os.stat(self.path)  # follows the symlinks of a Secret volume to the current file
        return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size

    def load(self) -> None:
        """Read the file now (blocking); raises TokenFileError. Used at start-up: a bookie whose token file is
        missing or invalid does not start."""
        try:
            signature = self._stat()
            text = self.path.read_text()
        except OSError as exc:
            raise TokenFileError(f"{self.key} {self.path}: cannot read: {exc.strerror}") from None
        tokens = parse_tokens(text, f"{self.key} {self.path}")
        if not tokens:
            log.warning("%s %s holds no token: every bearer token is refused", self.key, self.path)
        entries = [_entry(t) for t in tokens]
        self._digests = tuple(d for d, _ in entries)
        self._identities = tuple(i for _, i in entries)
        self._signature = signature

    def refresh(self) -> None:
        """Re-read the file if it changed (blocking: call it off the event loop). A file that cannot be read
        or parsed keeps the tokens in force, and says so."""
        try:
            if self._stat() == self._signature:
                return
            self.load()
        except (OSError, TokenFileError) as exc:
            log.error("admin token file not reloaded, the previous tokens stay in force: %s", exc)
            return
        log.info("%s %s reloaded (%d token(s))", self.key, self.path, len(self._digests))

    def identify(self, presented: str) -> str | None:
        """The identity of the token presented, or None. Every entry is compared, in constant time, by digest
        (so plain and hashed lines are alike, and the comparison's time says nothing of the token's length)."""
        candidate = token_digest(presented)
        found = None
        for digest, identity in zip(self._digests, self._identities, strict=True):
            if hmac.compare_digest(digest, candidate):
                found = identity
        return found
