"""The ZooKeeper security options of the command-line tools (``bookie-shell``, ``bookie-stream``,
``bookie-audit snapshot``): the same settings as the bookie's ``zk*`` keys, under the operator's flag names.

    --zk-tls                   zkTlsEnable: connect to ZooKeeper's secureClientPort over TLS
    --zk-tls-ca FILE           zkTlsTrustStorePath: PEM CAs the server certificate must chain to
    --zk-tls-cert FILE         zkTlsCertificatePath: PEM client certificate (the session's x509 identity)
    --zk-tls-key FILE          zkTlsKeyPath: its PEM key
    --zk-tls-no-hostname-verification    zkTlsHostnameVerification=false
    --zk-digest-file FILE      zkDigestAuthFile: user:password (digest identity)
    --zk-enable-security       zkEnableSecurity: create znodes with CREATOR_ALL ACLs

Each defaults to an environment variable (``$BOOKIE_ZK_TLS=true``, ``$BOOKIE_ZK_TLS_CA``, ...), as ``--zk``
defaults to ``$BOOKIE_ZK``. ``security_from_args`` checks the combination and the files (as the bookie checks
its keys at start) and ``check_reachable`` makes one TLS handshake with ZooKeeper, so that a wrong CA, a
missing client certificate or a plaintext port is an error naming the option instead of a connection that
times out.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from pathlib import Path

from bookie.metadata.security import ZkSecurity, ZkSecurityError, check_tls_handshake, read_digest

# The flag of each ZkSecurity setting, for error messages.
OPTION_NAMES: Mapping[str, str] = {
    "tls": "--zk-tls", "ca": "--zk-tls-ca", "certfile": "--zk-tls-cert", "keyfile": "--zk-tls-key",
    "check_hostname": "--zk-tls-no-hostname-verification", "digest": "--zk-digest-file",
    "acl": "--zk-enable-security",
}


def _env_flag(env: Mapping[str, str], name: str) -> bool:
    return env.get(name, "").lower() == "true"


def add_arguments(parser: argparse.ArgumentParser, env: Mapping[str, str] | None = None) -> None:
    """Add the ZooKeeper security options (an argument group) to a tool's parser."""
    env = os.environ if env is None else env
    zk = parser.add_argument_group("ZooKeeper security (the fleet's identity; docs/security.md, \"ZooKeeper\")")
    zk.add_argument("--zk-tls", action="store_true", default=_env_flag(env, "BOOKIE_ZK_TLS"),
                    help="connect to ZooKeeper's secureClientPort over TLS (zkTlsEnable; $BOOKIE_ZK_TLS=true)")
    zk.add_argument("--zk-tls-ca", default=env.get("BOOKIE_ZK_TLS_CA"),
                    help="PEM CA bundle ZooKeeper's certificate must chain to (zkTlsTrustStorePath; "
                         "$BOOKIE_ZK_TLS_CA)")
    zk.add_argument("--zk-tls-cert", default=env.get("BOOKIE_ZK_TLS_CERT"),
                    help="PEM client certificate, the session's x509 identity (zkTlsCertificatePath; "
                         "$BOOKIE_ZK_TLS_CERT)")
    zk.add_argument("--zk-tls-key", default=env.get("BOOKIE_ZK_TLS_KEY"),
                    help="PEM key of --zk-tls-cert (zkTlsKeyPath; $BOOKIE_ZK_TLS_KEY)")
    zk.add_argument("--zk-tls-no-hostname-verification", action="store_true",
                    help="do not check that ZooKeeper's certificate names the host dialled "
                         "(zkTlsHostnameVerification=false)")
    zk.add_argument("--zk-digest-file", default=env.get("BOOKIE_ZK_DIGEST_FILE"),
                    help="file holding user:password, the digest identity (zkDigestAuthFile; "
                         "$BOOKIE_ZK_DIGEST_FILE)")
    zk.add_argument("--zk-enable-security", action="store_true",
                    default=_env_flag(env, "BOOKIE_ZK_ENABLE_SECURITY"),
                    help="create znodes with CREATOR_ALL ACLs (zkEnableSecurity; $BOOKIE_ZK_ENABLE_SECURITY=true)")


def security_from_args(args: argparse.Namespace) -> ZkSecurity:
    """The ``ZkSecurity`` of the parsed options; the same combination rules as the bookie's ``zk*`` keys.
    Reads the digest file. Raises ``ZkSecurityError`` naming the option."""
    tls_files = {"--zk-tls-ca": args.zk_tls_ca, "--zk-tls-cert": args.zk_tls_cert, "--zk-tls-key": args.zk_tls_key}
    given = [name for name, value in tls_files.items() if value]
    if given and not args.zk_tls:
        raise ZkSecurityError(f"{', '.join(given)} given without --zk-tls")
    if bool(args.zk_tls_cert) != bool(args.zk_tls_key):
        raise ZkSecurityError("--zk-tls-cert and --zk-tls-key go together (a client certificate and its key)")
    if args.zk_enable_security and not (args.zk_digest_file or args.zk_tls_cert):
        raise ZkSecurityError("--zk-enable-security needs an identity for the ZooKeeper session: --zk-digest-file "
                              "or --zk-tls-cert")
    digest = read_digest(args.zk_digest_file, "--zk-digest-file") if args.zk_digest_file else None
    def path(value: str | None) -> Path | None:
        return Path(value) if value else None

    security = ZkSecurity(tls=args.zk_tls, ca=path(args.zk_tls_ca), certfile=path(args.zk_tls_cert),
                          keyfile=path(args.zk_tls_key), check_hostname=not args.zk_tls_no_hostname_verification,
                          digest=digest, acl=args.zk_enable_security, option_names=OPTION_NAMES)
    if security.tls:
        security.ssl_context()  # the files load, or the error names the option
    return security


def check_reachable(security: ZkSecurity, zk_servers: str, timeout_s: float = 5.0) -> None:
    """With TLS: one handshake with the first ZooKeeper server that answers (blocking; call from a thread or
    before the event loop). Raises ``ZkSecurityError`` for what only a setting can fix."""
    if security.tls:
        check_tls_handshake(security, zk_servers, timeout_s)
