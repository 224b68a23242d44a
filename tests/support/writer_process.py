"""A ledger writer in a process of its own, so that a fault can cut that process alone (off ZooKeeper, say) while
the test that drives it watches from outside: our client (this module, run as ``python -m
tests.support.writer_process <zk connect> <ledgers root> <session timeout ms>``) or Apache BookKeeper's
(tests/java/ClientHarness.java's ``stream`` mode, the same commands and answers). ``WriterProcess`` starts and
drives either.

Commands come one per line on stdin, answers go one JSON object per line to stdout:
  ``create <ensemble> <write quorum> <ack quorum>``  -> ``{"ledger": id}``
  ``append <count> <seed>``  -> one ``{"append": {...}}`` per entry as it completes (entry id or error, payload in
                                hex), then ``{"done": "append"}``; the entries are in flight together
  ``close``                  -> ``{"close": {"ok", "last", "length", "error"}}``
  ``ensembles``              -> ``{"ensembles": {"<first entry>": [bookie ids]}}``
Commands run one after another, except that ``append`` answers while the next command is read: a test can heal a
fault while appends are pending.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bookie.client import BookKeeper, ClientConfig, LedgerHandle

from tests.support.history import History, Op
from tests.support.java_client import java_command

REPO = Path(__file__).resolve().parents[2]


# ---------------------------------------------------------------------------------------------- the process itself

def _say(message: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


async def _append_one(handle: LedgerHandle, data: bytes) -> None:
    pushed = handle.last_add_pushed
    future = handle.append(data)
    entry = handle.last_add_pushed if handle.last_add_pushed > pushed else None  # refused before a push
    try:
        acked = await future
    except Exception as exc:  # every failure is the answer, whatever its class
        _say({"append": {"ok": False, "entry": entry, "data": data.hex(), "error": f"{type(exc).__name__}: {exc}"}})
    else:
        _say({"append": {"ok": True, "entry": acked, "data": data.hex()}})


async def _append(handle: LedgerHandle, count: int, seed: int) -> None:
    payloads = random.Random(seed)
    batch = [f"L{handle.ledger_id} ".encode() + payloads.randbytes(payloads.randint(100, 2000)) for _ in range(count)]
    await asyncio.gather(*(_append_one(handle, data) for data in batch))
    _say({"done": "append"})


async def _serve(config: ClientConfig) -> None:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    appending: set[asyncio.Task[None]] = set()
    handle: LedgerHandle | None = None
    async with BookKeeper(config) as bk:
        while line := (await reader.readline()).decode().split():
            command, args = line[0], [int(word) for word in line[1:]]
            if command == "create":
                handle = await bk.create_ledger(*args)
                _say({"ledger": handle.ledger_id})
            elif command == "append" and handle is not None:
                task = asyncio.create_task(_append(handle, *args))
                appending.add(task)
                task.add_done_callback(appending.discard)
            elif command == "close" and handle is not None:
                await asyncio.gather(*appending)
                try:
                    await handle.close()
                except Exception as exc:
                    _say({"close": {"ok": False, "error": f"{type(exc).__name__}: {exc}"}})
                else:
                    metadata = handle.metadata
                    _say({"close": {"ok": True, "last": metadata.last_entry_id, "length": metadata.length}})
            elif command == "ensembles" and handle is not None:
                _say({"ensembles": {str(first): list(ensemble)
                                    for first, ensemble in handle.metadata.ensembles.items()}})
            else:
                _say({"error": f"unknown command or no ledger yet: {' '.join(line)}"})
        await asyncio.gather(*appending)


def main() -> None:
    zk_connect, ledgers_root, session_timeout_ms = sys.argv[1], sys.argv[2], int(sys.argv[3])
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    asyncio.run(_serve(ClientConfig(zk_servers=zk_connect, ledgers_root=ledgers_root,
                                    zk_session_timeout_ms=session_timeout_ms, add_timeout_s=5.0,
                                    read_timeout_s=5.0)))


# ---------------------------------------------------------------------------------------------- the test's side

@dataclass
class Append:
    ok: bool
    data: bytes
    entry: int | None = None
    error: str = ""


class WriterProcess:
    """The writer started in its own session (its pid leads its process group, which a fault can cut), driven
    from an event loop; ``client`` is ``"ours"`` or ``"java"``, ``java_properties`` the Java client's configuration
    keys. ``async with WriterProcess(...) as writer: ...``."""

    def __init__(self, zk_connect: str, ledgers_root: str, log_path: Path, session_timeout_ms: int = 4000,
                 client: str = "ours", java_properties: dict[str, str] | None = None) -> None:
        if client == "ours":
            self.argv = [sys.executable, "-m", "tests.support.writer_process", zk_connect, ledgers_root,
                         str(session_timeout_ms)]
        elif client == "java":
            self.argv = java_command("ClientHarness", "stream", zk_connect, ledgers_root, "v3",
                                     properties=java_properties,
                                     harness_options=(f"-Dharness.zkTimeoutMs={session_timeout_ms}",))
        else:
            raise ValueError(f"unknown client {client!r}: ours or java")
        self.client = client
        self.log_path = log_path
        self.stdout_log: deque[str] = deque(maxlen=50_000)  # Apache BookKeeper's client logs to stdout, between answers
        self.proc: asyncio.subprocess.Process | None = None

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    async def __aenter__(self) -> WriterProcess:
        with self.log_path.open("ab") as log:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv, cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log,
                start_new_session=True, env={**os.environ, "PYTHONPATH": str(REPO)})
        return self

    async def __aexit__(self, *exc: object) -> None:
        proc = self.proc
        if proc is None or proc.returncode is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()

    async def send(self, *words: object) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        self.proc.stdin.write((" ".join(map(str, words)) + "\n").encode())
        await self.proc.stdin.drain()

    async def answer(self, within: float) -> dict[str, Any]:
        """The next line the writer prints, parsed; an error naming its log's end if it prints none in time."""
        assert self.proc is not None and self.proc.stdout is not None
        deadline = asyncio.get_running_loop().time() + within
        line = b""
        while not line.startswith(b"{"):
            if line:  # a log line of Apache BookKeeper's client
                self.stdout_log.append(line.decode(errors="replace").rstrip())
            try:
                line = await asyncio.wait_for(self.proc.stdout.readline(),
                                              max(deadline - asyncio.get_running_loop().time(), 0.0))
            except TimeoutError:
                raise AssertionError(f"the writer answered nothing in {within} s; its log ends:\n"
                                     f"{self.log_tail()}") from None
            if not line:
                raise AssertionError(f"the writer exited ({await self.proc.wait()}); its log ends:\n"
                                     f"{self.log_tail()}")
        answer: dict[str, Any] = json.loads(line)
        if "error" in answer:
            raise AssertionError(f"the writer refused a command: {answer['error']}")
        return answer

    def log(self) -> str:
        """What the writer logged: its log file, then the log lines it printed between its answers."""
        return "\n".join([*self.log_path.read_text(errors="replace").splitlines(), *self.stdout_log])

    def log_tail(self, lines: int = 30) -> str:
        return "\n".join(self.log().splitlines()[-lines:])

    @staticmethod
    def parse_append(answer: dict[str, Any]) -> Append:
        body = answer["append"]
        return Append(ok=body["ok"], data=bytes.fromhex(body["data"]), entry=body.get("entry"),
                      error=body.get("error", ""))

    async def collect(self, history: History, ledger: int, start: int, within: float) -> list[Append]:
        """The answers to one ``append`` command, each recorded in ``history`` as the writer's (invoked at
        ``start``, when the command was sent), within ``within`` s for them all."""
        deadline = time.monotonic() + within
        appends = []
        while "done" not in (answer := await self.answer(max(deadline - time.monotonic(), 0.1))):
            append = self.parse_append(answer)
            history.add(Op("append", "writer", ledger, start, history.clock(), append.ok, entry=append.entry,
                           data=append.data, error=append.error))
            appends.append(append)
        return appends


if __name__ == "__main__":
    main()
