"""The TLS benchmark's harness (bench/tls_bench.py) runs end to end on a tiny workload: both implementations, both
clients, plaintext and START_TLS (numbers are not checked: no timings in tests)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support.bench_runs import run_bench

BENCH = Path(__file__).resolve().parents[2] / "bench" / "tls_bench.py"


@pytest.mark.timeout(1100)  # the quick run may take 900 s on a loaded machine, then stops its processes
def test_tls_bench_quick_run_measures_every_client_and_mode_on_both_implementations(tmp_path: Path) -> None:
    result = run_bench(BENCH, "--quick", "--workdir", str(tmp_path), timeout=900)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    points = json.loads(result.stdout.strip().splitlines()[-1])
    measured = {(p["impl"], p["client"], p["tls"]) for p in points if p["ops_per_s"] > 0}
    assert measured == {(impl, client, tls) for impl in ("java", "ours") for client in ("java", "python")
                        for tls in (False, True)}
