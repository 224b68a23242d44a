"""One pod on this node: volumes, containers as processes, probes, restarts, status, graceful deletion.

Each pod gets a ``PodWorker`` thread. The node loop hands it the newest pod object (``update``) or tells it
the pod is gone (``gone``); the worker owns everything else and writes the pod's status.

One module over the usual size: a pod's lifecycle is one state machine (start, probes, restarts, status,
deletion) over the same containers; what could move out did (``container``, ``containerspec``, ``security``,
``runtime``, ``termination``, ``volumes``, ``probes``).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from localkube import procs
from localkube.kapi import ApiError, ApiUnreachable
from localkube.runner import containerspec, images, security, termination
from localkube.runner.container import ContainerRun, now_rfc3339
from localkube.runner.dns import resolv_conf
from localkube.runner.envvars import EnvError, container_env, expand
from localkube.runner.imagestore import Image, ImageError
from localkube.runner.nodeapi import Node
from localkube.runner.podnet import PodNetworkError
from localkube.runner.probes import ProbeState, run_probe
from localkube.runner.runtime import CGROUP_PARENT, ContainerRuntimeError, ProcessSpec, bind_mount, oci_config
from localkube.runner.volumes import VolumeError, VolumeManager, VolumeNotReady, container_mounts

Obj = dict[str, Any]
log = logging.getLogger("localkube.runner")
PODEXEC = str(Path(__file__).with_name("podexec.py"))
BACKOFF_BASE, BACKOFF_MAX, BACKOFF_RESET = 2.0, 60.0, 60.0
PASSTHROUGH_ENV = ("BOOKIE_FLEET_BK_LIB", "JAVA_HOME", "BOOKIE_FLEET_CACHE")


class PodWorker(threading.Thread):
    def __init__(self, runner: Node, pod: Obj) -> None:
        meta = pod["metadata"]
        super().__init__(name=f"pod-{meta['namespace']}/{meta['name']}", daemon=True)
        self.runner = runner
        self.api = runner.api
        self.uid: str = meta["uid"]
        self.namespace: str = meta["namespace"]
        self.pod_name: str = meta["name"]
        self._pod = pod
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._gone = False
        self._shutdown_grace: float | None = None
        self.pod_dir = runner.state.pods / self.uid
        self.log_dir = runner.state.root / "logs" / f"{self.namespace}_{self.pod_name}_{self.uid}"
        self.pod_ip = ""
        self.start_time = ""
        self.containers: list[ContainerRun] = []
        self.init_containers: list[ContainerRun] = []
        self.volumes: VolumeManager | None = None
        self._published: Obj | None = None
        self._transitions: dict[str, tuple[str, str]] = {}
        self._events_sent: set[str] = set()
        self._pending_reason: tuple[str, str] | None = None

    # ----------------------------------------------------------------------------- from the node loop
    def update(self, pod: Obj) -> None:
        with self._lock:
            self._pod = pod
        self._wake.set()

    def gone(self) -> None:
        self._gone = True
        self._wake.set()

    def shutdown(self, grace: float) -> None:
        """The runner stops: stop containers (without deleting the pod) and end."""
        self._shutdown_grace = grace
        self._wake.set()

    @property
    def pod(self) -> Obj:
        with self._lock:
            return self._pod

    @property
    def restart_policy(self) -> str:
        return str(self.pod["spec"].get("restartPolicy", "Always"))

    def _sleep(self, seconds: float) -> None:
        self._wake.wait(seconds)
        self._wake.clear()

    def _should_stop(self) -> bool:
        return self._gone or self._shutdown_grace is not None or bool(
            self.pod["metadata"].get("deletionTimestamp"))

    # --------------------------------------------------------------------------------------- main
    def run(self) -> None:
        try:
            self.start_time = self.pod.get("status", {}).get("startTime") or now_rfc3339()
            self.pod_dir.mkdir(parents=True, exist_ok=True)
            self.log_dir.mkdir(parents=True, exist_ok=True)
            spec = self.pod["spec"]
            self.init_containers = [ContainerRun(c, True, self.log_dir / f"{c['name']}.log")
                                    for c in spec.get("initContainers", [])]
            self.containers = [ContainerRun(c, False, self.log_dir / f"{c['name']}.log")
                               for c in spec.get("containers", [])]
            if self._setup():
                self._supervise()
        except Exception:
            log.exception("pod %s/%s: worker failed", self.namespace, self.pod_name)
            self.event("Warning", "Failed", "localkube runner error, see the runner log")
        finally:
            self._finish()

    def _finish(self) -> None:
        deleting = bool(self.pod["metadata"].get("deletionTimestamp")) and not self._gone
        if self._shutdown_grace is not None:
            grace = self._shutdown_grace
        elif deleting:
            grace = float(self.pod["metadata"].get("deletionGracePeriodSeconds",
                                                   self.pod["spec"].get("terminationGracePeriodSeconds", 30)))
        else:
            grace = 2.0
        self._kill_all(grace, run_pre_stop=deleting)
        if self._shutdown_grace is not None:
            return   # the pod stays; a restarted runner takes it over (and asks for the same address)
        # The pod's resources are reclaimed before its object goes, as the kubelet does: whoever sees the
        # pod gone finds nothing of it left on the node.
        if not self.host_network:
            self.runner.network.teardown(self.uid)
        self.runner.state.forget_ip(self.uid)
        shutil.rmtree(self.pod_dir, ignore_errors=True)
        if deleting:
            with contextlib.suppress(ApiError):
                self.api.delete(f"/api/v1/namespaces/{self.namespace}/pods/{self.pod_name}",
                                {"apiVersion": "v1", "kind": "DeleteOptions", "gracePeriodSeconds": 0,
                                 "preconditions": {"uid": self.uid}})
        self.runner.worker_done(self.uid)

    # ------------------------------------------------------------------------------------- setup
    def _pending(self, reason: str, message: str, event_reason: str, event_type: str = "Warning") -> None:
        self._pending_reason = (reason, message)
        for c in [*self.init_containers, *self.containers]:
            if not c.started:
                c.state = {"waiting": {"reason": reason, "message": message}}
        self.event(event_type, event_reason, message, once=f"{event_reason}:{message}")
        self.publish()

    @property
    def host_network(self) -> bool:
        return bool(self.pod["spec"].get("hostNetwork"))

    @property
    def netns(self) -> Path:
        return self.runner.network.netns_path(self.uid, self.host_network)

    def _sandbox(self) -> None:
        """The pod's network namespace on the node's bridge (the node's own for hostNetwork): its address."""
        if self.host_network:
            self.pod_ip = self.runner.node_ip
            return
        self.pod_ip = self.runner.network.setup(self.uid, self.runner.state.pod_ip(self.uid))
        self.runner.state.remember_ip(self.uid, self.pod_ip)

    def _setup(self) -> bool:
        """Sandbox, images, volumes, environment: True when containers can start, False if the pod is going away."""
        while not self._should_stop():
            if not self.pod_ip:
                try:
                    self._sandbox()
                except PodNetworkError as exc:
                    self._pending("ContainerCreating", f"Failed to create pod sandbox: {exc}",
                                  "FailedCreatePodSandBox")
                    self._sleep(5)
                    continue
            try:
                self._resolve_images()
            except ImageError as exc:
                self._pending("ErrImagePull", str(exc), "Failed")
                self._sleep(30)
                continue
            try:
                self.volumes = VolumeManager(self.api, self._pod_view(), self.pod_dir, self.runner.capacity)
                self.volumes.prepare()
                self._apply_fs_group()
            except VolumeNotReady as exc:
                self._pending("ContainerCreating", str(exc), "FailedMount")
                self._sleep(1)
                continue
            except VolumeError as exc:
                self._pending("CreateContainerConfigError", str(exc), "FailedMount")
                self._sleep(30)
                continue
            self._pending_reason = None
            self.publish()
            return True
        return False

    def _image(self, c: ContainerRun) -> Image | None:
        """The OCI image the container runs from, or None for a host-command image (or without runc)."""
        if self.runner.runtime is None:
            return None
        return self.runner.images.find(c.spec.get("image", ""))

    def _resolve_images(self) -> None:
        """Every container's image found (an OCI image, unpacked now if new, or a host-command entry); an
        Event says which it is. ImageError names the first image that is neither."""
        for c in [*self.init_containers, *self.containers]:
            name = str(c.spec.get("image", ""))
            image = self._image(c)
            if image is not None:
                self.runner.images.rootfs(image)
                self.event("Normal", "Pulled", f'Container image "{name}" already present on machine',
                           once=f"pulled:{name}")
                continue
            entry = images.lookup(name)
            if entry is None:
                layouts = ", ".join(str(p) for p in self.runner.images.layouts)
                raise ImageError(
                    f'localkube has no command for image "{name}" (container {c.name}) and no OCI layout of the node '
                    f"holds it ({layouts}); mapped images: {images.known_images()} "
                    "(localkube/localkube/runner/images.py)")
            self.event("Normal", "HostCommand", f'image "{name}" runs as a host command ({entry.description}), '
                       "not in a container", once=f"host:{name}")

    def _apply_fs_group(self) -> None:
        """fsGroup ownership of the pod's writable volumes, as the kubelet applies it when mounting them."""
        assert self.volumes is not None
        pod_sc = self.pod["spec"].get("securityContext") or {}
        if pod_sc.get("fsGroup") is None:
            return
        for volume in self.pod["spec"].get("volumes") or []:
            path = self.volumes.paths.get(volume["name"])
            if path is None or not any(k in volume for k in security.FS_GROUP_VOLUMES):
                continue
            try:
                security.apply_fs_group(path, int(pod_sc["fsGroup"]), pod_sc.get("fsGroupChangePolicy", "Always"))
            except OSError as exc:
                # A read-only filesystem (or one that refuses chown) keeps its ownership: the container starts
                # and finds the volume as it is, as on a volume type whose ownership the kubelet does not manage.
                self.event("Warning", "FSGroupNotApplied", f"volume {volume['name']}: fsGroup ownership not "
                           f"applied: {exc}", once=f"fsgroup:{volume['name']}")

    def _pod_view(self) -> Obj:
        """The pod as the downward API sees it once running: with its IPs filled in."""
        pod = json.loads(json.dumps(self.pod))
        status = pod.setdefault("status", {})
        status["podIP"] = self.pod_ip
        status["podIPs"] = [{"ip": self.pod_ip}]
        status["hostIP"] = self.runner.node_ip
        status["hostIPs"] = [{"ip": self.runner.node_ip}]
        return pod

    # ------------------------------------------------------------------------------- containers
    def _base_env(self, entry: images.ImageEntry) -> dict[str, str]:
        env = {"PATH": ":".join(entry.path), "HOSTNAME": self.hostname, "HOME": "/root",
               **containerspec.kubernetes_service_env(*self.runner.kubernetes_service)}
        env.update({k: os.environ[k] for k in PASSTHROUGH_ENV if k in os.environ})
        env.update(entry.env)
        return env

    def _get_obj(self, plural: str) -> Any:
        def get(namespace: str, name: str) -> Obj | None:
            return self.api.get(f"/api/v1/namespaces/{namespace}/{plural}/{name}")

        return get

    def _prepare(self, c: ContainerRun) -> list[str] | None:
        """argv of the container, with env and mounts set on ``c``; None (and a waiting state) on error."""
        try:
            image = self._image(c)
        except ImageError as exc:
            c.state = {"waiting": {"reason": "ErrImagePull", "message": str(exc)}}
            return None
        if image is not None:
            return self._prepare_oci(c, image)
        c.cid, c.process, c.oci, c.rootfs = "", None, None, None
        entry = images.lookup(c.spec.get("image", ""))
        if entry is None:
            c.state = {"waiting": {"reason": "ErrImagePull", "message": f'image "{c.spec.get("image")}" not found'}}
            return None
        assert self.volumes is not None
        pod = self._pod_view()
        try:
            c.env = container_env(pod, c.spec, self._base_env(entry), get_configmap=self._get_obj("configmaps"),
                                  get_secret=self._get_obj("secrets"), node_capacity=self.runner.capacity)
            c.env["LOCALKUBE_POD"] = f"{self.namespace}/{self.pod_name}"
            k, _, v = self.runner.state.marker.partition("=")
            c.env[k] = v
            command = [expand(a, c.env) for a in c.spec.get("command") or []] or None
            args = [expand(a, c.env) for a in c.spec.get("args") or []] or None
            argv = images.resolve_argv(entry, command, args)
            c.mounts = sorted([*container_mounts(c.spec, self.volumes.paths, c.env),
                               termination.mount_for(c.spec, self.pod_dir)],
                              key=lambda m: str(m["target"]).count("/"))
        except (EnvError, images.CommandError, VolumeError, ApiError, ApiUnreachable) as exc:
            reason = "CreateContainerConfigError" if isinstance(exc, EnvError | VolumeError) else "CreateContainerError"
            c.state = {"waiting": {"reason": reason, "message": str(exc)}}
            self.event("Warning", "Failed", f"Error: {exc}", once=f"prep:{c.name}:{exc}")
            return None
        c.image = c.spec.get("image", "")
        # Mount points missing on the machine are created by podexec and left there, empty: removing one would
        # detach the mounts of every other pod using the same path (rmdir of a mount point in another mount
        # namespace detaches it there).
        c.cwd = c.spec.get("workingDir") or (entry.workdir if Path(entry.workdir).is_dir() else "/")
        return argv

    def _container_failed(self, c: ContainerRun, reason: str, exc: Exception) -> None:
        c.state = {"waiting": {"reason": reason, "message": str(exc)}}
        self.event("Warning", "Failed", f"Error: {exc}", once=f"prep:{c.name}:{exc}")

    def _prepare_oci(self, c: ContainerRun, image: Image) -> list[str] | None:
        """The container's runc spec on ``c`` (process, mounts, security) from its image and pod spec; its argv,
        or None (and a waiting state, as the kubelet's CreateContainerConfigError) on error."""
        assert self.volumes is not None
        pod, spec = self._pod_view(), c.spec
        image_user = security.ImageUser.parse(image.user)
        try:
            rootfs = self.runner.images.rootfs(image)
            security.verify_run_as_non_root(pod, spec, image_user)
            user = security.process_user(pod, spec, image_user, rootfs)
            c.env = container_env(pod, spec, containerspec.base_env(image, self.hostname,
                                                                   self.runner.kubernetes_service),
                                  get_configmap=self._get_obj("configmaps"), get_secret=self._get_obj("secrets"),
                                  node_capacity=self.runner.capacity)
            command = [expand(a, c.env) for a in spec.get("command") or []]
            args = [expand(a, c.env) for a in spec.get("args") or []]
            argv = containerspec.argv(image, command, args)
            if not argv:
                raise images.CommandError("the container has no command: the image has no ENTRYPOINT/CMD and the "
                                          "pod gives none")
            c.mounts = container_mounts(spec, self.volumes.paths, c.env)
            seccomp = containerspec.seccomp(pod, spec)
        except (EnvError, VolumeError, security.SecurityError) as exc:
            self._container_failed(c, "CreateContainerConfigError", exc)
            return None
        except (images.CommandError, ImageError, ApiError, OSError) as exc:
            self._container_failed(c, "CreateContainerError", exc)
            return None
        sc = spec.get("securityContext") or {}
        c.image, c.rootfs = spec.get("image", ""), rootfs
        c.cwd = spec.get("workingDir") or image.workdir
        c.cid = f"{self.uid}-{c.name}"
        c.process = ProcessSpec(argv, c.env, c.cwd, user, security.capabilities(spec),
                                security.no_new_privileges(spec))
        mounts = [*containerspec.pod_file_mounts(self.pod_dir, spec, self.hostname, self.write_hosts(),
                                                 self.write_resolv_conf()),
                  *(bind_mount(m["source"], m["target"], m["readonly"]) for m in c.mounts)]
        c.oci = oci_config(c.process, rootfs=rootfs, readonly=bool(sc.get("readOnlyRootFilesystem")),
                           hostname=self.hostname, mounts=mounts, seccomp=seccomp,
                           cgroups_path=f"/{CGROUP_PARENT}/{c.cid}", netns=self.netns)
        return argv

    @property
    def hostname(self) -> str:
        return str(self.pod["spec"].get("hostname") or self.pod_name)[:63]

    @property
    def fqdn(self) -> str | None:
        subdomain = self.pod["spec"].get("subdomain")
        return f"{self.hostname}.{subdomain}.{self.namespace}.svc.{self.runner.dns.domain}" if subdomain else None

    def write_hosts(self) -> Path:
        """The pod's /etc/hosts, as the kubelet writes it: localhost, the pod's own name (its FQDN first when it
        has a subdomain) and ``hostAliases``; other names are cluster DNS's."""
        own = f"{self.pod_ip}\t{self.fqdn} {self.hostname}" if self.fqdn else f"{self.pod_ip}\t{self.hostname}"
        aliases = [f"{a['ip']}\t{' '.join(a.get('hostnames') or [])}"
                   for a in self.pod["spec"].get("hostAliases") or []]
        lines = ["# Kubernetes-managed hosts file.", "127.0.0.1\tlocalhost",
                 "::1\tlocalhost ip6-localhost ip6-loopback", own, *aliases]
        return self._write_pod_file("etc-hosts", "\n".join(lines) + "\n")

    def write_resolv_conf(self) -> Path:
        """The pod's /etc/resolv.conf from its dnsPolicy and dnsConfig (cluster DNS by default)."""
        return self._write_pod_file("etc-resolv.conf", resolv_conf(self.pod, self.runner.dns, self.runner.node_resolv))

    def _write_pod_file(self, name: str, text: str) -> Path:
        """Write ``text`` in place (the file is bind-mounted into running containers), only if it changed."""
        path = self.pod_dir / name
        if not path.exists() or path.read_text() != text:
            with open(path, "w") as f:
                f.write(text)
        return path

    def _spawn(self, c: ContainerRun, argv: list[str], mounts: list[Obj], env: dict[str, str],
               cwd: str, log_path: Path, tag: str) -> subprocess.Popen[bytes]:
        spec_file = self.pod_dir / f"{tag}.json"
        pod_files = [{"source": str(self.write_hosts()), "target": "/etc/hosts", "readonly": False},
                     {"source": str(self.write_resolv_conf()), "target": "/etc/resolv.conf", "readonly": False}]
        targets = {m["target"] for m in mounts}
        mounts = sorted([*(f for f in pod_files if f["target"] not in targets), *mounts],
                        key=lambda m: str(m["target"]).count("/"))
        spec_file.write_text(json.dumps({"argv": argv, "env": env, "mounts": mounts, "cwd": cwd,
                                         "hostname": self.hostname, "netns": str(self.netns)}))
        log_path.parent.mkdir(parents=True, exist_ok=True)
        with open(log_path, "ab") as out:
            proc = subprocess.Popen([sys.executable, "-I", "-S", PODEXEC, str(spec_file)], stdout=out,
                                    stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                                    env={"LOCALKUBE_STATE": str(self.runner.state.root)})
        self.runner.state.register_proc(proc.pid, f"{self.namespace}/{self.pod_name}/{c.name}")
        return proc

    def _start(self, c: ContainerRun) -> None:
        key = "initContainers" if c.init else "containers"
        c.spec = next((s for s in self.pod["spec"].get(key, []) if s["name"] == c.name), c.spec)
        argv = self._prepare(c)
        if argv is not None and c.oci is not None:
            try:
                c.proc = self._spawn_oci(c)
            except (ContainerRuntimeError, OSError) as exc:
                self._container_failed(c, "CreateContainerError", exc)
                argv = None
        elif argv is not None:
            termination.clear(self.pod_dir, c.name)
            c.proc = self._spawn(c, argv, c.mounts, c.env, c.cwd, c.log_path, c.name)
        if argv is None:
            c.backoff_until = time.monotonic() + 2
            return
        c.started_mono = time.monotonic()
        c.started_at = now_rfc3339()
        c.state = {"running": {"startedAt": c.started_at}}
        c.ready = False
        c.started = "startupProbe" not in c.spec
        c.startup = ProbeState(c.spec["startupProbe"]) if "startupProbe" in c.spec else None
        c.readiness = ProbeState(c.spec["readinessProbe"]) if "readinessProbe" in c.spec else None
        c.liveness = ProbeState(c.spec["livenessProbe"]) if "livenessProbe" in c.spec else None
        self.event("Normal", "Started", f"Started container {c.name}")

    def _bundle(self, c: ContainerRun) -> Path:
        return self.pod_dir / "bundles" / c.name

    def _spawn_oci(self, c: ContainerRun) -> subprocess.Popen[bytes]:
        """Start ``c`` under runc: a fresh bundle (and writable overlay unless the root is read-only)."""
        runtime = self.runner.runtime
        assert runtime is not None and c.oci is not None and c.rootfs is not None
        runtime.delete(c.cid)
        writable = not c.oci["root"]["readonly"]
        runtime.prepare_bundle(self._bundle(c), c.oci, c.rootfs, writable)
        proc = runtime.run(c.cid, self._bundle(c), c.log_path)
        self.runner.state.register_proc(proc.pid, f"{self.namespace}/{self.pod_name}/{c.name}")
        runtime.wait_started(c.cid, proc)   # reported running once it runs, as the kubelet does
        return proc

    def _release_oci(self, c: ContainerRun) -> None:
        """runc's container deleted, the overlay unmounted, the bundle removed."""
        if self.runner.runtime is not None and c.cid:
            self.runner.runtime.delete(c.cid)
            self.runner.runtime.release_bundle(self._bundle(c))

    def _stop_container(self, c: ContainerRun, grace: float) -> None:
        """SIGTERM, then SIGKILL after ``grace`` seconds: ``runc kill`` for a container, the process group else."""
        if c.proc is None:
            return
        runtime = self.runner.runtime
        if not c.cid or runtime is None:
            procs.stop_group(c.proc.pid, grace=grace)
            return
        runtime.kill(c.cid, "TERM")
        try:
            c.proc.wait(grace)
        except subprocess.TimeoutExpired:
            runtime.kill(c.cid, "KILL", all_processes=True)
            with contextlib.suppress(subprocess.TimeoutExpired):
                c.proc.wait(30)

    def exec_in(self, c: ContainerRun, command: list[str], timeout: float) -> int:
        if c.cid and c.process is not None and self.runner.runtime is not None:
            process = ProcessSpec(command, c.process.env, c.process.cwd, c.process.user, c.process.capabilities,
                                  c.process.no_new_privileges)
            spec_file = self.pod_dir / f"exec-{c.name}-{threading.get_ident()}.json"
            return self.runner.runtime.exec(c.cid, process, spec_file, self.log_dir / f"{c.name}.exec.log", timeout)
        entry = images.lookup(c.image or c.spec.get("image", ""))
        path = entry.path if entry else images.SYSTEM_PATH
        argv = [images.resolve_executable(command[0], path), *command[1:]]
        tag = f"exec-{c.name}-{threading.get_ident()}"
        proc = self._spawn(c, argv, c.mounts, c.env, c.cwd, self.log_dir / f"{c.name}.exec.log",
                           tag)
        try:
            return proc.wait(timeout)
        except subprocess.TimeoutExpired:
            procs.stop_group(proc.pid, grace=0.0, sig=9)
            return -1
        finally:
            self.runner.state.unregister_proc(proc.pid)

    def _on_exit(self, c: ContainerRun, code: int) -> None:
        assert c.proc is not None
        self.runner.state.unregister_proc(c.proc.pid)
        if c.cid:
            self._release_oci(c)
        else:
            procs.stop_group(c.proc.pid, grace=0.5)   # leftovers of the container's process group
        exit_code = code if code >= 0 else 128 - code
        finished = now_rfc3339()
        c.state = {"terminated": {"exitCode": exit_code, "reason": "Completed" if exit_code == 0 else "Error",
                                  "startedAt": c.started_at, "finishedAt": finished,
                                  "containerID": c.status().get("containerID", "")}}
        message = termination.read_message(c.spec, self.pod_dir, c.log_path, exit_code)
        if message:
            c.state["terminated"]["message"] = message
        c.ready = False
        ran = time.monotonic() - c.started_mono
        c.crashes = 0 if ran >= BACKOFF_RESET else c.crashes + 1
        policy = "Always" if c.sidecar else self.restart_policy
        restart = policy == "Always" or (policy == "OnFailure" and exit_code != 0)
        if c.init and not c.sidecar and exit_code == 0:
            restart = False
        if restart:
            delay = min(BACKOFF_MAX, BACKOFF_BASE * 2 ** max(0, c.crashes - 1)) if c.crashes else 0.0
            c.backoff_until = time.monotonic() + delay
            if delay:
                self.event("Warning", "BackOff", f"Back-off restarting failed container {c.name}")
        else:
            c.done = True
        log.info("pod %s/%s container %s exited with %s (restart: %s)", self.namespace, self.pod_name, c.name,
                 exit_code, restart)

    def _restart_due(self, c: ContainerRun, now: float) -> None:
        if now < c.backoff_until:
            if "terminated" in c.state and c.crashes:
                c.last_state, c.state = c.state, {"waiting": {
                    "reason": "CrashLoopBackOff",
                    "message": f"back-off {int(c.backoff_until - now) + 1}s restarting failed container={c.name} "
                               f"pod={self.pod_name}_{self.namespace}({self.uid})"}}
            return
        if "terminated" in c.state:
            c.last_state = c.state
        if c.proc is not None:
            c.restart_count += 1
        self._start(c)

    def _probe(self, c: ContainerRun, now: float) -> None:
        if not c.running:
            return
        pod_ip = self.pod_ip

        def exec_probe(command: list[str], timeout: float) -> int:
            return self.exec_in(c, command, timeout)

        if c.startup is not None and c.startup.result is not True:
            if c.startup.due(now):
                ok, msg = run_probe(c.startup.probe, pod_ip, c.spec, exec_probe)
                c.startup.record(ok, msg, time.monotonic())
                if c.startup.result is True:
                    c.started = True
                elif c.startup.result is False:
                    self.event("Warning", "Unhealthy", f"Startup probe failed: {c.startup.message}")
                    self._kill_container(c, "failed startup probe")
            return
        if c.readiness is not None and c.readiness.due(now):
            ok, msg = run_probe(c.readiness.probe, pod_ip, c.spec, exec_probe)
            c.readiness.record(ok, msg, time.monotonic())
            if not ok:
                self.event("Warning", "Unhealthy", f"Readiness probe failed: {msg}", once=f"ready:{c.name}:{msg}")
        c.ready = c.readiness.result is True if c.readiness is not None else True
        if c.liveness is not None and c.liveness.due(now):
            ok, msg = run_probe(c.liveness.probe, pod_ip, c.spec, exec_probe)
            c.liveness.record(ok, msg, time.monotonic())
            if c.liveness.result is False:
                self.event("Warning", "Unhealthy", f"Liveness probe failed: {c.liveness.message}")
                self._kill_container(c, "failed liveness probe")

    def _kill_container(self, c: ContainerRun, why: str) -> None:
        if c.proc is None or not c.running:
            return
        self.event("Normal", "Killing", f"Container {c.name} {why}, will be restarted")
        grace = float(self.pod["spec"].get("terminationGracePeriodSeconds", 30))
        self._stop_container(c, grace)

    def _kill_all(self, grace: float, run_pre_stop: bool = False) -> None:
        running = [c for c in [*self.containers, *self.init_containers] if c.running]
        if run_pre_stop:
            for c in running:
                hook = c.spec.get("lifecycle", {}).get("preStop", {})
                if "exec" in hook:
                    with contextlib.suppress(Exception):
                        self.exec_in(c, list(hook["exec"]["command"]), grace)
        for c in running:
            self.event("Normal", "Killing", f"Stopping container {c.name}")
        threads = [threading.Thread(target=self._stop_container, args=(c, grace)) for c in running]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        for c in [*self.containers, *self.init_containers]:
            if c.proc is not None:
                c.proc.poll()
                self.runner.state.unregister_proc(c.proc.pid)
            self._release_oci(c)

    def _supervise(self) -> None:
        last_refresh = time.monotonic()
        while not self._should_stop():
            now = time.monotonic()
            # Init containers, one at a time (sidecars are started and then supervised like the others).
            pending_init = next((c for c in self.init_containers if not c.done and not (c.sidecar and c.proc)), None)
            active = [c for c in self.init_containers if c.sidecar and c.proc is not None]
            if pending_init is not None:
                active.append(pending_init)
            else:
                active.extend(self.containers)
            for c in active:
                if c.proc is not None and not c.running:
                    if "running" in c.state:
                        self._on_exit(c, c.proc.returncode)
                elif c.running and c.image and c.image != self._current_image(c):
                    self._kill_container(c, "definition changed")
                    continue
                if not c.done and not c.running and not (c.init and not c.sidecar and "terminated" in c.state
                                                         and c.state["terminated"]["exitCode"] == 0):
                    if self.restart_policy == "Never" and c.proc is not None and not c.sidecar:
                        c.done = True
                    else:
                        self._restart_due(c, now)
                self._probe(c, now)
            if pending_init is not None and pending_init.done and \
                    pending_init.state.get("terminated", {}).get("exitCode", 1) != 0:
                # A failed init container with restartPolicy Never fails the pod.
                for c in self.containers:
                    c.done = True
            if now - last_refresh > 10 and self.volumes is not None:
                last_refresh = now
                self.volumes.pod = self._pod_view()
                with contextlib.suppress(ApiError, OSError):
                    self.volumes.refresh()
            self.publish()
            if self._terminal():
                # Succeeded/Failed pods keep their status; nothing more to run. A final status the API server
                # did not take is sent again: it is the only news that the pod ended.
                while not self._should_stop():
                    self._sleep(5)
                    self.publish()
                return
            self._sleep(0.25)

    def _current_image(self, c: ContainerRun) -> str:
        key = "initContainers" if c.init else "containers"
        for spec in self.pod["spec"].get(key, []):
            if spec["name"] == c.name:
                return str(spec.get("image", ""))
        return c.image

    def _terminal(self) -> bool:
        return all(c.done for c in self.containers) and bool(self.containers)

    # ------------------------------------------------------------------------------------ status
    def _phase(self) -> str:
        if self._terminal():
            failed = any(c.state.get("terminated", {}).get("exitCode", 1) != 0 for c in self.containers)
            init_failed = any(c.done and c.state.get("terminated", {}).get("exitCode", 0) != 0
                              for c in self.init_containers if not c.sidecar)
            return "Failed" if failed or init_failed else "Succeeded"
        if any(c.proc is not None for c in self.containers):
            return "Running"
        return "Pending"

    def _condition(self, kind: str, ok: bool, reason: str = "", message: str = "") -> Obj:
        status = "True" if ok else "False"
        previous = self._transitions.get(kind)
        if previous is None or previous[0] != status:
            self._transitions[kind] = (status, now_rfc3339())
        cond: Obj = {"type": kind, "status": status, "lastProbeTime": None,
                     "lastTransitionTime": self._transitions[kind][1]}
        if reason and not ok:
            cond["reason"] = reason
        if message and not ok:
            cond["message"] = message
        return cond

    def build_status(self) -> Obj:
        initialized = all(c.done or (c.sidecar and c.started) for c in self.init_containers)
        containers_ready = all(c.ready for c in self.containers)
        gates = [g["conditionType"] for g in self.pod["spec"].get("readinessGates") or []]
        current = {c["type"]: c for c in self.pod.get("status", {}).get("conditions") or []}
        gates_ok = all(current.get(g, {}).get("status") == "True" for g in gates)
        not_ready = [c.name for c in self.containers if not c.ready]
        msg = f"containers with unready status: [{' '.join(not_ready)}]" if not_ready else ""
        ours = {"PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled"}
        conditions = [
            self._condition("PodReadyToStartContainers", self._pending_reason is None or bool(self.volumes)),
            self._condition("Initialized", initialized, "ContainersNotInitialized",
                            "containers with incomplete status: "
                            f"[{' '.join(c.name for c in self.init_containers if not c.done)}]"),
            self._condition("Ready", containers_ready and gates_ok and initialized, "ContainersNotReady", msg),
            self._condition("ContainersReady", containers_ready and initialized, "ContainersNotReady", msg),
            self._condition("PodScheduled", True),
        ]
        conditions += [c for t, c in current.items() if t not in ours]
        status: Obj = {
            "phase": self._phase(), "conditions": conditions,
            "hostIP": self.runner.node_ip, "hostIPs": [{"ip": self.runner.node_ip}],
            "startTime": self.start_time,
            "containerStatuses": [c.status() for c in self.containers],
        }
        if self.pod_ip:
            status.update({"podIP": self.pod_ip, "podIPs": [{"ip": self.pod_ip}]})
        if self.init_containers:
            status["initContainerStatuses"] = [c.status() for c in self.init_containers]
        return status

    def publish(self) -> None:
        if self._gone:
            return
        status = self.build_status()
        if status == self._published:
            return
        try:
            self.api.merge_patch(f"/api/v1/namespaces/{self.namespace}/pods/{self.pod_name}/status",
                                 {"metadata": {"uid": self.uid}, "status": status})
            self._published = status
        except ApiError as exc:
            if exc.status in (404, 409):
                return
            log.warning("pod %s/%s: status update failed: %s", self.namespace, self.pod_name, exc)
        except ApiUnreachable as exc:
            # A dropped connection or a timeout: the status is sent again on the next pass. Letting it end the
            # worker would stop the pod's containers and run them again, even those that must run once.
            log.warning("pod %s/%s: status update not sent: %r", self.namespace, self.pod_name, exc)

    def event(self, kind: str, reason: str, message: str, once: str | None = None) -> None:
        if once is not None:
            if once in self._events_sent:
                return
            self._events_sent.add(once)
        self.runner.emit_event(self.pod, kind, reason, message)
