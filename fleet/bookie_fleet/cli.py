"""The ``bookie-fleet`` command: the local fleet playground and the local Kubernetes cluster.

    bookie-fleet playground [--bookies 3] [--keep-running]
    bookie-fleet cluster up|down|status
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["cluster"]:
        from localkube.cli import main as cluster_main

        return int(cluster_main(argv[1:]) or 0)
    parser = argparse.ArgumentParser(prog="bookie-fleet", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    play = sub.add_parser("playground", help="local fleet: ZooKeeper + bookies; write, read, delete ledgers")
    play.add_argument("--bookies", type=int, default=3)
    play.add_argument("--ledgers", type=int, default=3)
    play.add_argument("--entries", type=int, default=100)
    play.add_argument("--workdir", default=None, help="default: a fresh directory under the cache")
    play.add_argument("--keep-running", action="store_true", help="leave the fleet running until Ctrl-C")
    sub.add_parser("cluster", help="local Kubernetes control plane: up|down|status")
    args = parser.parse_args(argv)
    if args.command == "playground":
        from bookie_fleet.playground import run_playground

        return run_playground(args)
    return 2


if __name__ == "__main__":
    sys.exit(main())
