"""Start ``python -m bookie.cli ...`` and ``python -m bookie_operator ...`` by forking a process that imported them.

A bookie process spends about 1.1 s of CPU importing its modules (aiohttp, pydantic, kazoo, its own) before it
does anything, the operator about 2.4 s (kubernetes_asyncio's generated models, Kopf, the CRD's models); the test
suite starts some 700 bookies and 80 operators, which on two cores is minutes of a run. A fork server imports a
program's modules once: each start is a ``fork`` of it, then the command runs as ``python -m`` would run it, in
its own session, its output appended to its log, with the caller's environment and working directory.

Used where ``BOOKIE_FLEET_FORK_SERVER=1`` (the tests set it, tests/support/fork_server.py). A benchmark run by
hand and the playground (whatever its environment says) start each process as a fresh interpreter, as
production does. A start whose environment differs in a variable the server's imports read gets a server started
with it; a command no server can run as the interpreter would (another program, a preloaded library this process
was not started with) starts with ``subprocess.Popen`` as before.

The handle (``ForkedProcess``) answers as ``subprocess.Popen`` does (``pid``, ``poll``, ``wait``,
``returncode``, ``send_signal``): its process is the server's child, and stays a zombie until the handle reaps
it (``poll`` or ``wait`` after its exit), so that its pid, which is its process group's id, is not handed out
again while a caller may still signal the group. Why not ``multiprocessing``'s forkserver: it reaps a child as
soon as it exits, runs the parent's main module again in each child, replaces its standard input and skips
its ``atexit`` handlers.

Protocol, one JSON object per line. The server first writes ``{"read_at_import": [names]}``. The client writes
``{"start": {argv, env, cwd, log}}`` and reads ``{"started": pid}`` (once the child leads its session) or
``{"error": why}``; the server writes ``{"exited": pid, "returncode": n}`` when a child exits, and the client sends
``{"reap": pid}`` once it has taken the code and reads ``{"reaped": pid}``. The server exits when its standard
input closes (its client is gone); children still running then carry on, as a ``Popen``'s would.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import importlib
import importlib.util
import json
import os
import runpy
import selectors
import signal
import subprocess
import sys
import threading
import time
import traceback
from collections.abc import MutableMapping
from pathlib import Path
from typing import IO, Any

ENABLE_ENV = "BOOKIE_FLEET_FORK_SERVER"
# What a server can run (``python -m <module> <args>``), each by a server of its own, and what it imports first.
# A module that reads a variable when imported would keep the server's value in every child: the server records
# the variables its imports read (``ReadRecorder``) and a start whose values differ goes to a server started with
# them (or, past ``MAX_SERVERS``, runs as a fresh interpreter).
# That cannot see a program that sets a variable itself before importing the module reading it: the operator's
# handlers are such a module (their timer's interval is a decorator argument, from the variable its __main__ sets
# from --interval), so they are not preloaded: each child imports them itself.
PRELOADS: dict[str, tuple[str, ...]] = {
    "bookie.cli": ("bookie.cli", "bookie.server", "bookie.termination", "bookie.inspector.process"),
    "bookie_operator": ("kopf", "kubernetes_asyncio.client", "kubernetes_asyncio.config", "bookie_operator.kube",
                        "bookie_operator.reconcile", "bookie_operator.builders", "bookie_operator.crd",
                        "bookie_operator.bookie_client", "bookie_operator.zk", "bookie_operator.storage_version",
                        "bookie_operator.decisions.escalations"),
}
# Variables the interpreter and the C libraries read at start (``ReadRecorder`` sees reads through os.environ
# only): a start asking for other values than the server started with runs as a fresh interpreter, too.
_IMPORT_TIME_PREFIXES = ("PYTHON", "LD_", "MALLOC_", "ASAN_", "UBSAN_", "LSAN_")
# Servers per program at most, each for other values of those variables (the operator's KUBECONFIG, read when
# Kopf's imports choose its login): past that, a start with yet other values runs a fresh interpreter.
MAX_SERVERS = 3
REPLY_TIMEOUT_S = 30.0
LOST_RETURNCODE = 255  # a child of a server that died: its exit code went with it
_PR_SET_NAME = 15


# --- The server (``python -m bookie_fleet.fork_server <module>``) ---


class ReadRecorder(dict[str, str]):
    """``os.environ`` while the server imports: a copy of it that notes each variable read by name (and passes
    writes on). A dict, so that a copy of the whole environment (``dict(os.environ, LC_ALL="C")``, as platform
    makes for a subprocess) takes dict's own path and reads nothing by name: none of those copies is kept."""

    def __init__(self, real: MutableMapping[str, str]) -> None:
        super().__init__(real)
        self.real = real
        self.read: set[str] = set()

    def __getitem__(self, key: str) -> str:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.read.add(key)
        return super().__contains__(key)

    def setdefault(self, key: str, default: str) -> str:
        self.read.add(key)
        if key not in self.real:
            self.real[key] = default
        return super().setdefault(key, default)

    def __setitem__(self, key: str, value: str) -> None:
        self.real[key] = value
        super().__setitem__(key, value)

    def __delitem__(self, key: str) -> None:
        del self.real[key]
        super().__delitem__(key)


