"""The RocksDB indexes never hold the interpreter while their device stalls: their binding keeps the GIL for the
whole of every call, so an index write or sync that waited for a stalled ledger device froze the whole bookie (its
event loop, its journal's acknowledgements, its ZooKeeper heartbeats: a stall longer than the session timeout
expired the bookie's session, and adds timed out). Writes go to the memtable only and a sync waits for RocksDB's
own flush threads with the GIL free, so another thread of the process goes on ticking throughout a stall.

The device stalls through the preload of tests/support/faults.py (``EIO_MODE=stall`` on the index's directory),
lifted by another process after ``STALL_S``. The process under test counts the ticks of another thread (one every
``TICK_S``) made while its index writes and syncs wait for the stalled device: with the interpreter held throughout
the stall there are none (0 with the write-ahead log back on), or one or two taken before the stalled call began;
free, about 130 here, and at least ``TICKS_WHILE_STALLED`` however loaded the machine: a count, not a time."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.support.faults import _eio_under_library

STALL_S = 1.5
TICK_S = 0.01
TICKS_WHILE_STALLED = 10
ENTRIES = 2000

SCRIPT = """
import json, subprocess, sys, threading, time
from pathlib import Path
from bookie.storage.index import LedgerData, LedgerIndex, LocationIndex

current, switch, stall_s, entries = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3]), int(sys.argv[4])
tick_s = float(sys.argv[5])
locations, ledgers = LocationIndex(current), LedgerIndex(current)
done, indexing = threading.Event(), threading.Event()
stalled_ticks = 0

def tick():
    global stalled_ticks
    while not done.is_set():
        time.sleep(tick_s)
        if indexing.is_set() and switch.exists():  # an index call under way while the device is stalled
            stalled_ticks += 1

ticker = threading.Thread(target=tick)
ticker.start()
switch.write_text("0")
subprocess.Popen(["sh", "-c", f"sleep {stall_s}; rm -f {switch}"])
started = time.monotonic()
indexing.set()
locations.put_packed(b"".join(i.to_bytes(8, "big") * 2 + (100 + i).to_bytes(8, "big") for i in range(entries)))
ledgers.put(7, LedgerData(master_key=b"key", fenced=True))
locations.sync()
ledgers.sync()
indexing.clear()
took = time.monotonic() - started
done.set()
ticker.join()
locations.close()
ledgers.close()
print(json.dumps({"took_s": took, "stalled_ticks": stalled_ticks}))
"""


def _run(current: Path, switch: Path, library: Path) -> tuple[dict[str, float], str]:
    # After any preload already there: the sanitizers' job preloads their runtime, which must come first.
    preload = f"{os.environ.get('LD_PRELOAD', '')} {library}".strip()
    env = {**os.environ, "LD_PRELOAD": preload, "EIO_UNDER": str(current.resolve()), "EIO_SWITCH": str(switch),
           "EIO_CALLS": "write,pwrite,writev,fsync,fdatasync", "EIO_MODE": "stall"}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(current), str(switch), str(STALL_S), str(ENTRIES),
                           str(TICK_S)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1]), proc.stderr


def test_a_stalled_device_delays_the_index_sync_but_never_the_rest_of_the_process(tmp_path: Path) -> None:
    current = tmp_path / "current"
    current.mkdir()
    measured, log = _run(current, tmp_path / "switch", _eio_under_library(tmp_path))
    assert ": stalled" in log and "resumed after" in log, f"the stall never reached the index:\n{log[-2000:]}"
    assert measured["took_s"] >= STALL_S * 0.9, measured  # the sync waited for the device, as it must
    assert measured["stalled_ticks"] >= TICKS_WHILE_STALLED, measured

    # What the sync made durable is there when the indexes open again, without the preload.
    reopen = ("import sys; from pathlib import Path; from bookie.storage.index import LedgerIndex, LocationIndex; "
              "c = Path(sys.argv[1]); l = LocationIndex(c); g = LedgerIndex(c); "
              "print(l.get(5, 5), l.last_entry(5), g.load_all()[7].fenced); l.close(); g.close()")
    found = subprocess.run([sys.executable, "-c", reopen, str(current)], capture_output=True, text=True, timeout=60)
    assert found.stdout.split() == ["105", "5", "True"], found.stderr[-2000:]
