"""A small progress bar for the command lines (``bookie-shell load``, ``bookie-stream clean``).

On a terminal it redraws one line with ``\\r``; otherwise (pipes, CI logs) it prints a plain line at every
tenth of the way, so logs stay short. It writes to stderr: stdout is for results.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import TextIO


class ProgressBar:
    def __init__(self, label: str, total: int, *, unit: str = "", stream: TextIO | None = None,
                 width: int = 30) -> None:
        self.label = label
        self.total = max(total, 0)
        self.unit = unit
        self.stream = stream if stream is not None else sys.stderr
        self.width = width
        self.done = 0
        self.started = time.monotonic()
        self._tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._last_tenth = -1

    def __enter__(self) -> ProgressBar:
        self._draw()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.finish()

    def advance(self, n: int = 1) -> None:
        self.done += n
        self._draw()

    def set(self, done: int, total: int | None = None) -> None:
        if total is not None:
            self.total = total
        self.done = done
        self._draw()

    def line(self) -> str:
        total = self.total or 1
        fraction = min(self.done / total, 1.0)
        filled = int(fraction * self.width)
        elapsed = max(time.monotonic() - self.started, 1e-9)
        rate = self.done / elapsed
        unit = f" {self.unit}" if self.unit else ""
        return (f"{self.label} [{'#' * filled}{'.' * (self.width - filled)}] {self.done}/{self.total}{unit} "
                f"{fraction * 100:5.1f}% {rate:,.0f}{unit}/s")

    def _draw(self) -> None:
        if self._tty:
            self.stream.write("\r" + self.line())
            self.stream.flush()
            return
        tenth = int(10 * self.done / (self.total or 1))
        if tenth != self._last_tenth:
            self._last_tenth = tenth
            self.stream.write(self.line() + "\n")
            self.stream.flush()

    def finish(self) -> None:
        if self._tty:
            self.stream.write("\r" + self.line() + "\n")
            self.stream.flush()