def serve(module: str) -> None:
    # Replaced, not cleared (ruff's B003): the mapping that reads go through, delegating to the real one.
    real, recorder = os.environ, ReadRecorder(os.environ)
    os.environ = recorder  # type: ignore[assignment]  # noqa: B003
    try:
        for name in PRELOADS[module]:
            importlib.import_module(name)
    finally:
        os.environ = real  # noqa: B003
    if threading.active_count() != 1:  # a fork copies the calling thread only: a thread's locks could be held
        raise SystemExit(f"fork server: importing {PRELOADS[module]} started threads: {threading.enumerate()}")
    gc.collect()
    gc.freeze()  # the children's collections leave the preloaded objects, and so the shared pages, alone
    # A Ctrl-C reaches the client's whole process group: the server stays to collect the children the client
    # stops on its way out, and leaves when the client closes its end.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    server = Server(module, sys.stdin.fileno(), sys.stdout.buffer)
    server.reply({"read_at_import": sorted(recorder.read)})
    server.run()


class Server:
    def __init__(self, module: str, requests: int, replies: IO[bytes]) -> None:
        self.module = module
        self.requests = requests
        self.replies = replies
        self.running: set[int] = set()  # children not yet seen exited
        self.exited: set[int] = set()  # zombies waiting for their client's reap
        self.wakeup_r, self.wakeup_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)

    def run(self) -> None:
        signal.set_wakeup_fd(self.wakeup_w)
        signal.signal(signal.SIGCHLD, lambda *_: None)  # a handler, so that SIGCHLD writes to the wakeup pipe
        selector = selectors.DefaultSelector()
        selector.register(self.requests, selectors.EVENT_READ)
        selector.register(self.wakeup_r, selectors.EVENT_READ)
        pending = b""
        while True:
            for key, _ in selector.select(timeout=1.0):  # the timeout: a missed wakeup is caught within 1 s
                if key.fileobj == self.wakeup_r:
                    with contextlib.suppress(BlockingIOError):
                        os.read(self.wakeup_r, 4096)
                    continue
                # Raw reads, split here: a buffered reader could hold a line select() no longer reports.
                chunk = os.read(self.requests, 1 << 16)
                if not chunk:
                    return
                *lines, pending = (pending + chunk).split(b"\n")
                for line in lines:
                    self.handle(json.loads(line))
            self.report_exits()

    def handle(self, request: dict[str, Any]) -> None:
        if "reap" in request:
            pid = int(request["reap"])
            if pid in self.exited:
                self.exited.discard(pid)
                os.waitpid(pid, 0)
            self.reply({"reaped": pid})
        elif "start" in request:
            self.reply(self.start(**request["start"]))

    def start(self, argv: list[str], env: dict[str, str], cwd: str, log: str) -> dict[str, Any]:
        try:
            log_fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        except OSError as e:
            return {"error": f"cannot open the log {log}: {e}"}
        # The reply waits for the child's new session, as Popen's return does: the caller may signal its group
        # at once.
        in_session_r, in_session_w = os.pipe2(os.O_CLOEXEC)
        try:
            pid = os.fork()
        except OSError as e:
            for fd in (in_session_r, in_session_w, log_fd):
                os.close(fd)
            return {"error": f"cannot fork: {e}"}
        if pid == 0:
            os.close(in_session_r)
            run_child(self.module, argv, env, cwd, log_fd, in_session_w)  # never returns
        os.close(in_session_w)
        os.read(in_session_r, 1)  # end of file: the child closed its end, or died
        os.close(in_session_r)
        os.close(log_fd)
        self.running.add(pid)
        return {"started": pid}

    def report_exits(self) -> None:
        for pid in list(self.running):
            # WNOWAIT: the child stays a zombie, its pid and group id its own, until the client reaps it.
            info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
            if info is None or info.si_pid == 0:
                continue
            self.running.discard(pid)
            self.exited.add(pid)
            code = info.si_status if info.si_code == os.CLD_EXITED else -info.si_status
            self.reply({"exited": pid, "returncode": code})

    def reply(self, message: dict[str, Any]) -> None:
        self.replies.write(json.dumps(message).encode() + b"\n")
        self.replies.flush()


