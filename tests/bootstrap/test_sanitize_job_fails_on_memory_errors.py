"""`./scripts/sanitize` runs tests against AddressSanitizer + UndefinedBehaviorSanitizer builds of the bookie's C
modules, and a sanitizer report fails it: a memory error in the test process, and one in a process a test
started and never looked at again. The tests it runs import the instrumented modules, not the checkout's.

Each case gives the script one test file of its own (in the test's directory). The memory error is a write
past the end of a heap buffer through ctypes, which ASan's interceptor of memmove sees as it would a bug in
our C code; the build is the one the suite's sanitizer job uses (cached by the C sources' content)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

OVERFLOW = """
import ctypes
buffer = bytearray(16)
ctypes.memmove((ctypes.c_char * 16).from_buffer(buffer), b"x" * 64, 64)  # 48 bytes past the buffer's end
"""

INSTRUMENTED = '''
import importlib, os

MODULES = ["bookie.protocol._native", "bookie.storage._write_path", "bookie.client._native", "bookie._requests"]


def test_the_modules_imported_are_the_instrumented_build():
    for name in MODULES:
        path = importlib.import_module(name).__file__
        assert not path.startswith(os.environ["CHECKOUT"]), f"{name} imported from the checkout: {path}"
        code = open(path, "rb").read()
        assert b"__asan_report" in code and b"__ubsan_handle" in code, f"{name} is not instrumented: {path}"
'''

IN_THE_TEST = f'''
def test_writes_past_a_buffer():
{"".join("    " + line + chr(10) for line in OVERFLOW.strip().splitlines())}
'''

IN_A_CHILD = f'''
import subprocess, sys


def test_starts_a_process_that_writes_past_a_buffer():
    subprocess.run([sys.executable, "-c", {OVERFLOW!r}])  # its exit status is not looked at
'''


def _sanitize(tmp_path: Path, test_source: str) -> subprocess.CompletedProcess[str]:
    test = tmp_path / "test_under_sanitizers.py"
    test.write_text(test_source)
    return subprocess.run([str(REPO / "scripts" / "sanitize"), str(test)], cwd=REPO, capture_output=True,
                          text=True, timeout=900, env={**os.environ, "CHECKOUT": str(REPO)})


def test_a_clean_run_passes_against_instrumented_modules(tmp_path: Path) -> None:
    run = _sanitize(tmp_path, INSTRUMENTED)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "1 passed" in run.stdout


def test_a_memory_error_in_the_test_process_fails_the_run(tmp_path: Path) -> None:
    run = _sanitize(tmp_path, IN_THE_TEST)
    assert run.returncode != 0, run.stdout + run.stderr
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in run.stderr, run.stderr


def test_a_memory_error_in_a_process_nobody_waits_on_fails_the_run(tmp_path: Path) -> None:
    run = _sanitize(tmp_path, IN_A_CHILD)
    assert "1 passed" in run.stdout, "the test itself passes: only the report can fail the run"
    assert run.returncode != 0, run.stdout + run.stderr
    assert "ERROR: AddressSanitizer: heap-buffer-overflow" in run.stderr, run.stderr
