"""What every launcher here shares: a child process in its own process group, writing to a log file.

``LocalBookie`` (local_bookies.py), ``JavaBookie`` (java_bookies.py) and ``ZooKeeperServer`` (zookeeper.py)
each run one such process. Its own process group, so that a stop or a kill reaches everything it started;
its own log file, whose last lines go into every "did not start" error.
``BookieProcess`` is the lifecycle both kinds of bookie share: write the configuration, start, wait until
ready, stop gracefully, kill as a crash would.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any, ClassVar, Self

from localkube.procs import ChildProcess, pick_port, signal_group, stop_process_group

from bookie_fleet import fork_server


def free_port(host: str = "127.0.0.1", preferred: int | None = None) -> int:
    """A port free on ``host``: ``preferred`` when it is, else one picked at random below the kernel's ephemeral
    range (``localkube.procs.pick_port``, which the local Kubernetes picks its own ports with)."""
    return pick_port(preferred or 0, host)


def accepts(host: str, port: int) -> bool:
    """Whether something listens on ``host:port`` (a connection succeeds within a second)."""
    with contextlib.suppress(OSError), socket.create_connection((host, port), timeout=1):
        return True
    return False


def answers_requests(host: str, port: int, within: float = 2.0) -> bool:
    """Whether the bookie on ``host:port`` answers a request on a new connection (a v3 GET_BOOKIE_INFO; any answer,
    an error included). Apache BookKeeper's bookie listens from before it serves: a connection it accepts then is
    closed at once, whatever comes after (its RejectRequestHandler), so a port that accepts does not say the next
    connection will be served, and a client that connected in that window has its requests reset."""
    from bookie.protocol import messages as m

    try:
        with socket.create_connection((host, port), timeout=within) as conn:
            call_blocking(conn, m.GetBookieInfoRequest(m.Wire.v3(1)))
    except OSError:  # refused, closed, reset or silent
        return False
    return True


def call_blocking(conn: socket.socket, request: Any) -> bytes:
    """Send one request on a blocking socket and return the frame the bookie answers (its body, undecoded)."""
    from bookie.protocol import client_codec

    conn.sendall(client_codec.encode_request(request))
    return _received(conn, int.from_bytes(_received(conn, 4), "big"))


def _received(conn: socket.socket, size: int) -> bytes:
    data = b""
    while len(data) < size:
        chunk = conn.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed by the bookie")
        data += chunk
    return data


def write_properties(path: Path, values: Mapping[str, Any]) -> None:
    """``key=value`` lines, as Java's ``Properties`` read them: booleans as ``true``/``false``."""
    lines = [f"{key}={str(value).lower() if isinstance(value, bool) else value}" for key, value in values.items()]
    path.write_text("".join(f"{line}\n" for line in lines))


_CONSOLE_LOG4J2 = """\
status = error
appender.console.type = Console
appender.console.name = console
appender.console.target = {target}
appender.console.layout.type = PatternLayout
appender.console.layout.pattern = %d{ISO8601} %-5p [%t] %c{1} - %m%n
rootLogger.level = {level}
rootLogger.appenderRef.console.ref = console
"""


def console_log4j2(level: str, target: str = "SYSTEM_OUT") -> str:
    """A log4j2 configuration that writes everything at ``level`` and above to the console (the process's log);
    ``target`` SYSTEM_ERR for a tool whose standard output is its answer."""
    return _CONSOLE_LOG4J2.replace("{level}", level).replace("{target}", target)