def run_child(module: str, argv: list[str], env: dict[str, str], cwd: str, log_fd: int, in_session: int) -> None:
    """In the forked child: become what ``python -m <module> <argv>`` started with ``Popen`` would be, run it,
    and exit as the interpreter would. ``in_session`` is closed once it leads its own session."""
    code = 1
    try:
        os.setsid()
        os.close(in_session)
        _name_process(module, argv)
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        devnull = os.open(os.devnull, os.O_RDONLY)
        os.dup2(devnull, 0)
        os.dup2(log_fd, 1)
        os.dup2(log_fd, 2)
        os.closerange(3, os.sysconf("SC_OPEN_MAX") if os.sysconf("SC_OPEN_MAX") < 1 << 16 else 1 << 16)
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.path[0] = cwd  # as ``python -m`` puts its working directory first
        sys.argv = [module, *argv]
        code = _run_main(module)
    except BaseException:  # setting up: into the log, which is standard error by now (or nowhere before)
        traceback.print_exc()
    finally:
        os._exit(code)


def _name_process(module: str, argv: list[str]) -> None:
    """Name the child after its command (``bookie serve``) where ``ps``, ``top`` and /proc/<pid>/stat show a
    process's name; its command line stays the server's (changing that takes privileges or rewriting the
    interpreter's argv in place)."""
    program = module.split(".")[0].replace("_", "-")
    name = " ".join([program, *argv[:1]]).encode()[:15]  # the kernel keeps 15 bytes
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_NAME, name, 0, 0, 0)


def _run_main(module: str) -> int:
    # Preloaded for its imports: ``python -m`` runs the main module (a package's __main__) as __main__ only.
    is_package = importlib.util.find_spec(module).submodule_search_locations is not None  # type: ignore[union-attr]
    sys.modules.pop(f"{module}.__main__" if is_package else module, None)
    code = 0
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as e:
        code = _exit_code(e.code)
    except KeyboardInterrupt:
        code = -signal.SIGINT
    except BaseException:  # as the interpreter: print it, exit 1
        traceback.print_exc()
        code = 1
    # The interpreter's own shutdown: wait for non-daemon threads, run atexit handlers, flush.
    with contextlib.suppress(BaseException):
        threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    if code == -signal.SIGINT:  # an uncaught Ctrl-C ends the interpreter by SIGINT, so its parent sees it
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    return code


def _exit_code(code: object) -> int:
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


# --- The client ---


