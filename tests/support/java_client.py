"""Runs tests/java/ClientHarness.java (Apache BookKeeper's Java client) from async tests, without blocking, on
either Apache BookKeeper version of the compatibility matrix (``VERSIONS``); ``java_command`` is the one command
line of a Java client JVM in the tests."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from bookie_fleet.jvm_archives import archive_options
from bookie_fleet.processes import java_tools_tmpdir

from tests.support.java_bookies import BookieCluster

# The test JVM's options (C1 alone, the serial collector), its log at WARN: the harness's answers share stdout.
JVM = ("-Xmx192m", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
       "-Dlog4j2.level=warn")


@dataclass(frozen=True)
class BookKeeperVersion:
    """An Apache BookKeeper version the bootstrap assembled: its jars and the harness compiled against them,
    named by two environment variables (the suite's pinned version, or the matrix's other one)."""

    lib_env: str
    harness_env: str

    def _dir(self, name: str) -> Path:
        value = os.environ.get(name, "")
        if not value or not os.path.isdir(value):
            pytest.fail(f"${name} is not set: run ./scripts/bootstrap and source its env file")
        return Path(value)

    @property
    def lib(self) -> Path:
        return self._dir(self.lib_env)

    @property
    def harness(self) -> Path:
        return self._dir(self.harness_env)

    @property
    def version(self) -> str:
        """From the bookkeeper-server jar's name."""
        (jar,) = self.lib.glob("bookkeeper-server-[0-9]*.jar")
        return jar.name.removeprefix("bookkeeper-server-").removesuffix(".jar")


# hack/maven/pom.xml's version, which every test runs; and the matrix's other (scripts/bootstrap.d/bk-compat.sh),
# which the compatibility tests run beside it.
PINNED = BookKeeperVersion("BOOKIE_FLEET_BK_LIB", "BOOKIE_FLEET_JAVA_HARNESS")
OTHER = BookKeeperVersion("BOOKIE_FLEET_BK_COMPAT_LIB", "BOOKIE_FLEET_BK_COMPAT_HARNESS")
VERSIONS = {"pinned": PINNED, "other": OTHER}


def classpath(version: BookKeeperVersion = PINNED) -> str:
    """The harness as the jar the bootstrap packs its classes into: with jars alone on it, the JVM maps the
    classes an earlier start archived (``archive_options``)."""
    jar = version.harness / "harness.jar"
    if not jar.is_file():
        pytest.fail(f"{jar} is missing: run ./scripts/bootstrap and source its env file")
    return f"{jar}{os.pathsep}{version.lib}/*"


def java_command(main: str, *args: str, properties: dict[str, str] | None = None,
                 version: BookKeeperVersion = PINNED, harness_options: tuple[str, ...] = ()) -> list[str]:
    """``properties``: BookKeeper client keys, read by its ClientConfiguration from system properties;
    ``harness_options``: the harness's own (``-Dharness.*``). Its temporary files (the checksum library it
    unpacks) go to the test process's directory (``java_tools_tmpdir``), not left in /tmp."""
    props = [f"-D{k}={v}" for k, v in (properties or {}).items()]
    if props:
        props.insert(0, "-Dorg.apache.bookkeeper.conf.readsystemproperties=true")
    java, path = shutil.which("java") or "java", classpath(version)
    return [java, *JVM, *archive_options(java, path, main), java_tools_tmpdir(), *props, *harness_options, "-cp",
            path, main, *args]


@dataclass
class JavaRun:
    lines: list[str] = field(default_factory=list)
    returncode: int = 0

    def values(self, tag: str) -> list[list[str]]:
        return [line.split()[1:] for line in self.lines if line.startswith(tag + " ")]

    @property
    def result(self) -> list[str]:
        (result,) = self.values("RESULT")
        return result

    def entries(self) -> dict[int, str]:
        return {int(v[0]): v[1] for v in self.values("ENTRY")}

    @property
    def refused(self) -> tuple[int, str] | None:
        """(BKException code, exception name) when the Java client raised one."""
        found = self.values("REFUSED")
        return (int(found[0][0]), found[0][1]) if found else None


