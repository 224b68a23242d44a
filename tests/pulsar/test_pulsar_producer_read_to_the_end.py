"""A producer whose process has ended is judged by all it wrote: on a loaded machine the exit can be seen before
the thread reading its output has read the last lines (``DONE`` among them), and a producer that had finished
was reported as one that exited while the test still waited for it."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path
from types import SimpleNamespace

from bookie_fleet.pulsar import Acked, Producer

_FINISHES = "print('ACK 0 key-0 5e88', flush=True); print('DONE', flush=True)"


def test_an_exit_seen_before_the_last_lines_are_read_is_not_a_failure(tmp_path: Path) -> None:
    log = tmp_path / "producer.log"
    log.write_text("")
    producer = Producer.__new__(Producer)  # its process, not a broker's: what is judged is the reading
    producer.topic, producer.acked, producer.failed = "public/default/t", {}, {}
    producer.done = threading.Event()
    producer._log, producer._broker = log, SimpleNamespace(log_path=log)  # type: ignore[assignment]
    producer.proc = subprocess.Popen([sys.executable, "-c", _FINISHES], stdout=subprocess.PIPE)
    producer.proc.wait()  # the exit is seen first...
    behind = threading.Event()

    def read_late() -> None:
        behind.wait()  # ...and the reader is behind, as on a loaded machine
        producer._read()

    producer._reader = threading.Thread(target=read_late, daemon=True)
    producer._reader.start()
    threading.Timer(0.5, behind.set).start()
    producer.wait_for(producer.done.is_set, 30, "the producer to finish")
    assert producer.acked == {0: Acked("key-0", "5e88")}
    producer.proc.stdout.close()  # type: ignore[union-attr]
