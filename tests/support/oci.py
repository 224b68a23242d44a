"""Reading the OCI image layout the bootstrap builds (``$BOOKIE_FLEET_IMAGES``) and running its images with
runc, for the image tests (tests/images) and the examples' tests.

Only the layout's JSON is read here (index, manifests, configs); root filesystems are unpacked as localkube's
runner does it (tests/images/conftest.py).
"""

from __future__ import annotations

import contextlib
import gzip
import json
import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

Obj = dict[str, Any]
REF = "org.opencontainers.image.ref.name"
ENV = "BOOKIE_FLEET_IMAGES"


def layout() -> Path:
    value = os.environ.get(ENV)
    if not value or not (Path(value) / "index.json").is_file():
        raise RuntimeError(f"${ENV} must name the OCI layout of the built images (got {value!r}): run "
                           "./scripts/bootstrap as root (scripts/bootstrap.d/images.sh) and source its env file")
    return Path(value)


def _blob(root: Path, digest: str) -> bytes:
    algorithm, _, hexdigest = digest.partition(":")
    return (root / "blobs" / algorithm / hexdigest).read_bytes()


@dataclass(frozen=True)
class Image:
    layout: Path
    ref: str
    manifest: Obj
    config: Obj

    @property
    def runtime(self) -> Obj:
        """The image's run settings (User, Entrypoint, Cmd, Env, Labels, WorkingDir, Volumes)."""
        return dict(self.config.get("config") or {})

    @property
    def env(self) -> dict[str, str]:
        return dict(e.partition("=")[::2] for e in self.runtime.get("Env") or [])

    def layer_sizes(self) -> list[int]:
        """Uncompressed size of each layer (the size on disk once unpacked, bar filesystem overhead)."""
        sizes = []
        for layer in self.manifest["layers"]:
            data = _blob(self.layout, layer["digest"])
            if layer["mediaType"].endswith("+gzip"):
                data = gzip.decompress(data)
            sizes.append(len(data))
        return sizes


def image(ref: str, root: Path | None = None) -> Image:
    root = root or layout()
    index = json.loads((root / "index.json").read_text())
    for descriptor in index["manifests"]:
        if descriptor.get("annotations", {}).get(REF) == ref:
            manifest = json.loads(_blob(root, descriptor["digest"]))
            config = json.loads(_blob(root, manifest["config"]["digest"]))
            return Image(root, ref, manifest, config)
    refs = [d.get("annotations", {}).get(REF) for d in index["manifests"]]
    raise LookupError(f"{ref} is not in {root} (it has {refs})")