class ForkedProcess:
    """A process the fork server started, answering as ``subprocess.Popen`` does."""

    stdin = stdout = stderr = None

    def __init__(self, server: ForkServer, pid: int, args: list[str]) -> None:
        self.server = server
        self.pid = pid
        self.args = args
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            code = self.server.exit_code(self.pid, timeout=0)
            if code is not None:
                self._reap(code)
        return self.returncode

    def wait(self, timeout: float | None = None) -> int:
        if self.returncode is None:
            code = self.server.exit_code(self.pid, timeout)
            if code is None:
                raise subprocess.TimeoutExpired(self.args, timeout or 0)
            self._reap(code)
        assert self.returncode is not None
        return self.returncode

    def wait_unreaped(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the process to exit, leaving it unreaped; whether it exited."""
        return self.returncode is not None or self.server.exit_code(self.pid, timeout) is not None

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, sig)

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)

    def _reap(self, code: int) -> None:
        self.returncode = code
        self.server.reap(self.pid)


class ForkServer:
    """The client of one server process, shared by every thread of this process."""

    def __init__(self, module: str, env: dict[str, str]) -> None:
        self.module = module
        self.owner = os.getpid()  # a copy of this client in a forked child shares its pipes: it must not use them
        self.env = env
        self.proc = subprocess.Popen([sys.executable, "-m", __name__, module], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, env=self.env)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.requests, self.replies_in = self.proc.stdin, self.proc.stdout
        self.lock = threading.Lock()  # one request at a time: its reply is the next one read
        self.changed = threading.Condition()
        self.replies: list[dict[str, Any]] = []
        self.exit_codes: dict[int, int] = {}
        self.read_at_import: frozenset[str] | None = None  # the server's first message
        self.gone = False
        threading.Thread(target=self._read, name="fork-server-replies", daemon=True).start()

    def runs(self, env: dict[str, str]) -> bool:
        """Whether a child with this environment would be the same as a fresh interpreter's: the same values of
        the variables read while the server imported, and of the interpreter's."""
        with self.changed:
            if not self.changed.wait_for(lambda: self.read_at_import is not None or self.gone, REPLY_TIMEOUT_S):
                raise RuntimeError(f"the fork server (pid {self.proc.pid}) did not start in {REPLY_TIMEOUT_S:.0f} s")
        if self.gone or self.read_at_import is None:
            return False

        def import_time(e: dict[str, str]) -> dict[str, str | None]:
            assert self.read_at_import is not None
            keys = {k for k in e if k.startswith(_IMPORT_TIME_PREFIXES)} | self.read_at_import
            return {k: e.get(k) for k in keys}
        return import_time(env) == import_time(self.env)

    def start(self, argv: list[str], env: dict[str, str], cwd: Path, log: Path) -> ForkedProcess:
        reply = self._call({"start": {"argv": argv, "env": env, "cwd": str(cwd), "log": str(log)}})
        if "error" in reply:
            raise OSError(reply["error"])
        return ForkedProcess(self, int(reply["started"]), [sys.executable, "-m", self.module, *argv])

    def _call(self, request: dict[str, Any]) -> dict[str, Any]:
        """Send ``request`` and wait for its reply: the next one, as requests go one at a time."""
        with self.lock:
            self._send(request)
            with self.changed:
                if not self.changed.wait_for(lambda: self.replies or self.gone, REPLY_TIMEOUT_S):
                    raise RuntimeError(f"the fork server (pid {self.proc.pid}) did not answer {request} in "
                                       f"{REPLY_TIMEOUT_S:.0f} s")
                if not self.replies:
                    raise RuntimeError(f"the fork server (pid {self.proc.pid}) exited with {self.proc.poll()}")
                return self.replies.pop(0)

    def exit_code(self, pid: int, timeout: float | None) -> int | None:
        """The exit code of child ``pid`` once it exited (waiting up to ``timeout``; None: for ever), else None."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self.changed:
            while pid not in self.exit_codes:
                if self.gone and not _alive(pid):
                    return LOST_RETURNCODE
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return None
                # Bounded once the server is gone: nothing will notify; the child is then looked at in /proc.
                self.changed.wait(0.05 if self.gone else left)
            return self.exit_codes[pid]

    def reap(self, pid: int) -> None:
        """Have the server collect child ``pid``, which has exited: gone once this returns, as after ``Popen``'s
        ``wait``."""
        with self.changed:
            self.exit_codes.pop(pid, None)
        if not self.gone:
            with contextlib.suppress(OSError, RuntimeError):  # a server gone meanwhile: init collects it
                self._call({"reap": pid})

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self.requests.close()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)

    def _send(self, message: dict[str, Any]) -> None:
        self.requests.write(json.dumps(message).encode() + b"\n")
        self.requests.flush()

    def _read(self) -> None:
        for line in self.replies_in:
            message = json.loads(line)
            with self.changed:
                if "exited" in message:
                    self.exit_codes[int(message["exited"])] = int(message["returncode"])
                elif "read_at_import" in message:
                    self.read_at_import = frozenset(message["read_at_import"])
                else:
                    self.replies.append(message)
                self.changed.notify_all()
        with self.changed:
            self.gone = True
            self.changed.notify_all()


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


_servers: dict[str, list[ForkServer]] = {}
_servers_lock = threading.Lock()
_PRELOADED_LIBRARIES = os.environ.get("LD_PRELOAD")  # this process's own


def enabled() -> bool:
    return os.environ.get(ENABLE_ENV) == "1"


def start(cmd: list[str], log: Path, *, env: dict[str, str] | None = None,
          cwd: Path | None = None) -> ForkedProcess | None:
    """Start ``cmd`` through this process's fork server for its program when there is one that can run it
    (``python -m bookie.cli ...``, ``python -m bookie_operator ...``; ``env``, by default this process's, one
    the server's imports fit), its output appended to ``log``; None when none can."""
    module = cmd[2] if len(cmd) > 2 and cmd[:2] == [sys.executable, "-m"] else None
    if not enabled() or module not in PRELOADS:
        return None
    env = dict(os.environ) if env is None else env
    server = _server_for(module, env)
    if server is None:
        return None
    return server.start(cmd[3:], env, Path.cwd() if cwd is None else cwd, log)


def _server_for(module: str, env: dict[str, str]) -> ForkServer | None:
    """A server of this process whose imports fit ``env``: one already started, else a new one started with it.
    Never one started with a preloaded library this process was not (a fault injector meant for one start)."""
    with _servers_lock:
        servers = _servers.setdefault(module, [])
        servers[:] = [s for s in servers if not s.gone and s.owner == os.getpid()]
        for server in servers:
            if server.runs(env):
                return server
        if len(servers) >= MAX_SERVERS or env.get("LD_PRELOAD") != _PRELOADED_LIBRARIES:
            return None
        server = ForkServer(module, env)
        atexit.register(server.close)
        servers.append(server)
        return server if server.runs(env) else None


if __name__ == "__main__":
    serve(sys.argv[1])
