"""Regenerate the committed ``*_pb2.py`` modules from the ``.proto`` files next to this script.

Usage: ``python regenerate.py`` rewrites them; ``python regenerate.py --check`` exits 1 if they are stale.
Uses the protoc bundled with grpcio-tools so every engineer gets byte-identical output.
"""

from __future__ import annotations

import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
PROTOS = ("BookkeeperProtocol.proto", "DataFormats.proto")


def generate(out_dir: Path) -> dict[str, bytes]:
    """Run protoc into out_dir; returns {file name: content} of the generated modules."""
    from grpc_tools import protoc

    args = ["protoc", f"-I{HERE}", f"--python_out={out_dir}", *(str(HERE / p) for p in PROTOS)]
    if protoc.main(args) != 0:
        raise RuntimeError(f"protoc failed: {' '.join(args)}")
    return {p.name: p.read_bytes() for p in sorted(out_dir.glob("*_pb2.py"))}


def stale_files() -> list[str]:
    """Names of committed modules that differ from what protoc generates now."""
    with tempfile.TemporaryDirectory() as tmp:
        fresh = generate(Path(tmp))
    return [name for name, content in fresh.items()
            if not (HERE / name).exists() or (HERE / name).read_bytes() != content]


def main(argv: list[str]) -> int:
    if "--check" in argv:
        stale = stale_files()
        for name in stale:
            print(f"stale: {name} (run {Path(__file__).name})", file=sys.stderr)
        return 1 if stale else 0
    generate(HERE)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
