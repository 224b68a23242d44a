"""The failing-device toolkit (tests/support/faults.py: libfiu, and the preload failing one directory) refuses, with
the reason, what it cannot do rather than let a scenario run without its fault: a call it does not offer, a bookie
not started under libfiu (fiu-ctrl itself exits 0 then, printing its complaint), a bookie still running when it is
to be started with the fault, a directory that does not exist, a device neither failing nor stalling, a negative
count of calls to let through."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests.support.bookies import BookieFactory
from tests.support.faults import DeviceFault, FaultSetupError, fail_calls, start_under_libfiu


def test_what_cannot_be_failed_is_refused(bookie_factory: BookieFactory, tmp_path: Path) -> None:
    bookie = bookie_factory(1)[0]  # started plainly: no libfiu in it
    control = tmp_path / "fiu" / "ctl"
    with pytest.raises(ValueError, match="pwrite, fsync, fdatasync, not \\['write'\\]"):
        fail_calls(bookie, control, ["write"])
    with pytest.raises(FaultSetupError, match="unknown pid or named pipe"):
        fail_calls(bookie, control, ["fdatasync"])
    with pytest.raises(FaultSetupError, match="must be stopped"):
        start_under_libfiu(bookie, control)


def test_what_a_failing_directory_cannot_do_is_refused(bookie_factory: BookieFactory, tmp_path: Path) -> None:
    bookie = bookie_factory(1)[0]
    with pytest.raises(ValueError, match="read, pread, write, pwrite, writev, fsync, fdatasync, not \\['mmap'\\]"):
        DeviceFault(bookie, bookie.ledger_dir, tmp_path, ["mmap"])
    with pytest.raises(ValueError, match="fail, stall or slow down \\(fail, stall, slow\\), not 'melt'"):
        DeviceFault(bookie, bookie.ledger_dir, tmp_path, ["fdatasync"], mode="melt")
    with pytest.raises(ValueError, match=r"needs its delay per call .*mode 'slow', delay_ms None"):
        DeviceFault(bookie, bookie.ledger_dir, tmp_path, ["fdatasync"], mode="slow")
    with pytest.raises(ValueError, match="and only a slow one: mode 'stall', delay_ms 100"):
        DeviceFault(bookie, bookie.ledger_dir, tmp_path, ["fdatasync"], mode="stall", delay_ms=100)
    with pytest.raises(ValueError, match=re.escape(f"existing directory, not {tmp_path / 'absent'}")):
        DeviceFault(bookie, tmp_path / "absent", tmp_path, ["pread"])
    fault = DeviceFault(bookie, bookie.ledger_dir, tmp_path, ["pread"])
    with pytest.raises(FaultSetupError, match="must be stopped"):
        fault.start()
    with pytest.raises(ValueError, match="cannot be negative: -1"):
        fault.fail(after=-1)
    # The preload itself refuses a mode it does not know (a process started by hand with it): it stops the process
    # at its start, saying why, rather than let it run without the fault.
    refused = subprocess.run(["env", f"LD_PRELOAD={fault.library}", "EIO_MODE=melt", "true"], capture_output=True,
                             text=True, timeout=30)
    assert refused.returncode == 2, refused
    assert "eio_under: EIO_MODE must be fail, stall or slow, not melt" in refused.stderr
    undelayed = subprocess.run(["env", f"LD_PRELOAD={fault.library}", "EIO_MODE=slow", "true"], capture_output=True,
                               text=True, timeout=30)
    assert undelayed.returncode == 2, undelayed
    assert "EIO_MODE slow needs EIO_DELAY_MS, a positive number of milliseconds, not none" in undelayed.stderr