def java_thread_dump(pid: int, timeout: float = 30) -> str:
    """Every thread's stack of a running JVM (``jcmd <pid> Thread.print``), or why there is none."""
    try:
        done = subprocess.run(["jcmd", str(pid), "Thread.print"], capture_output=True, timeout=timeout, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"(no thread dump: {exc})"
    out = done.stdout.decode(errors="replace")
    if done.returncode != 0:
        return f"(no thread dump: jcmd exited {done.returncode}: {(out + done.stderr.decode()).strip()[:300]})"
    return out


# Where a JVM thread waits for work: a thread on one of these frames is idle, not stuck.
_IDLE_FRAMES = ("jdk.internal.misc.Unsafe.park", "io.netty.channel.epoll.Native.epollWait",
                "sun.nio.ch.EPoll.wait", "java.lang.Object.wait", "java.lang.Thread.sleep")


def busy_threads(dump: str, prefixes: tuple[str, ...], frames: int = 3) -> list[str]:
    """The threads of a ``java_thread_dump`` named with one of ``prefixes`` that are not waiting for work: a
    line each, their state and top ``frames``; a line saying how many idle ones were left out."""
    busy, idle = [], 0
    for block in dump.split("\n\n"):
        head, _, rest = block.strip().partition("\n")
        if not head.startswith('"'):
            continue
        name = head[1:].partition('"')[0]
        if not name.startswith(prefixes):
            continue
        stack = [line.strip().removeprefix("at ") for line in rest.splitlines() if line.strip().startswith("at ")]
        if not stack or stack[0].startswith(_IDLE_FRAMES):
            idle += 1
            continue
        state = rest.splitlines()[0].strip().removeprefix("java.lang.Thread.State: ")
        busy.append(f"  {name} ({state}): {' < '.join(stack[:frames])}")
    return [*busy, f"  ({idle} more of them idle, waiting for work)"]


def java_tmpdir(directory: Path) -> str:
    """The JVM option that keeps a Java process's temporary files in ``directory`` (created here). Its jars unpack
    native libraries there at each start (RocksDB's, 13 MB, circe-checksum's) and delete them only on a clean exit,
    so a JVM that is killed, as tests and benchmarks do, would leave them in /tmp for good."""
    directory.mkdir(parents=True, exist_ok=True)
    return f"-Djava.io.tmpdir={directory}"


_tools_tmpdir: Path | None = None


def java_tools_tmpdir() -> str:
    """The JVM option for the short-lived Java tools and clients this process runs (BookKeeper's benchmarks, the
    tests' client harness): their temporary files in one directory of this process, removed when it exits, so a
    tool killed on its time limit leaves nothing in /tmp for good."""
    global _tools_tmpdir
    if _tools_tmpdir is None:
        _tools_tmpdir = Path(tempfile.mkdtemp(prefix="bookie-fleet-java-tools-"))
        atexit.register(shutil.rmtree, _tools_tmpdir, True)
    return java_tmpdir(_tools_tmpdir)


def spawn(cmd: list[str], log_path: Path) -> subprocess.Popen[bytes]:
    """Start ``cmd`` as the leader of a new process group, its output appended to ``log_path``."""
    with open(log_path, "ab") as log:
        return subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                start_new_session=True)


def stop_on_sigterm() -> None:
    """Make SIGTERM (a ``timeout``, a test's stop, ``kill``) leave through the ``finally`` blocks that stop the
    bookies and JVMs a harness started, instead of killing the interpreter on the spot. Further SIGTERMs are
    ignored (``timeout`` forwards its own, ``pkill`` matches twice): they would abort that cleanup half way."""
    def handler(*_: object) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        sys.exit(143)

    signal.signal(signal.SIGTERM, handler)


def terminate(proc: ChildProcess, timeout: float) -> None:
    """SIGTERM the group and wait; SIGKILL what is left of it after ``timeout`` (``localkube.procs``)."""
    stop_process_group(proc, timeout)


def log_tail(path: Path, lines: int) -> str:
    """The last ``lines`` lines of a log, for error messages."""
    with contextlib.suppress(OSError):
        return "\n".join(path.read_text(errors="replace").splitlines()[-lines:])
    return "(no log)"


