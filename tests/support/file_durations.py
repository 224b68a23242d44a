"""How long each test file took, set-up and tear-down included, printed at the end of a run with
``--file-durations=N`` (the N slowest files; 0 for all). ``scripts/test`` runs its groups side by side and balances
them by these figures: pytest's own ``--durations`` names single tests, and a group is moved a file at a time."""

from __future__ import annotations

from collections import defaultdict

import pytest

_seconds_by_file: defaultdict[str, float] = defaultdict(float)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--file-durations", type=int, default=None, metavar="N",
                     help="print the N slowest test files, set-up and tear-down included (0: all)")


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    _seconds_by_file[report.nodeid.split("::", 1)[0]] += report.duration


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    wanted = config.getoption("--file-durations")
    if wanted is None or not _seconds_by_file:
        return
    ranked = sorted(_seconds_by_file.items(), key=lambda item: item[1], reverse=True)
    shown = ranked if wanted == 0 else ranked[:wanted]
    total = sum(_seconds_by_file.values())
    terminalreporter.write_sep("=", f"slowest {len(shown)} of {len(ranked)} test files ({total / 60:.1f} min in all)")
    for path, seconds in shown:
        terminalreporter.write_line(f"{seconds:8.1f} s  {path}")
