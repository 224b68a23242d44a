"""``bookie-audit``: snapshot the metadata, run the audit, re-render the report.

    bookie-audit snapshot --zk 127.0.0.1:2181 [--root /ledgers] --out snap/
                          [--zk-tls [--zk-tls-ca CA] [--zk-tls-cert C --zk-tls-key K]] [--zk-digest-file F]
    bookie-audit run --logs /data/bookie-1 --logs 10.0.0.2:3181=/mnt/b2 --metadata snap/ --out audit/
                     [--master local[*] | spark://host:7077] [--mode full|metadata] [--min-age-days 7]
    bookie-audit report --out audit/
    spark-submit --master spark://host:7077 pipeline/bookie_audit/cli.py run ...   (same job on a cluster)

The ``--zk-*`` options of ``snapshot`` (and of ``run --zk``) are the bookie's ZooKeeper TLS and identity keys
(``bookie.metadata.zk_options``): a fleet with ``zkEnableSecurity`` lets only its identity read the metadata.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from collections.abc import Sequence

from bookie.metadata import zk_options
from bookie.metadata.security import ZkSecurity, ZkSecurityError
from bookie.metadata.session import MetadataError

from bookie_audit.files import AuditInputError, LogInput


def _floats(text: str) -> list[float]:
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError as exc:
        raise argparse.ArgumentTypeError(f"not a comma-separated list of numbers: {text}") from exc
    if not values or any(not 0 <= v <= 1 for v in values):
        raise argparse.ArgumentTypeError(f"thresholds must be between 0 and 1: {text}")
    return values


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="bookie-audit", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("snapshot", help="export ledger metadata from ZooKeeper to Parquet")
    s.add_argument("--zk", required=True, help="ZooKeeper connect string")
    s.add_argument("--root", default="/ledgers", help="ledgers root (zkLedgersRootPath)")
    s.add_argument("--out", required=True)
    zk_options.add_arguments(s)
    r = sub.add_parser("run", help="run the audit")
    r.add_argument("--logs", action="append", default=[], metavar="[BOOKIE=]PATH",
                   help="a directory or URI of entry logs (bookie+https://HOST:PORT reads a live bookie's through "
                        "its admin API); repeat per bookie or give a fleet root")
    r.add_argument("--rest-bookie", action="append", default=[], metavar="[BOOKIE=]URL",
                   help="a bookie whose entry logs cannot be read (Apache BookKeeper's): its admin REST API "
                        "http(s)://HOST:PORT and the snapshot only")
    r.add_argument("--bookie-token-file", default=None,
                   help="the bookies' admin API bearer token (bookie+https:// and --rest-bookie; default "
                        "$BOOKIE_AUDIT_TOKEN_FILE); on a cluster, a path every executor has")
    r.add_argument("--bookie-ca-file", default=None,
                   help="CA bundle of the bookies' HTTPS certificates (default $BOOKIE_AUDIT_CA_FILE)")
    r.add_argument("--metadata", default=None, help="a snapshot directory from `bookie-audit snapshot`")
    r.add_argument("--zk", default=None,
                   help="instead of --metadata: take the snapshot from this ZooKeeper right before reading the logs")
    r.add_argument("--root", default="/ledgers", help="with --zk: the ledgers root (zkLedgersRootPath)")
    zk_options.add_arguments(r)
    r.add_argument("--publish", default=None, metavar="URL",
                   help="then store the output in the report store at URL (bookie-audit serve-reports), as --run-id")
    r.add_argument("--run-id", default=None, help="the run's name in the report store")
    r.add_argument("--publish-token-file", default=None,
                   help="bearer token of the report store (default: --bookie-token-file)")
    r.add_argument("--out", required=True)
    r.add_argument("--master", default=None, help="Spark master (default local[*], or $BOOKIE_AUDIT_MASTER)")
    r.add_argument("--mode", choices=("full", "metadata"), default="full",
                   help="full: ledgers maps + every record (replication audit); metadata: ledgers maps only")
    r.add_argument("--min-age-days", type=float, default=7.0, help="pinning audit: logs at least this old")
    r.add_argument("--minor", type=_floats, default=None, help="minor thresholds, e.g. 0.1,0.2,0.3")
    r.add_argument("--major", type=_floats, default=None, help="major thresholds, e.g. 0.5,0.8,0.9")
    r.add_argument("--split-mb", type=int, default=128, help="full scan: offset-range split size")
    r.add_argument("--max-snapshot-lag", type=float, default=600.0,
                   help="seconds a snapshot may precede the newest log before it is called stale")
    r.add_argument("--keep-records", action="store_true", help="also write records.parquet (large)")
    r.add_argument("--shuffle-partitions", type=int, default=None)
    rp = sub.add_parser("report", help="re-render report.html from an audit's tables")
    rp.add_argument("--out", required=True)
    sr = sub.add_parser("serve-reports", help="keep audit runs on a volume and serve them over HTTP")
    sr.add_argument("--dir", required=True, help="the volume's directory")
    sr.add_argument("--port", type=int, default=8000)
    sr.add_argument("--keep", type=int, default=10, help="complete runs kept (older ones deleted)")
    sr.add_argument("--token-file", default=None, help="bearer tokens allowed to store runs (one per line)")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "snapshot":
            from bookie_audit.snapshot import snapshot

            m = snapshot(args.zk, args.root, args.out, security=_zk_security(args))
            print(f"snapshot of {m.ledgers} ledgers under {m.ledgers_root} written to {args.out}"
                  + (f" ({len(m.vanished)} deleted while listing)" if m.vanished else ""))
            return 0
        if args.command == "report":
            from bookie_audit.report import write_report

            print(write_report(args.out))
            return 0
        if args.command == "serve-reports":
            return _serve_reports(args)
        return _run(args)
    except AuditInputError as exc:
        print(f"bookie-audit: error: {exc}", file=sys.stderr)
        return 2
    except MetadataError as exc:  # ZooKeeper unreachable, or refusing this identity: said, not a traceback
        print(f"bookie-audit {args.command}: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    if not args.logs and not args.rest_bookie:
        raise AuditInputError("no input: give --logs [BOOKIE=]PATH (entry logs) or --rest-bookie [BOOKIE=]URL")
    if (args.metadata is None) == (args.zk is None):
        raise AuditInputError("give the metadata as --metadata SNAPSHOT_DIR or --zk HOST:PORT (a fresh snapshot)")
    if args.publish and not args.run_id:
        raise AuditInputError("--publish needs --run-id (the run's name in the report store)")
    with tempfile.TemporaryDirectory(prefix="bookie-audit-snapshot-") as fresh:
        if args.zk is not None:
            # Not under --out: a snapshot holds the ledgers' passwords, which the published output must not.
            from bookie_audit.snapshot import snapshot

            args.metadata = fresh
            manifest = snapshot(args.zk, args.root, fresh, security=_zk_security(args))
            print(f"snapshot of {manifest.ledgers} ledgers under {manifest.ledgers_root}", flush=True)
        return _audit(args)


def _zk_security(args: argparse.Namespace) -> ZkSecurity:
    """The ``--zk-*`` options, checked, and one TLS handshake with ZooKeeper when they ask for TLS."""
    try:
        security = zk_options.security_from_args(args)
        zk_options.check_reachable(security, args.zk)
    except ZkSecurityError as exc:
        raise AuditInputError(str(exc)) from None
    return security


def _serve_reports(args: argparse.Namespace) -> int:
    from pathlib import Path

    from bookie.tokens import TokenFileError

    from bookie_audit.reports import serve

    if args.keep < 1:
        raise AuditInputError(f"--keep must be at least 1, not {args.keep}")
    try:
        server = serve(Path(args.dir), args.port, args.keep, Path(args.token_file) if args.token_file else None)
    except TokenFileError as exc:
        raise AuditInputError(str(exc)) from None
    print(f"serving audit runs of {args.dir} on port {args.port}", flush=True)
    try:
        server.serve_forever()
    finally:
        server.server_close()
    return 0


def _audit(args: argparse.Namespace) -> int:
    from bookie_audit import audits
    from bookie_audit.files import discover
    from bookie_audit.rest_bookies import RestBookie
    from bookie_audit.run import AuditOptions, Progress, print_summary, run_audit
    from bookie_audit.snapshot import read_manifest

    opts = AuditOptions(
        logs=[LogInput.parse(x) for x in args.logs], metadata=args.metadata, out=args.out, mode=args.mode,
        rest_bookies=[RestBookie.parse(x) for x in args.rest_bookie],
        bookie_token_file=args.bookie_token_file, bookie_ca_file=args.bookie_ca_file,
        min_age_days=args.min_age_days, minor=args.minor or audits.DEFAULT_MINOR,
        major=args.major or audits.DEFAULT_MAJOR, split_bytes=args.split_mb << 20,
        max_snapshot_lag_s=args.max_snapshot_lag, keep_records=args.keep_records)
    # Bad input is said before a JVM is started.
    read_manifest(opts.metadata)
    from bookie_audit import bookie_http

    bookie_http.configure(opts.bookie_token_file, opts.bookie_ca_file)
    if opts.logs:
        discover(opts.logs)
    from bookie_audit.spark import build_session

    spark = build_session(args.master, shuffle_partitions=args.shuffle_partitions)
    try:
        with Progress(spark) as progress:
            summary = run_audit(spark, opts, progress)
    finally:
        spark.stop()
    print_summary(summary, sys.stdout)
    print(f"tables and report.html in {opts.out}")
    if args.publish:
        from bookie_audit.bookie_http import read_token
        from bookie_audit.reports import publish

        token_file = args.publish_token_file or args.bookie_token_file or bookie_http.token_file()
        names = publish(opts.out, args.publish, args.run_id, read_token(token_file) if token_file else None)
        print(f"published {len(names)} files to {args.publish.rstrip('/')}/runs/{args.run_id}/", flush=True)
    return 0


if __name__ == "__main__":  # spark-submit pipeline/bookie_audit/cli.py run ...
    sys.exit(main())
