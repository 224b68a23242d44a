"""A small OCI image for tests of localkube's container runtime: Debian's busybox-static in a root filesystem
with an ``app`` user (uid 1000, gid 1000, also in group ``extra`` 3000), packed with umoci into the node's own
image layout (``<runner state>/images``, where the runner looks first).

``localkube-test/shell:1`` runs as ``USER 1000``; ``localkube-test/shell-root:1`` has no USER (root);
``localkube-test/listener:1`` adds a small dynamically linked program (this machine's C compiler and glibc)
that listens on 0.0.0.0 and prints the address it got, to see a container's own network namespace.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from pathlib import Path

BUSYBOX = Path("/bin/busybox")
SHELL_IMAGE = "localkube-test/shell:1"
ROOT_SHELL_IMAGE = "localkube-test/shell-root:1"
LISTENER_IMAGE = "localkube-test/listener:1"
LISTENER_SOURCE = r"""
#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>
int main(int argc, char **argv) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in addr = {0};
    socklen_t len = sizeof addr;
    addr.sin_family = AF_INET;
    addr.sin_port = htons(atoi(argv[1]));
    addr.sin_addr.s_addr = htonl(INADDR_ANY);
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) != 0 || listen(fd, 8) != 0) { perror("bind"); return 1; }
    getsockname(fd, (struct sockaddr *)&addr, &len);
    printf("listening on %s:%d\n", inet_ntoa(addr.sin_addr), ntohs(addr.sin_port));
    fflush(stdout);
    for (;;) close(accept(fd, NULL, NULL));
}
"""


def _umoci(*args: str) -> None:
    subprocess.run(["umoci", *args], check=True, capture_output=True, text=True)


def _rootfs(directory: Path) -> None:
    (directory / "bin").mkdir(parents=True)
    shutil.copy2(BUSYBOX, directory / "bin" / "busybox")
    applets = subprocess.run([str(BUSYBOX), "--list"], check=True, capture_output=True, text=True).stdout.split()
    for applet in applets:
        if applet != "busybox":
            os.symlink("busybox", directory / "bin" / applet)
    etc = directory / "etc"
    etc.mkdir()
    (etc / "passwd").write_text("root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n")
    (etc / "group").write_text("root:x:0:\napp:x:1000:\nextra:x:3000:app\n")
    for d in ("root", "home/app"):
        (directory / d).mkdir(parents=True)
    os.chown(directory / "home" / "app", 1000, 1000)


def _add_listener(directory: Path, scratch: Path) -> None:
    """The listener program and the glibc files it loads."""
    source = scratch / "listener.c"
    source.write_text(LISTENER_SOURCE)
    subprocess.run(["cc", "-O2", "-o", str(directory / "bin" / "listener"), str(source)], check=True)
    ldd = subprocess.run(["ldd", str(directory / "bin" / "listener")], check=True, capture_output=True,
                         text=True).stdout
    for word in ldd.split():
        if word.startswith("/"):
            target = directory / word.lstrip("/")
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(os.path.realpath(word), target)


def load_shell_images(runner_state: Path, scratch: Path) -> None:
    """Both test images in ``runner_state/images`` (once; later calls find them there)."""
    layout = runner_state / "images"
    layout.parent.mkdir(parents=True, exist_ok=True)
    with open(runner_state / "images.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        index = layout / "index.json"
        refs = {m.get("annotations", {}).get("org.opencontainers.image.ref.name")
                for m in (json.loads(index.read_text())["manifests"] if index.exists() else [])}
        if {SHELL_IMAGE, ROOT_SHELL_IMAGE, LISTENER_IMAGE} <= refs:
            return
        if not index.exists():
            _umoci("init", "--layout", str(layout))
        rootfs = scratch / "shell-rootfs"
        shutil.rmtree(rootfs, ignore_errors=True)
        _rootfs(rootfs)
        layer = scratch / "shell-layer.tar"
        subprocess.run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(layer), "."], check=True)
        _add_listener(rootfs, scratch)
        with_listener = scratch / "listener-layer.tar"
        subprocess.run(["tar", "-C", str(rootfs), "--numeric-owner", "-cf", str(with_listener), "."], check=True)
        _umoci("new", "--image", f"{layout}:base")
        for ref, user, tar in ((ROOT_SHELL_IMAGE, "", layer), (SHELL_IMAGE, "1000", layer),
                               (LISTENER_IMAGE, "1000", with_listener)):
            _umoci("raw", "add-layer", "--image", f"{layout}:base", "--tag", ref, str(tar))
            _umoci("config", "--image", f"{layout}:{ref}", "--config.user", user, "--config.cmd", "sh",
                   "--config.env", "PATH=/bin", "--config.workingdir", "/")
        _umoci("rm", "--image", f"{layout}:base")


def runc_containers(runner_state: Path) -> list[str]:
    """The runc containers of a runner (its own runc root)."""
    root = runner_state / "runc"
    if not root.is_dir():
        return []
    out = subprocess.run(["runc", "--root", str(root), "list", "--quiet"], check=True, capture_output=True,
                         text=True).stdout
    return out.split()


def runc_pid(runner_state: Path, container_id: str) -> int:
    """The host pid of a running container's first process (``containerID`` is ``runc://<id>``)."""
    out = subprocess.run(["runc", "--root", str(runner_state / "runc"), "state",
                          container_id.removeprefix("runc://")], check=True, capture_output=True, text=True).stdout
    return int(json.loads(out)["pid"])


def mounts_below(path: Path) -> list[str]:
    """Mount points at or below ``path`` on the machine."""
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text().splitlines()]
    return [p for p in points if p == str(path) or p.startswith(f"{path}/")]
