"""One container of a pod as the worker tracks it: its spec, process, state, probes and what it runs from."""

from __future__ import annotations

import datetime as dt
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from localkube.runner.probes import ProbeState
from localkube.runner.runtime import ProcessSpec

Obj = dict[str, Any]


def now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class ContainerRun:
    spec: Obj
    init: bool
    log_path: Path
    proc: subprocess.Popen[bytes] | None = None
    started_mono: float = 0.0
    started_at: str = ""
    restart_count: int = 0
    crashes: int = 0
    state: Obj = field(default_factory=lambda: {"waiting": {"reason": "ContainerCreating"}})
    last_state: Obj = field(default_factory=dict)
    ready: bool = False
    started: bool = False
    done: bool = False            # terminated and will not restart
    backoff_until: float = 0.0
    readiness: ProbeState | None = None
    liveness: ProbeState | None = None
    startup: ProbeState | None = None
    mounts: list[Obj] = field(default_factory=list)
    env: dict[str, str] = field(default_factory=dict)
    image: str = ""
    cwd: str = "/"
    # Set when the container runs from an OCI image under runc (else it is a host command).
    cid: str = ""
    process: ProcessSpec | None = None
    oci: Obj | None = None
    rootfs: Path | None = None

    @property
    def name(self) -> str:
        return str(self.spec["name"])

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    @property
    def sidecar(self) -> bool:
        return self.init and self.spec.get("restartPolicy") == "Always"

    def status(self) -> Obj:
        status: Obj = {"name": self.name, "state": self.state, "lastState": self.last_state, "ready": self.ready,
                       "restartCount": self.restart_count, "image": self.spec.get("image", ""),
                       "imageID": f"localkube://{self.spec.get('image', '')}", "started": self.started}
        if self.cid:
            status["containerID"] = f"runc://{self.cid}"
        elif self.proc is not None:
            status["containerID"] = f"localkube://{self.proc.pid}"
        return status
