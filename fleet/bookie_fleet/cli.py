"""The ``bookie-fleet`` command: the playground and the local Kubernetes cluster.

    bookie-fleet playground [--short] [--tls] [--keep-running]   the operator's story on a local Kubernetes
    bookie-fleet playground --bookies-only [--bookies 3]   ZooKeeper + bookies on this machine, no Kubernetes
    bookie-fleet playground --first-look                   which topic keeps the disks full: our bookies and a
                                                           Pulsar broker on this machine, no Kubernetes
    bookie-fleet cluster up|down|status
    bookie-fleet cache [prune]                             the cache's parts and sizes; remove what is unused
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from bookie_fleet import fork_server


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["cluster"]:
        from localkube.cli import main as cluster_main

        return int(cluster_main(argv[1:]) or 0)
    parser = argparse.ArgumentParser(prog="bookie-fleet", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    play = sub.add_parser("playground", help="the operator's story on a local Kubernetes (or --bookies-only)")
    play.add_argument("--short", action="store_true", help="smaller disks and entries (the CI run)")
    play.add_argument("--bookies-only", action="store_true",
                      help="no Kubernetes: ZooKeeper + bookies on 127.0.0.x; write, read, delete ledgers")
    play.add_argument("--first-look", action="store_true",
                      help="no Kubernetes: ZooKeeper, three bookies and a Pulsar broker on this machine; two topics "
                           "expire and the bookies say which topic keeps the disks full (what scripts/playground "
                           "shows while the local Kubernetes binaries build)")
    play.add_argument("--bookies", type=int, default=3, help="with --bookies-only")
    play.add_argument("--ledgers", type=int, default=3, help="with --bookies-only")
    play.add_argument("--entries", type=int, default=100, help="with --bookies-only")
    play.add_argument("--tls", action="store_true",
                      help="the bookie port serves only TLS clients with a certificate of role broker (or bookie), "
                           "as examples/production.yaml; the Pulsar broker presents one")
    play.add_argument("--workdir", default=None, help="default: a fresh directory under the cache")
    play.add_argument("--keep-running", action="store_true", help="leave the fleet running until Ctrl-C")
    play.add_argument("--keep", action="store_true",
                      help="keep all of this run's files, and earlier runs' (default: earlier runs are removed, "
                           "this one is trimmed to its report and logs at the end)")
    sub.add_parser("cluster", help="local Kubernetes control plane: up|down|status")
    cache = sub.add_parser("cache", help="the size of each part of the cache ($BOOKIE_FLEET_CACHE); "
                                         "`prune` removes what is no longer used")
    cache.add_argument("action", nargs="?", choices=["prune"])
    args = parser.parse_args(argv)
    if args.command == "cache":
        from bookie_fleet import cache as cache_dir

        run = cache_dir.prune if args.action == "prune" else cache_dir.show
        return run(cache_dir.cache_root(), lambda line: print(line, flush=True))
    return playground(args)


def playground(args: argparse.Namespace) -> int:
    from pathlib import Path

    # The main job starts its bookies as fresh interpreters, as production does, even under the test suite (whose
    # playground runs are processes of their own, so this changes nothing else): a forked bookie's command line
    # is its fork server's, and the playground's tests look for what a run left behind by command line.
    os.environ.pop(fork_server.ENABLE_ENV, None)

    from bookie_fleet.cache import playground_run
    from bookie_fleet.playground import default_workdir, say

    workdir = Path(args.workdir) if args.workdir else default_workdir()
    args.workdir = str(workdir)
    with playground_run(workdir, args.keep, say):
        if args.bookies_only:
            from bookie_fleet.playground import run_playground

            return run_playground(args)
        if args.first_look:
            from bookie_fleet.first_look import run_first_look

            return run_first_look(workdir)
        from bookie_fleet.story import run_story

        return run_story(workdir, args.short, args.keep_running, args.tls)


if __name__ == "__main__":
    sys.exit(main())
