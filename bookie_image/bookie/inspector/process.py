"""``bookie inspect serve``: the inspector's process, started in the pod of the bookie it inspects.

It opens nothing for writing, joins no ensemble and never talks to the bookie's port: its HTTP server (the admin
API's credential check and HTTPS, on ``httpServerHost:httpServerPort`` of its own configuration) and a
ZooKeeper session that only reads are all it runs. It starts even while a volume or ZooKeeper is missing, and is
not ready (``/api/v1/bookie/is_ready`` says which) until both can be read.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal

import uvloop
from aiohttp import web

from bookie import metrics
from bookie.config import BookieConfig
from bookie.http.api import build_inspector_app
from bookie.http.auth import AdminAuth, auth_middleware
from bookie.http.https import HttpsConfigError, ServerCertificates, keep_certificates_fresh
from bookie.inspector.service import Inspector
from bookie.log_reads import EntryLogReads
from bookie.metadata.store import MetadataStore
from bookie.termination import INVALID_CONFIG, PORT_IN_USE, StartFailure
from bookie.tokens import TokenFileError

log = logging.getLogger(__name__)


class InspectorApi:
    """``bookie.http.backend.InspectorBackend`` over one ``Inspector``."""

    def __init__(self, inspector: Inspector, reads: EntryLogReads) -> None:
        self.inspector = inspector
        self.entry_log_files = reads
        self.gc = inspector  # the explanation of the inspected bookie's disk

    @property
    def bookie_id(self) -> str:
        return self.inspector.bookie_id

    async def readiness(self) -> str | None:
        return await self.inspector.readiness()

    def metrics_text(self) -> tuple[bytes, str]:
        return self.inspector.metrics_text()


async def serve(conf: BookieConfig, stop: asyncio.Event) -> None:
    """Serve until ``stop`` is set; raises ``StartFailure`` when the configuration cannot work."""
    auth = AdminAuth.from_config(conf)
    try:
        await auth.start()
        certificates = await asyncio.to_thread(ServerCertificates.from_config, conf)
    except (TokenFileError, HttpsConfigError) as exc:
        raise StartFailure(str(exc), INVALID_CONFIG) from None
    inspector = Inspector(conf, MetadataStore.from_config(conf))
    reads = EntryLogReads(conf, inspector.volumes)
    runner = web.AppRunner(build_inspector_app(InspectorApi(inspector, reads), auth), access_log=None)
    metrics_runner: web.AppRunner | None = None
    await runner.setup()
    try:
        site = web.TCPSite(runner, conf.effective_http_server_host, conf.http_server_port,
                           ssl_context=certificates.context if certificates else None)
        try:
            await site.start()
        except OSError as exc:
            raise StartFailure(f"cannot listen on {conf.effective_http_server_host}:{conf.http_server_port}: "
                               f"{exc.strerror}", PORT_IN_USE) from None
        if conf.prometheus_stats_http_enable:
            try:
                metrics_runner = await metrics.serve_dedicated_port(conf, inspector.metrics_text,
                                                                    [auth_middleware(auth)])
            except OSError as exc:
                raise StartFailure(f"cannot listen on {conf.prometheus_stats_http_address}:"
                                   f"{conf.prometheus_stats_http_port} for /metrics: {exc.strerror}",
                                   PORT_IN_USE) from None
        log.info("inspector for bookie %s serving on %s:%d, reading %s", inspector.bookie_id,
                 conf.effective_http_server_host, conf.http_server_port,
                 ", ".join(str(d) for d in conf.ledger_directories))
        tasks = [asyncio.create_task(inspector.run(), name="inspect")]
        if certificates is not None:  # rotated by cert-manager like the bookies': no restart needed
            tasks.append(asyncio.create_task(keep_certificates_fresh(certificates, conf), name="https-certificates"))
        await stop.wait()
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
    finally:
        if metrics_runner is not None:
            await metrics_runner.cleanup()
        await runner.cleanup()
        reads.close()
        await inspector.close()


async def _main(conf: BookieConfig) -> None:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    await serve(conf, stop)


def run_inspector(conf: BookieConfig) -> int:
    """Serve until SIGTERM/SIGINT; raises ``StartFailure`` when it cannot start."""
    uvloop.run(_main(conf))
    return 0
