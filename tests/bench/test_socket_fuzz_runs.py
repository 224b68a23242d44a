"""The socket fuzz harness runs end to end on a tiny workload against a real bookie process: the bookie is
alive afterwards, serves a real client and has lost none of the entries written before the fuzzing."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "socket_fuzz.py"


def test_socket_fuzz_quick_run_leaves_the_bookie_serving(tmp_path: Path) -> None:
    result = run_bench(BENCH, "--quick", "--workdir", str(tmp_path), timeout=600)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    outcome = json.loads(result.stdout.strip().splitlines()[-1])
    assert outcome["alive"] and outcome["served_and_nothing_lost"]
    assert outcome["frames"] >= 5_000 and outcome["connections"] > 1
    assert outcome["bookie_counters"]["limit_invalidIds_hits"] > 0, "generated frames reached the processor"