def runtime_spec(img: Image, rootfs: Path, args: list[str] | None = None, *, host_network: bool = False,
                 binds: dict[str, Path] | None = None) -> Obj:
    """The OCI runtime spec of a restricted pod's container: the image's numeric user, read-only root, no
    capabilities, no_new_privs, a tmpfs /tmp, its own namespaces (the network one unless ``host_network``),
    and ``binds`` (container path -> host directory) mounted read-write as volumes."""
    user, _, group = str(img.runtime["User"]).partition(":")
    uid, gid = int(user), int(group or 0)
    argv = [*(img.runtime.get("Entrypoint") or []), *(args if args is not None else img.runtime.get("Cmd") or [])]
    mounts: list[Obj] = [
        {"destination": "/proc", "type": "proc", "source": "proc"},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
         "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"]},
        {"destination": "/dev/shm", "type": "tmpfs", "source": "shm",
         "options": ["nosuid", "noexec", "nodev", "mode=1777", "size=65536k"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs", "options": ["nosuid", "noexec", "nodev", "ro"]},
        {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "nodev", "mode=1777", "size=65536k"]},
    ]
    mounts += [{"destination": dest, "type": "bind", "source": str(src), "options": ["rbind", "rw"]}
               for dest, src in (binds or {}).items()]
    namespaces = ["pid", "ipc", "uts", "mount"] + ([] if host_network else ["network"])
    return {
        "ociVersion": "1.0.2",
        "process": {
            "terminal": False, "user": {"uid": uid, "gid": gid}, "args": argv,
            "env": [f"{k}={v}" for k, v in img.env.items()], "cwd": img.runtime.get("WorkingDir") or "/",
            "noNewPrivileges": True,
            "capabilities": {k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")},
        },
        "root": {"path": str(rootfs), "readonly": True},
        "hostname": "image-test",
        "mounts": mounts,
        "linux": {
            "namespaces": [{"type": t} for t in namespaces],
            "maskedPaths": ["/proc/kcore", "/proc/keys", "/sys/firmware"],
            "readonlyPaths": ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"],
        },
    }


def run(img: Image, rootfs: Path, bundle: Path, args: list[str] | None = None, *, timeout: float = 300,
        host_network: bool = False, binds: dict[str, Path] | None = None) -> subprocess.CompletedProcess[str]:
    """Runs the image's ENTRYPOINT (+ ``args``, else its CMD) to completion (see ``runtime_spec``)."""
    bundle.mkdir(parents=True, exist_ok=True)
    spec = runtime_spec(img, rootfs, args, host_network=host_network, binds=binds)
    (bundle / "config.json").write_text(json.dumps(spec))
    name = f"image-test-{uuid.uuid4().hex[:12]}"
    try:
        return subprocess.run(["runc", "run", "--bundle", str(bundle), name], capture_output=True, text=True,
                              timeout=timeout, stdin=subprocess.DEVNULL)
    finally:
        subprocess.run(["runc", "delete", "--force", name], capture_output=True)


@contextlib.contextmanager
def running(img: Image, rootfs: Path, bundle: Path, args: list[str] | None = None, *,
            binds: dict[str, Path] | None = None) -> Iterator[subprocess.Popen[bytes]]:
    """The image's container running in the background on the host's network, its output in
    ``bundle/output.log``; killed and deleted on exit."""
    bundle.mkdir(parents=True, exist_ok=True)
    spec = runtime_spec(img, rootfs, args, host_network=True, binds=binds)
    (bundle / "config.json").write_text(json.dumps(spec))
    name = f"image-test-{uuid.uuid4().hex[:12]}"
    with open(bundle / "output.log", "wb") as out:
        proc = subprocess.Popen(["runc", "run", "--bundle", str(bundle), name], stdout=out, stderr=subprocess.STDOUT,
                                stdin=subprocess.DEVNULL)
    try:
        yield proc
    finally:
        subprocess.run(["runc", "kill", name, "KILL"], capture_output=True)
        try:
            proc.wait(timeout=60)
        finally:
            subprocess.run(["runc", "delete", "--force", name], capture_output=True)


def have_tools() -> None:
    missing = [t for t in ("umoci", "runc") if shutil.which(t) is None]
    if missing:
        raise RuntimeError(f"{', '.join(missing)} missing: ./scripts/bootstrap installs them (as root)")


def product_refs() -> dict[str, str]:
    """The images the bootstrap builds, by role: names as the product uses them (the CRD's default bookie image,
    the Helm chart's operator image, the Java bookie at its own pom's BookKeeper version, the audit image)."""
    import re

    from bookie_operator.models import BookieClusterSpec

    repo = Path(__file__).resolve().parents[2]
    bookie = str(BookieClusterSpec.model_fields["image"].default)
    tag = bookie.rsplit(":", 1)[1]
    pom = (repo / "hack" / "apache-bookkeeper" / "pom.xml").read_text()
    match = re.search(r"<bookkeeper.version>([^<]+)</bookkeeper.version>", pom)
    assert match, "hack/apache-bookkeeper/pom.xml has no bookkeeper.version"
    return {"bookie": bookie, "operator": f"bookie-fleet/operator:{tag}",
            "apache-bookkeeper": f"bookie-fleet/apache-bookkeeper:{match.group(1)}",
            "audit": f"bookie-fleet/audit:{tag}"}
