"""Container launcher, run by the pod runner in place of a container runtime (standard library only).

``python -I -S podexec.py SPEC.json``: dies with its parent (PR_SET_PDEATHSIG), joins the pod's network
namespace, enters a new mount and UTS namespace, takes the pod's hostname, bind-mounts the pod's volumes
(and its /etc/hosts, /etc/resolv.conf and termination message file) at the container's paths (read-only
where asked), changes to the working directory and execs the container's command with exactly the
environment of the spec.

A mount point that does not exist under /dev (``/dev/termination-log``) is made in a private /dev: a tmpfs
holding binds of the host's device nodes, so the machine's own /dev never gets the container's files.
"""

import ctypes
import json
import os
import signal
import sys

CLONE_NEWNS = 0x00020000
CLONE_NEWUTS = 0x04000000
CLONE_NEWNET = 0x40000000
MS_RDONLY = 1
MS_REMOUNT = 32
MS_BIND = 4096
MS_REC = 16384
MS_MOVE = 8192
MS_PRIVATE = 1 << 18
PR_SET_PDEATHSIG = 1

libc = ctypes.CDLL(None, use_errno=True)


def check(result: int, what: str) -> None:
    if result != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"{what}: {os.strerror(errno)}")


def bind(source: str, target: str) -> None:
    if os.path.isdir(source):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        if not os.path.exists(target):
            open(target, "a").close()
    check(libc.mount(source.encode(), target.encode(), None, MS_BIND | MS_REC, None), f"bind {source} {target}")


def private_dev(staging: str) -> None:
    os.makedirs(staging, exist_ok=True)
    check(libc.mount(b"tmpfs", staging.encode(), b"tmpfs", 0, b"mode=755"), "tmpfs for /dev")
    for name in os.listdir("/dev"):
        source, target = os.path.join("/dev", name), os.path.join(staging, name)
        if os.path.islink(source):
            os.symlink(os.readlink(source), target)
        else:
            bind(source, target)
    check(libc.mount(staging.encode(), b"/dev", None, MS_MOVE, None), "move the private /dev")


def needs_private_dev(mounts: list) -> bool:
    return any(m["target"].startswith("/dev/") and not os.path.exists(m["target"]) for m in mounts)


def make_readonly(target: str) -> None:
    check(libc.mount(None, target.encode(), None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_REC, None),
          f"read-only {target}")


def main() -> int:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() == 1:  # the runner died before prctl
        return 1
    if spec.get("netns"):
        fd = os.open(spec["netns"], os.O_RDONLY)
        try:
            check(libc.setns(fd, CLONE_NEWNET), f"setns {spec['netns']}")
        finally:
            os.close(fd)
    mounts = spec.get("mounts", [])
    hostname = spec.get("hostname")
    if mounts or hostname:
        check(libc.unshare(CLONE_NEWNS | (CLONE_NEWUTS if hostname else 0)), "unshare")
        check(libc.mount(b"none", b"/", None, MS_REC | MS_PRIVATE, None), "make / private")
        if hostname:
            name = hostname.encode()
            check(libc.sethostname(name, len(name)), "sethostname")
        if needs_private_dev(mounts):
            private_dev(sys.argv[1] + ".dev")
        # All binds first (mount points of nested mounts may have to be created), then the read-only ones.
        for m in mounts:
            bind(m["source"], m["target"])
        for m in mounts:
            if m.get("readonly"):
                make_readonly(m["target"])
    cwd = spec.get("cwd") or "/"
    try:
        os.makedirs(cwd, exist_ok=True)
        os.chdir(cwd)
    except OSError as exc:
        print(f"localkube: working directory {spec.get('cwd')}: {exc}", file=sys.stderr)
        return 127
    argv = spec["argv"]
    try:
        os.execve(argv[0], argv, spec["env"])
    except OSError as exc:
        print(f"localkube: cannot run {argv[0]}: {exc}", file=sys.stderr)
    return 127


if __name__ == "__main__":
    sys.exit(main())
