"""The bookie's C extension modules are built by standard Python packaging (setup.py beside pyproject.toml):
`pip install -e .` and `pip install .` in a fresh virtualenv compile them, with the project's flags (a warning
is an error), and name what is missing when they cannot. scripts/bootstrap and the images' build stage run the
same pip install.

Each case installs a copy of the project's packaging files and packages, offline: the fresh virtualenv sees
the project's pinned dependencies (pip and setuptools among them) through a .pth line, as scripts/bootstrap's
per-checkout virtualenv does, and pip is told to use no index and no build isolation.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
MODULES = ["bookie.protocol._native", "bookie.storage._write_path", "bookie.client._native", "bookie._requests"]
PIP_OFFLINE = ["--no-deps", "--no-build-isolation", "--no-index", "--disable-pip-version-check"]


def _dependencies_site() -> Path:
    """The site-packages of the project's pinned dependencies (where setuptools is installed)."""
    spec = importlib.util.find_spec("setuptools")
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).resolve().parents[1]


def _copy_project(root: Path) -> Path:
    """pyproject.toml, setup.py, README.md and every package directory pyproject.toml names, without the
    checkout's compiled modules."""
    root.mkdir()
    for name in ("pyproject.toml", "setup.py", "README.md"):
        shutil.copy2(REPO / name, root / name)
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text())
    for parent in pyproject["tool"]["setuptools"]["packages"]["find"]["where"]:
        shutil.copytree(REPO / parent, root / parent,
                        ignore=shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info", "build"))
    return root


def _fresh_virtualenv(path: Path) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(path)], check=True)
    site = path / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    (site / "project_dependencies.pth").write_text(f"{_dependencies_site()}\n")
    return path / "bin" / "python"


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return {**env, **extra}


def _pip_install(python: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python), "-m", "pip", "install", *PIP_OFFLINE, *args], capture_output=True,
                          text=True, env=_env(**env), timeout=600, check=False)


def _module_files(python: Path, cwd: Path) -> dict[str, Path]:
    """Where the fresh virtualenv imports each C module (and the storage engine on top of them) from."""
    code = ("import importlib, sys; import bookie.storage.engine\n"
            f"for name in {MODULES!r}: print(name, importlib.import_module(name).__file__)")
    done = subprocess.run([str(python), "-c", code], cwd=cwd, capture_output=True, text=True, env=_env(),
                          check=False)
    assert done.returncode == 0, done.stderr
    return {name: Path(file) for name, file in (line.split() for line in done.stdout.splitlines())}


def _serve_help(python: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(python.parent / "bookie"), "serve", "--help"], capture_output=True, text=True,
                          env=_env(), check=False)


def test_an_editable_install_builds_the_modules_beside_their_sources_and_runs_the_bookie(tmp_path: Path) -> None:
    project = _copy_project(tmp_path.resolve() / "project")
    python = _fresh_virtualenv(tmp_path / "venv")
    done = _pip_install(python, "-e", str(project))
    assert done.returncode == 0, done.stdout + done.stderr
    files = _module_files(python, tmp_path)
    for name, file in files.items():
        source = project / "bookie_image" / name.replace(".", "/")
        assert file.parent == source.parent and file.suffix == ".so", (name, file)
    served = _serve_help(python)
    assert served.returncode == 0, served.stderr
    assert "--conf" in served.stdout


def test_an_install_builds_the_modules_into_the_virtualenv(tmp_path: Path) -> None:
    project = _copy_project(tmp_path / "project")
    python = _fresh_virtualenv(tmp_path / "venv")
    done = _pip_install(python, str(project))
    assert done.returncode == 0, done.stdout + done.stderr
    for name, file in _module_files(python, tmp_path).items():
        assert tmp_path.resolve() / "venv" in file.resolve().parents and file.suffix == ".so", (name, file)
    assert _serve_help(python).returncode == 0


def test_a_warning_fails_the_build_naming_the_source(tmp_path: Path) -> None:
    project = _copy_project(tmp_path / "project")
    source = project / "bookie_image" / "bookie" / "_requests.c"
    source.write_text(source.read_text() + "\nstatic int never_called(void) { return 1; }\n")
    python = _fresh_virtualenv(tmp_path / "venv")
    done = _pip_install(python, "-e", str(project))
    assert done.returncode != 0
    output = done.stdout + done.stderr
    assert "_requests.c" in output and "never_called" in output and "-Werror" in output, output
    assert not list(project.rglob("_requests*.so"))


def test_a_missing_compiler_is_named(tmp_path: Path) -> None:
    project = _copy_project(tmp_path / "project")
    python = _fresh_virtualenv(tmp_path / "venv")
    done = _pip_install(python, "-e", str(project), CC="no-such-cc")
    assert done.returncode != 0
    assert "no C compiler 'no-such-cc'" in done.stdout + done.stderr
