"""Fixtures shared by every test folder: real ZooKeeper and real bookie processes (tests/support/)."""

from __future__ import annotations

import sys
from pathlib import Path

# `pytest` (unlike `python -m pytest`) does not put the repository on sys.path; tests.support lives there.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

pytest_plugins = ["tests.support.zookeeper", "tests.support.bookies", "tests.support.kube",
                  "tests.support.kube_failures", "tests.support.hang_report",
                  "tests.support.zookeeper_tls", "tests.support.seeds", "tests.support.spark_jvm",
                  "tests.support.leftovers", "tests.support.file_durations",
                  "tests.support.jvm_archives", "tests.support.fork_server", "tests.support.exit_status",
                  "tests.support.bootstrap_parts"]
