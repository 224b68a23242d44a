"""A test that is about to hit its timeout prints where each of its asyncio tasks is waiting.

pytest-timeout dumps the stacks of threads only; an async test that waits forever shows just an idle event loop
there. Shortly before the timeout this plugin asks every running event loop for its tasks' stacks, so that the
failure report names the await that never finished.
"""

from __future__ import annotations

import asyncio
import gc
import io
import os
import threading
from collections.abc import Iterator

import pytest

MARGIN_S = 15.0


def _timeout_of(item: pytest.Item) -> float:
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    return float(item.config.getini("timeout") or 0)


def _print_tasks(loop: asyncio.AbstractEventLoop) -> None:
    out = io.StringIO()
    tasks = asyncio.all_tasks(loop)
    out.write(f"\n==== {len(tasks)} asyncio tasks shortly before the test's timeout ====\n")
    for task in tasks:
        task.print_stack(limit=12, file=out)
    os.write(2, out.getvalue().encode())  # fd 2: pytest's capture shows it with the failure


def _report_running_loops() -> None:
    for obj in gc.get_objects():
        if isinstance(obj, asyncio.AbstractEventLoop) and obj.is_running():
            obj.call_soon_threadsafe(_print_tasks, obj)


@pytest.fixture(autouse=True)
def report_asyncio_tasks_before_timeout(request: pytest.FixtureRequest) -> Iterator[None]:
    timeout = _timeout_of(request.node)
    if timeout <= MARGIN_S * 2:
        yield
        return
    timer = threading.Timer(timeout - MARGIN_S, _report_running_loops)
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
