"""The failing-device toolkit (tests/support/faults.py, libfiu) refuses, with the reason, what it cannot do rather
than let a scenario run without its fault: a call it does not offer, a bookie not started under libfiu (fiu-ctrl
itself exits 0 then, printing its complaint), a bookie still running when it is to be started under libfiu."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support.bookies import BookieFactory
from tests.support.faults import FaultSetupError, fail_calls, start_under_libfiu


def test_what_cannot_be_failed_is_refused(bookie_factory: BookieFactory, tmp_path: Path) -> None:
    bookie = bookie_factory(1)[0]  # started plainly: no libfiu in it
    control = tmp_path / "fiu" / "ctl"
    with pytest.raises(ValueError, match="pwrite, fsync, fdatasync, not \\['write'\\]"):
        fail_calls(bookie, control, ["write"])
    with pytest.raises(FaultSetupError, match="unknown pid or named pipe"):
        fail_calls(bookie, control, ["fdatasync"])
    with pytest.raises(FaultSetupError, match="must be stopped"):
        start_under_libfiu(bookie, control)