# ClientHarness's exit status after a BKException (it prints REFUSED first).
REFUSED_EXIT = 3


async def run_harness(cluster: BookieCluster, *args: str, limit_s: float = 120,
                      properties: dict[str, str] | None = None, may_refuse: bool = False,
                      version: BookKeeperVersion = PINNED) -> JavaRun:
    """ClientHarness ``args`` against ``cluster``; ``properties``: more client keys (TLS); with ``may_refuse``
    a BKException is a result (``JavaRun.refused``), not a failure; ``version``: the Java client's."""
    proc = await asyncio.create_subprocess_exec(
        *java_command("ClientHarness", args[0], cluster.zk_connect, cluster.ledgers_root, *args[1:],
                      properties=properties, version=version),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
    assert proc.stdout is not None and proc.stderr is not None
    # Read as it comes, not by communicate(): a harness that overruns is judged by what it had printed.
    out, err = bytearray(), bytearray()
    readers = asyncio.gather(_read_into(proc.stdout, out), _read_into(proc.stderr, err))
    try:
        await asyncio.wait_for(asyncio.shield(proc.wait()), limit_s)
    except TimeoutError:
        raise AssertionError(f"ClientHarness {' '.join(args)} not done within {limit_s:.0f} s; what it printed, then "
                             f"its threads:\n{await _thread_dump(proc, out, err)}") from None
    finally:
        if proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
        await readers
    allowed = (0, REFUSED_EXIT) if may_refuse else (0,)
    assert proc.returncode in allowed, err.decode(errors="replace")[-4000:] + out.decode(errors="replace")[-2000:]
    return JavaRun(out.decode().splitlines(), proc.returncode or 0)


async def _read_into(stream: asyncio.StreamReader, into: bytearray) -> None:
    while chunk := await stream.read(1 << 16):
        into += chunk


# How long a JVM sent SIGQUIT is given to print its threads (it goes on running after).
_THREAD_DUMP_S = 5.0


async def _thread_dump(proc: asyncio.subprocess.Process, out: bytearray, err: bytearray) -> str:
    """The end of what a stuck JVM printed, then the stacks of its threads (SIGQUIT: the JVM prints them on its
    stdout and goes on)."""
    printed = len(out)
    with contextlib.suppress(ProcessLookupError):
        os.kill(proc.pid, signal.SIGQUIT)
    await asyncio.sleep(_THREAD_DUMP_S)
    before = (err.decode(errors="replace")[-3000:] + out[:printed].decode(errors="replace")[-3000:])
    return before + "\n" + out[printed:].decode(errors="replace")[:12000]


class HeldWriter:
    """A Java writer (``hold`` mode) that adds entries, then waits to be killed without closing."""

    def __init__(self, proc: asyncio.subprocess.Process) -> None:
        self.proc = proc
        self.ledger_id = -1
        self.acked: list[int] = []

    @classmethod
    async def start(cls, cluster: BookieCluster, *args: str, limit_s: float = 120) -> HeldWriter:
        proc = await asyncio.create_subprocess_exec(
            *java_command("ClientHarness", "hold", cluster.zk_connect, cluster.ledgers_root, *args),
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
        writer = cls(proc)
        assert proc.stdout is not None
        try:
            async with asyncio.timeout(limit_s):
                while line := (await proc.stdout.readline()).decode().strip():
                    if line.startswith("LEDGER "):
                        writer.ledger_id = int(line.split()[1])
                    elif line.startswith("ACKED "):
                        writer.acked.append(int(line.split()[1]))
                    elif line == "HOLDING":
                        return writer
        except BaseException:
            await writer.kill()
            raise
        await writer.kill()
        raise AssertionError("Java writer exited before holding its ledger")

    async def kill(self) -> None:
        if self.proc.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        await self.proc.wait()
