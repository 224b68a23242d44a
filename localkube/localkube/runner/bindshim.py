"""An LD_PRELOAD shim that makes a container's listening sockets bind to its pod IP.

Programs written for containers listen on 0.0.0.0 (or ::), which here would be every pod's address at once,
so two replicas could not both listen on port 3181. The shim rewrites ``bind()`` of the wildcard address
with a non-zero port to the pod's own ``127.0.x.y`` (``LOCALKUBE_POD_IP``), IPv6 wildcards to the
IPv4-mapped pod address, and leaves everything else alone. It applies to dynamically linked programs
(Python, the JVM); statically linked ones (Go) must bind to ``$(POD_IP)`` themselves. It is compiled
once with the machine's C compiler; without one, pods run without it (a warning is logged).
"""

from __future__ import annotations

import hashlib
import logging
import shutil
import subprocess
from pathlib import Path

log = logging.getLogger("localkube.runner")

SOURCE = r"""
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <dlfcn.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

typedef int (*bind_fn)(int, const struct sockaddr *, socklen_t);

int bind(int fd, const struct sockaddr *addr, socklen_t len) {
    static bind_fn real = NULL;
    if (!real) real = (bind_fn)dlsym(RTLD_NEXT, "bind");
    const char *ip = getenv("LOCALKUBE_POD_IP");
    if (ip && addr) {
        if (addr->sa_family == AF_INET && len >= (socklen_t)sizeof(struct sockaddr_in)) {
            const struct sockaddr_in *in = (const struct sockaddr_in *)addr;
            if (in->sin_addr.s_addr == htonl(INADDR_ANY) && in->sin_port != 0) {
                struct sockaddr_in copy = *in;
                if (inet_pton(AF_INET, ip, &copy.sin_addr) == 1)
                    return real(fd, (const struct sockaddr *)&copy, sizeof copy);
            }
        } else if (addr->sa_family == AF_INET6 && len >= (socklen_t)sizeof(struct sockaddr_in6)) {
            const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)addr;
            if (IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr) && in6->sin6_port != 0) {
                struct sockaddr_in6 copy = *in6;
                char mapped[64];
                snprintf(mapped, sizeof mapped, "::ffff:%s", ip);
                if (inet_pton(AF_INET6, mapped, &copy.sin6_addr) == 1) {
                    int rc = real(fd, (const struct sockaddr *)&copy, sizeof copy);
                    if (rc == 0) return rc;   /* an IPV6_V6ONLY socket refuses mapped addresses */
                }
            }
        }
    }
    return real(fd, addr, len);
}
"""


def build(directory: Path) -> Path | None:
    """The compiled shim (built into ``directory`` once per source version), or None without a compiler."""
    target = directory / f"bindshim-{hashlib.sha256(SOURCE.encode()).hexdigest()[:12]}.so"
    if target.exists():
        return target
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        log.warning("no C compiler: pods run without the bind shim; programs must listen on $(POD_IP) themselves")
        return None
    directory.mkdir(parents=True, exist_ok=True)
    source = directory / "bindshim.c"
    source.write_text(SOURCE)
    tmp = target.with_suffix(".tmp")
    result = subprocess.run([compiler, "-shared", "-fPIC", "-O2", "-o", str(tmp), str(source), "-ldl"],
                            capture_output=True, text=True)
    if result.returncode != 0:
        log.warning("bind shim not built (%s): %s", compiler, result.stderr.strip())
        return None
    tmp.replace(target)
    return target
