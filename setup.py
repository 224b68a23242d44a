"""The bookie's C extension modules, for setuptools (everything else about the project is in pyproject.toml).

`pip install .` builds them into the wheel, `pip install -e .` (what scripts/bootstrap does) beside their
sources, and the images' build stage with `pip install --target`. A module may be compiled from several files
(one per concern); its sources are listed with the headers it includes, so a header change rebuilds the
modules that use it.

The modules are compiled with the flags below only, not with the interpreter's own build flags (sysconfig's
CFLAGS: -O3, -fwrapv, -g, ... which differ between Debian's Python and others): the same sources give the
same code whichever Python builds them, and a warning is an error. CC chooses the compiler (default `cc`).
BOOKIE_NATIVE_SANITIZE=1 adds AddressSanitizer and UndefinedBehaviorSanitizer to both command lines: the build
scripts/sanitize makes (outside the repository) and runs the C-facing tests against; never an installed one.
"""

from __future__ import annotations

import os
import shutil
import sysconfig
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

COMPILE_FLAGS = ["-O2", "-fPIC", "-pthread", "-Wall", "-Wextra", "-Wno-unused-parameter", "-Werror"]
LINK_FLAGS = ["-shared", "-pthread"]
# Any undefined behaviour is an error that stops the process, as a memory error does (ASan stops at the first).
SANITIZE_FLAGS = ["-fsanitize=address,undefined", "-fno-sanitize-recover=undefined", "-fno-omit-frame-pointer", "-g"]

PACKAGE = "bookie_image/bookie"
COMMON = f"{PACKAGE}/_native_common.h"
CRC32C = f"{PACKAGE}/_crc32c.h"
PROTOCOL_API = f"{PACKAGE}/protocol/_native_api.h"
WRITE_PATH_API = f"{PACKAGE}/storage/_write_path_api.h"


def extension(name: str, sources: list[str], headers: list[str]) -> Extension:
    return Extension(name, sources=sources, depends=[COMMON, *headers], libraries=["m"])


EXTENSIONS = [
    extension("bookie.protocol._native",
              [f"{PACKAGE}/protocol/{name}.c" for name in ("_add_decode", "_add_encode", "_frame_reader", "_native")],
              [PROTOCOL_API, f"{PACKAGE}/protocol/_native_internal.h"]),
    extension("bookie.storage._write_path",
              [f"{PACKAGE}/storage/{name}.c" for name in ("_write_cache", "_ledger_state", "_journal_writer",
                                                          "_journal", "_write_path", "_entry_log_records")],
              [CRC32C, WRITE_PATH_API, f"{PACKAGE}/storage/_write_path_internal.h"]),
    extension("bookie.client._native", [f"{PACKAGE}/client/_client_stream.c", f"{PACKAGE}/client/_native.c"],
              [CRC32C, PROTOCOL_API, f"{PACKAGE}/client/_native_internal.h"]),
    extension("bookie._requests", [f"{PACKAGE}/{name}.c" for name in ("_inflight_counts", "_add_stats", "_requests")],
              [PROTOCOL_API, WRITE_PATH_API, f"{PACKAGE}/_requests_internal.h"]),
]


class BuildExt(build_ext):
    """setuptools' build_ext with the project's compiler command lines, and a clear error for what is
    missing before any compiler runs."""

    def build_extensions(self) -> None:
        compiler = os.environ.get("CC", "cc")
        if shutil.which(compiler) is None:
            raise SystemExit(f"bookie's C extension modules: no C compiler {compiler!r} on PATH "
                             "(install gcc, or set CC)")
        include = sysconfig.get_path("include")
        if not (Path(include) / "Python.h").is_file():
            raise SystemExit(f"bookie's C extension modules: {include}/Python.h is missing (install this "
                             "Python's headers, e.g. Debian's python3-dev)")
        sanitize = SANITIZE_FLAGS if os.environ.get("BOOKIE_NATIVE_SANITIZE") == "1" else []
        self.compiler.set_executables(compiler_so=[compiler, *COMPILE_FLAGS, *sanitize],
                                      linker_so=[compiler, *LINK_FLAGS, *sanitize])
        super().build_extensions()


setup(ext_modules=EXTENSIONS, cmdclass={"build_ext": BuildExt})
