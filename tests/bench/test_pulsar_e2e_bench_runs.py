"""The Pulsar end-to-end benchmark (bench/pulsar_e2e_bench.py) runs end to end on one short point: Pulsar's load
tools publish through a broker on each implementation's bookie and the consumer gets every message (numbers are
not checked: no timings in tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.bench_runs import run_bench

# Pulsar's load tools are the bootstrap's pulsar-lts part, which scripts/test assembles beside the tests.
pytestmark = pytest.mark.bootstrap_part("pulsar-lts")

BENCH = Path(__file__).resolve().parents[2] / "bench" / "pulsar_e2e_bench.py"


@pytest.mark.timeout(1100)  # the quick run may take 900 s on a loaded machine, then stops its processes
def test_pulsar_e2e_bench_quick_run_publishes_and_consumes_through_a_broker_on_both_implementations(
        tmp_path: Path) -> None:
    result = run_bench(BENCH, "--quick", "--workdir", str(tmp_path), timeout=900)
    # A failed point says why in its own line, long before the tables at the end of the output.
    failures = "\n".join(line for line in result.stdout.splitlines() if " failed: " in line)
    assert result.returncode == 0, failures + "\n" + result.stdout[-3000:] + result.stderr[-3000:]
    points = json.loads(result.stdout.strip().splitlines()[-1])
    assert {p["impl"] for p in points} == {"java", "ours"}
    for p in points:
        assert p["sent"] > 0 and p["received"] == p["sent"], p
        for figure in ("publish_rate", "publish_p99_ms", "consume_rate", "e2e_p99_ms", "bookie_cpu_us_per_msg"):
            assert p[figure] > 0, (figure, p)