class BookieProcess:
    """One bookie process (``LocalBookie`` or ``JavaBookie``, both dataclasses) and its data directory.

    Subclasses say what to run (``conf_values``, ``command``) and when it is ready (``wait_ready``, through
    ``_wait_until``); the rest is here. ``stop()``/``kill()`` keep the data directory, so ``start()`` brings
    the same bookie back.
    """

    kind: ClassVar[str] = "bookie"  # how errors name it
    conf_name: ClassVar[str]  # the configuration file, in the data directory
    ready_timeout: ClassVar[float]  # the default wait of start() and wait_ready()

    data_dir: Path
    proc: ChildProcess | None

    @property
    def bookie_id(self) -> str:
        raise NotImplementedError

    def conf_values(self) -> dict[str, Any]:
        raise NotImplementedError

    def command(self) -> list[str]:
        raise NotImplementedError

    def wait_ready(self, timeout: float | None = None) -> None:
        raise NotImplementedError

    def auth_headers(self) -> dict[str, str]:
        """What a caller of the admin API's mutating endpoints sends ({}: none; Apache BookKeeper's has no
        authentication)."""
        return {}

    @property
    def conf_path(self) -> Path:
        return self.data_dir / self.conf_name

    @property
    def log_path(self) -> Path:
        return self.data_dir / "bookie.log"

    @property
    def ledger_dir(self) -> Path:
        return self.data_dir / "ledgers"

    @property
    def journal_dir(self) -> Path:
        return self.data_dir / "journal"

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def write_conf(self) -> None:
        self.data_dir.mkdir(parents=True, exist_ok=True)
        write_properties(self.conf_path, self.conf_values())

    def start(self, wait: bool = True, timeout: float | None = None) -> Self:
        if self.running:
            return self
        self.write_conf()
        command = self.command()
        self.proc = fork_server.start(command, self.log_path) or spawn(command, self.log_path)
        if wait:
            self.wait_ready(timeout)
        return self

    def _wait_until(self, ready: Callable[[], bool], timeout: float | None, poll: float) -> None:
        """Poll ``ready`` until it holds; fail at once, with the log, if the process exits meanwhile."""
        timeout = self.ready_timeout if timeout is None else timeout
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"{self.kind} {self.bookie_id} exited with {self.proc.returncode}; "
                                   f"log:\n{self.tail_log()}")
            if ready():
                return
            time.sleep(poll)
        raise TimeoutError(f"{self.kind} {self.bookie_id} not ready after {timeout}s; log:\n{self.tail_log()}")

    def tail_log(self, lines: int = 40) -> str:
        return log_tail(self.log_path, lines)

    def stop(self, timeout: float = 20.0) -> None:
        """Graceful stop (SIGTERM: the bookie closes its journal and ledgers), SIGKILL after ``timeout``."""
        if self.proc is None:
            return
        terminate(self.proc, timeout)  # and anything it left in its group
        self.proc = None

    def kill(self) -> None:
        """SIGKILL the whole process group, as a crash would."""
        if self.proc is None:
            return
        signal_group(self.proc, signal.SIGKILL)
        self.proc.wait()
        self.proc = None

    def restart(self, timeout: float | None = None) -> None:
        self.stop()
        self.start(wait=True, timeout=timeout)


def metadata_service_uri(zk_connect: str, ledgers_root: str) -> str:
    """BookKeeper's ``metadataServiceUri`` for a ZooKeeper connect string (its commas written as semicolons)."""
    return f"zk+hierarchical://{zk_connect.replace(',', ';')}{ledgers_root}"


class TokenProtected(BookieProcess):
    """A process of ours whose admin API takes a bearer token (a bookie, an inspector): ``admin_token`` (None: none)
    is written beside its configuration, readable by its owner only."""

    admin_token: str | None

    @property
    def admin_token_file(self) -> Path:
        return self.data_dir / "admin-token"

    def auth_headers(self) -> dict[str, str]:
        """The admin API credential of this process ({} when it has none)."""
        return {"Authorization": f"Bearer {self.admin_token}"} if self.admin_token else {}

    def write_conf(self) -> None:
        super().write_conf()
        if self.admin_token is not None:
            fd = os.open(self.admin_token_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w") as f:
                f.write(self.admin_token + "\n")


def start_all(bookies: Iterable[BookieProcess], timeout: float | None = None) -> None:
    """Start every bookie, then wait for all: they boot in parallel."""
    bookies = list(bookies)
    for b in bookies:
        b.start(wait=False)
    for b in bookies:
        b.wait_ready(timeout)


def stop_all(bookies: Iterable[BookieProcess]) -> None:
    for b in bookies:
        b.stop()
