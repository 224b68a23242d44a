"""BookieCluster spec and status: the single source of the CRD's OpenAPI schema (see ``crd.py``).

Field names are camelCase on the wire (aliases) and snake_case in Python. Every constraint that the API
server can check is expressed here (ranges, patterns, and ``x-kubernetes-validations`` CEL rules for the
relations between fields), and the same rules are checked by pydantic when the operator parses a spec, so
an object that slipped past an older CRD still becomes a readable condition instead of a crash.

One module over the usual size on purpose: it is the CRD's schema, read top to bottom as the API reference
of the resource, and each field's description, type, range and CEL rule sit next to each other.
"""

from __future__ import annotations

import difflib
import re
from typing import Annotated, Any, Literal

from bookie.config import BookieConfig
from bookie.termination import IMPLEMENTATION_ENV
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from bookie_operator import cron, java_config

GROUP = "bookie-fleet.dev"
# Set to a new value (a timestamp, say) on a BookieCluster, it asks for a storage audit run now.
AUDIT_REQUEST_ANNOTATION = f"{GROUP}/audit-request"
VERSION = "v1beta1"                 # served and stored
# Older versions still served, with the same schema (so no conversion webhook: the API server only rewrites
# apiVersion), marked deprecated: each request through them gets a warning naming VERSION.
DEPRECATED_VERSIONS = ("v1alpha1",)
KIND = "BookieCluster"
PLURAL = "bookieclusters"
SINGULAR = "bookiecluster"
SHORT_NAMES = ["bkc"]

BOOKIE_PORT = 3181
HTTP_PORT = 8080
# bookie-fleet's bookie image (the bookie, and the inspector beside Apache BookKeeper's bookies); its tag is the
# project's version (scripts/bootstrap.d/images.sh checks it).
BOOKIE_IMAGE = "bookie-fleet/bookie:0.1.0"
# The inspector beside each Apache BookKeeper bookie: its API (explain, entry-log files) and its /metrics.
INSPECTOR_PORT = 8081
INSPECTOR_METRICS_PORT = 8001

QUANTITY_PATTERN = r"^[0-9]+(\.[0-9]+)?(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?$"
ZK_PATTERN = r"^[A-Za-z0-9.\-]+:[0-9]{1,5}(,[A-Za-z0-9.\-]+:[0-9]{1,5})*$"
ZNODE_PATTERN = r"^(/[A-Za-z0-9_.\-]+)+$"
HHMM_PATTERN = r"^([01][0-9]|2[0-3]):[0-5][0-9]$"
UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
DNS_LABEL_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
DNS_SUBDOMAIN_PATTERN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
ENV_NAME_PATTERN = r"^[-._a-zA-Z][-._a-zA-Z0-9]*$"

# Images whose implementation is known from their repository, whatever the registry in front and the tag or
# digest behind: the project's own and Apache's. spec.image naming one of them with the other spec.implementation
# is refused (the CRD's CEL rule and the operator). Any other image is checked when its bookie starts: the pod is
# built for spec.implementation, and an image that does not run that bookie stops with a WrongImage termination
# message (builders.PYTHON_START, bookie.termination.wrong_image).
KNOWN_IMAGES: dict[str, tuple[str, ...]] = {
    "bookie-fleet": ("bookie-fleet/bookie",),
    "apache-bookkeeper": ("bookie-fleet/apache-bookkeeper", "apache/bookkeeper", "apachepulsar/pulsar",
                          "apachepulsar/pulsar-all"),
}


IMAGE_MISMATCH = ("spec.image is an image of the other implementation than spec.implementation (bookie-fleet/bookie "
                  "runs bookie-fleet's bookie; bookie-fleet/apache-bookkeeper, apache/bookkeeper and apachepulsar/"
                  "pulsar Apache BookKeeper's): change them together")

def known_image_pattern(implementation: str) -> str:
    """An RE2 (and Python) regular expression matching the known images of an implementation."""
    names = "|".join(KNOWN_IMAGES[implementation])
    return f"^([^@]*/)?({names})(:[^/@]*)?(@.*)?$"


def image_implementation(image: str) -> str | None:
    """The implementation a known image runs (``KNOWN_IMAGES``); None for any other image."""
    return next((impl for impl in KNOWN_IMAGES if re.fullmatch(known_image_pattern(impl), image)), None)


def _image_rule() -> tuple[str, str]:
    other = {"bookie-fleet": "apache-bookkeeper", "apache-bookkeeper": "bookie-fleet"}
    rule = " && ".join(f"!(self.implementation == '{impl}' && self.image.matches('{known_image_pattern(theirs)}'))"
                       for impl, theirs in other.items())
    return rule, IMAGE_MISMATCH


# The Apache BookKeeper lines the operator manages (java_config.SUPPORTED_LINES, "4.17,4.18"), told to the Java
# bookie image's entrypoint (hack/apache-bookkeeper), which refuses to start another with an UnsupportedVersion
# termination message.
BOOKKEEPER_VERSIONS_ENV = "BOOKIE_FLEET_BOOKKEEPER_VERSIONS"
# What the operator puts into the bookie pod itself: escape hatches may add to it, never replace it.
OWNED_ENV = {"POD_NAME", "POD_NAMESPACE", "POD_IP", "BOOKIE_ID", "BOOKIE_EXTRA_OPTS", IMPLEMENTATION_ENV,
             BOOKKEEPER_VERSIONS_ENV}
OWNED_VOLUME_PREFIXES = ("config", "run", "journal-", "ledgers-", "tls-", "token-hashes", "zk-digest")
OWNED_VOLUME_NAMES = ("tmp",)
OWNED_MOUNT_ROOTS = ("/bookie", "/opt/bookie", "/opt/bookkeeper/conf")
OWNED_MOUNT_PATHS = ("/tmp",)   # the bookie's writable /tmp (the root filesystem is read-only)

# Keys of bookie.config.BookieConfig the operator writes itself: they cannot be overridden in spec.config
# (the value points at the spec field that controls them, or says why the operator owns it).
OWNED_CONFIG_KEYS: dict[str, str] = {
    "bookiePort": "the operator uses 3181",
    "bookieId": "the operator gives each pod a stable hostname-based id",
    "advertisedAddress": "set per pod to the pod IP",
    "listeningAddress": "set per pod to the pod IP",
    "allowLoopback": "set by the operator",
    "metadataServiceUri": "set spec.metadataService instead",
    "zkServers": "set spec.metadataService.zkServers instead",
    "zkLedgersRootPath": "set spec.metadataService.ledgersRoot instead",
    "journalDirectories": "set spec.storage.journal instead",
    "ledgerDirectories": "set spec.storage.ledgers instead",
    "indexDirectories": "index files live on the ledger volumes",
    "httpServerEnabled": "the operator needs the admin REST API",
    "httpServerPort": "the operator uses 8080",
    "httpServerHost": "set per pod to the pod IP",
    "httpServerAuthTokenFile": "the operator mounts the hashes of the admin token Secret's tokens "
                               "(spec.adminApi.tokenSecretName) from <cluster>-token-hashes",
    "httpServerReadTokenFile": "the operator mounts the hashes of the audit's read-scope token (<cluster>-audit-token) "
                               "from <cluster>-token-hashes",
    "httpServerMetricsTokenFile": "set spec.adminApi.metricsTokenSecretName: the operator mounts the hashes of its "
                                  "tokens from <cluster>-token-hashes",
    "readOnlyModeEnabled": "the operator's read-only control needs it (apache/bookkeeper#3972)",
    "forceAllowCompaction": "forced compactions must run on a full disk (apache/bookkeeper#3205)",
    "isForceGCAllowWhenNoSpace": "forced compactions must run on a full disk",
    "autoRecoveryDaemonEnabled": "set spec.autorecovery.enabled instead",
    "lostBookieRecoveryDelay": "set spec.autorecovery.lostBookieRecoveryDelaySeconds instead",
    "persistBookieStatusEnabled": "a persisted read-only state fights the operator (apache/bookkeeper#4640)",
    "gcWaitTime": "set spec.gc.gcWaitTimeSeconds instead",
    "minorCompactionThreshold": "set spec.gc.minorCompactionThreshold instead",
    "minorCompactionInterval": "set spec.gc.minorCompactionIntervalSeconds instead",
    "majorCompactionThreshold": "set spec.gc.majorCompactionThreshold instead",
    "majorCompactionInterval": "set spec.gc.majorCompactionIntervalSeconds instead",
    "compactionRateByBytes": "set spec.gc.compactionRateBytesPerSecond instead",
    "isThrottleByBytes": "set spec.gc.compactionRateBytesPerSecond instead",
}


def _preserve(description: str) -> Any:
    return Field(default_factory=dict, description=description,
                 json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})


def _preserve_or_none(description: str) -> Any:
    """A free-form object whose absence means "the operator's default" and ``{}`` means "none"."""
    return Field(default=None, description=description,
                 json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})


def _preserve_list_or_none(description: str) -> Any:
    """A list of free-form objects whose absence means "the operator's default" and ``[]`` means "none"."""
    return Field(default=None, description=description,
                 json_schema_extra={"items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}})


def _preserve_list(description: str) -> Any:
    return Field(default_factory=list, description=description,
                 json_schema_extra={"items": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}})


def _rules(*rules: tuple[str, str]) -> dict[str, Any]:
    return {"x-kubernetes-validations": [{"rule": r, "message": m} for r, m in rules]}


class Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


# ---------------------------------------------------------------------------------------------- spec
class ZkDigestSecretRef(Model):
    secret_name: str = Field(description="A Secret of the cluster's namespace.", pattern=DNS_SUBDOMAIN_PATTERN,
                             max_length=253)
    key: str = Field(default="digest", description="Its key holding user:password (ZooKeeper's digest scheme).",
                     pattern=r"^[-._a-zA-Z0-9]+$", max_length=253)


class MetadataServiceSpec(Model):
    """Where the bookies keep their metadata (BookKeeper's ZooKeeper layout)."""

    zk_servers: str = Field(description="ZooKeeper connect string, host:port[,host:port...].",
                            pattern=ZK_PATTERN, max_length=1024)
    ledgers_root: str = Field(default="/ledgers", description="Root znode of the BookKeeper metadata.",
                              pattern=ZNODE_PATTERN, max_length=256)
    digest_secret: ZkDigestSecretRef | None = Field(
        default=None, description="The fleet's ZooKeeper digest identity (user:password) for this cluster: mounted "
        "into bookie-fleet's bookies (zkDigestAuthFile) and used by the operator's own ZooKeeper session for this "
        "cluster instead of its --zk-digest-file. With zkEnableSecurity (spec.config) the znodes are created with "
        "CREATOR_ALL ACLs for it. Not for Apache BookKeeper's bookies, which cannot present a digest identity.")

    @property
    def uri(self) -> str:
        return f"zk+hierarchical://{self.zk_servers.replace(',', ';')}{self.ledgers_root}"


# How to get a different volume layout instead: the bookies' cookies record their directories, and a
# PersistentVolumeClaim never shrinks nor changes class, so the data has to move to new bookies.
MIGRATE = ("to migrate, create a second BookieCluster with the new storage on the same metadataService, then "
           "lower this one's replicas step by step (each bookie is decommissioned and its ledgers re-replicated) "
           "and delete it")


class VolumeSpec(Model):
    """One kind of bookie volume. On an existing cluster only ``size`` may change, and only upwards (CEL
    transition rules: the API server compares with the stored object)."""

    model_config = ConfigDict(json_schema_extra=_rules(
        ("has(self.storageClassName) == has(oldSelf.storageClassName)",
         f"storageClassName cannot be set or removed on an existing cluster: {MIGRATE}"),
    ))

    size: str = Field(default="10Gi", description="Size of each volume (Kubernetes quantity); it may grow, never "
                      "shrink.", pattern=QUANTITY_PATTERN, max_length=32, json_schema_extra=_rules(
                          ("!isQuantity(self) || !isQuantity(oldSelf) || "
                           "quantity(self).compareTo(quantity(oldSelf)) >= 0",
                           f"size cannot shrink (a volume never does): {MIGRATE}")))
    storage_class_name: str | None = Field(default=None, description="StorageClass; default: the cluster's default. "
                                           "Fixed once the cluster exists.", max_length=253,
                                           json_schema_extra=_rules(
                                               ("self == oldSelf",
                                                f"storageClassName cannot change on an existing cluster: {MIGRATE}")))
    count: int = Field(default=1, ge=1, le=8, description="Number of volumes (one directory each). Fixed once the "
                       "cluster exists.", json_schema_extra=_rules(
                           ("self == oldSelf",
                            "count cannot change on an existing cluster (the bookies' cookies record their "
                            f"directories): {MIGRATE}")))


class StorageSpec(Model):
    journal: VolumeSpec = Field(default_factory=lambda: VolumeSpec(size="10Gi"),
                                description="Journal volumes.")
    ledgers: VolumeSpec = Field(default_factory=lambda: VolumeSpec(size="50Gi"),
                                description="Ledger (entry log and index) volumes.")
    delete_claims_with_cluster: bool = Field(
        default=False, description="Delete the volumes when the BookieCluster is deleted (default: keep the data).")
    reclaim_volumes_of_instance: str | None = Field(
        default=None, pattern=UUID_PATTERN, description="Opt-in, never the default: the BookKeeper instance id "
        "(named by a CookieMismatch condition) whose leftover volumes the operator may delete. A bookie whose "
        "volumes hold cookies of exactly this other instance gets its claims and pod deleted, and starts again "
        "as a new, empty bookie; the data on those volumes is lost (or kept by a Retain reclaim policy, "
        "unused). Volumes of the cluster's own instance are never touched.")


class CompactionWindow(Model):
    """Automatic compaction only runs inside this daily UTC window (it is suspended outside)."""

    model_config = ConfigDict(json_schema_extra=_rules(
        ("self.start != self.end", "spec.gc.window.start and spec.gc.window.end must differ"),
    ))

    start: str = Field(description="Window start, HH:MM UTC.", pattern=HHMM_PATTERN)
    end: str = Field(description="Window end, HH:MM UTC (may be before start: the window spans midnight).",
                     pattern=HHMM_PATTERN)

    @model_validator(mode="after")
    def _differ(self) -> CompactionWindow:
        if self.start == self.end:
            raise ValueError("spec.gc.window.start and spec.gc.window.end must differ")
        return self


class GcSpec(Model):
    """The bookies' own garbage collection and compaction (BookKeeper's gc/compaction keys)."""

    model_config = ConfigDict(json_schema_extra=_rules(
        ("self.minorCompactionThreshold == 0.0 || self.majorCompactionThreshold == 0.0 || "
         "self.minorCompactionThreshold < self.majorCompactionThreshold",
         "spec.gc.minorCompactionThreshold must be < spec.gc.majorCompactionThreshold"),
        ("self.minorCompactionIntervalSeconds == 0 || self.majorCompactionIntervalSeconds == 0 || "
         "self.minorCompactionIntervalSeconds < self.majorCompactionIntervalSeconds",
         "spec.gc.minorCompactionIntervalSeconds must be < spec.gc.majorCompactionIntervalSeconds"),
    ))

    gc_wait_time_seconds: int = Field(default=300, ge=1, le=86400, description="Delay between GC runs (gcWaitTime).")
    minor_compaction_threshold: float = Field(default=0.2, ge=0, le=1, description="Minor compaction usage threshold.")
    minor_compaction_interval_seconds: int = Field(default=3600, ge=0, description="Minor compaction interval (0 off).")
    major_compaction_threshold: float = Field(default=0.8, ge=0, le=1, description="Major compaction usage threshold.")
    major_compaction_interval_seconds: int = Field(default=86400, ge=0,
                                                   description="Major compaction interval (0 off).")
    compaction_rate_bytes_per_second: int | None = Field(
        default=None, ge=1, description="Throttle compaction by bytes per second (default: BookKeeper's entries/s).")
    window: CompactionWindow | None = Field(default=None, description="Daily UTC window for automatic compaction.")

    @model_validator(mode="after")
    def _ordered(self) -> GcSpec:
        minor, major = self.minor_compaction_threshold, self.major_compaction_threshold
        if minor > 0 and major > 0 and minor >= major:
            raise ValueError("spec.gc.minorCompactionThreshold must be < spec.gc.majorCompactionThreshold "
                             f"(got {minor} >= {major})")
        mi, ma = self.minor_compaction_interval_seconds, self.major_compaction_interval_seconds
        if mi > 0 and ma > 0 and mi >= ma:
            raise ValueError("spec.gc.minorCompactionIntervalSeconds must be < "
                             f"spec.gc.majorCompactionIntervalSeconds (got {mi} >= {ma})")
        return self

    def bookie_config(self) -> dict[str, Any]:
        values: dict[str, Any] = {
            "gcWaitTime": self.gc_wait_time_seconds * 1000,
            "minorCompactionThreshold": self.minor_compaction_threshold,
            "minorCompactionInterval": self.minor_compaction_interval_seconds,
            "majorCompactionThreshold": self.major_compaction_threshold,
            "majorCompactionInterval": self.major_compaction_interval_seconds,
        }
        if self.compaction_rate_bytes_per_second is not None:
            values["compactionRateByBytes"] = self.compaction_rate_bytes_per_second
            values["isThrottleByBytes"] = True
        return values


class ScaleUpSpec(Model):
    enabled: bool = Field(default=False, description="Add a bookie when disk pressure leaves too few writable bookies.")
    max_replicas: int = Field(default=10, ge=1, le=100, description="Never scale up beyond this.")


class DiskPolicySpec(Model):
    """Operator-driven read-only control from disk usage (fractions of the ledger volumes)."""

    model_config = ConfigDict(json_schema_extra=_rules(
        ("self.writableLowWaterMark <= self.readOnlyHighWaterMark",
         "spec.diskPolicy.writableLowWaterMark must be <= spec.diskPolicy.readOnlyHighWaterMark"),
    ))

    read_only_high_water_mark: float = Field(
        default=0.85, gt=0, lt=1, description="At or above this used fraction the operator makes a bookie read-only.")
    writable_low_water_mark: float = Field(
        default=0.75, gt=0, lt=1, description="Below this used fraction the operator makes a bookie writable again.")
    force_compaction_ratio: float | None = Field(
        default=0.8, gt=0, lt=1, description="At or above this used fraction the operator triggers a forced GC.")
    scale_up: ScaleUpSpec = Field(default_factory=ScaleUpSpec, description="Scale up under disk pressure.")

    @model_validator(mode="after")
    def _ordered(self) -> DiskPolicySpec:
        if self.writable_low_water_mark > self.read_only_high_water_mark:
            raise ValueError("spec.diskPolicy.writableLowWaterMark must be <= "
                             f"spec.diskPolicy.readOnlyHighWaterMark (got {self.writable_low_water_mark} > "
                             f"{self.read_only_high_water_mark})")
        return self


def _valid_schedule(value: str | None, where: str) -> str | None:
    if value is None:
        return None
    try:
        return cron.validate(value)
    except ValueError as exc:
        raise ValueError(f"{where} {exc}") from None


class CompactionSpec(Model):
    """Scheduled forced compactions, one bookie at a time."""

    schedule: str | None = Field(default=None, description=f"When to compact: {cron.CRON_HELP} (UTC).", max_length=128,
                                 json_schema_extra=_rules(
                                     (f"self.matches(r'{cron.CRON_PATTERN}')",
                                      f"spec.compaction.schedule must be {cron.CRON_HELP}")))
    starting_deadline_seconds: int = Field(
        default=3600, ge=0, description="A run missed (operator down) by more than this is skipped, not run late.")
    bookie_timeout_seconds: int = Field(
        default=3600, ge=10, description="Give up waiting for one bookie's forced compaction after this.")
    force_major: bool = Field(default=True, description="Run a forced major compaction.")
    force_minor: bool = Field(default=True, description="Run a forced minor compaction.")

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        return _valid_schedule(value, "spec.compaction.schedule")


SPARK_MEMORY_PATTERN = r"^[1-9][0-9]*[kmgt]$"


class AuditCompactionSpec(Model):
    """Acting on an audit's findings: a forced compaction of each bookie the audit found holding more garbage
    than a bound, right after the audit (whatever the gc.window), once per audit run. Off unless asked."""

    enabled: bool = Field(default=False, description="Force a compaction of the bookies over the bound.")
    reclaimable_gib: float = Field(
        default=10.0, gt=0, alias="reclaimableGiB",
        description="The bound: garbage bytes the audit found on a bookie (deleted ledgers' bytes in its entry "
        "logs), in GiB.")


class AuditStorageSpec(Model):
    size: str = Field(default="1Gi", description="Size of the report store's volume.", pattern=QUANTITY_PATTERN)
    storage_class_name: str | None = Field(default=None, description="StorageClass; default: the cluster's default.",
                                           max_length=253)


class AuditSpec(Model):
    """The scheduled storage audit of the fleet: Spark on Kubernetes (spark-submit in cluster mode: a driver and
    executor pods of the audit image) reading the bookies' entry logs through their admin API (bookie-fleet's
    bookies; Apache BookKeeper's by their REST API and the metadata only); the summary in status.audit, the
    reports in the report store (docs/operator.md, "Storage audit")."""

    schedule: str | None = Field(default=None, description=f"When to audit: {cron.CRON_HELP} (UTC); none: never.",
                                 max_length=128, json_schema_extra=_rules(
                                     (f"self.matches(r'{cron.CRON_PATTERN}')",
                                      f"spec.audit.schedule must be {cron.CRON_HELP}")))
    mode: Literal["metadata", "full"] = Field(
        default="metadata", description="metadata: ledgers maps only (fast); full: every record too (replication "
        "and data-loss check, reads every byte once, throttled by each bookie).")
    image: str = Field(default="bookie-fleet/audit:0.1.0", description="The audit image (PySpark, a JRE, the audit).",
                       min_length=1, max_length=512)
    executors: int = Field(default=2, ge=1, le=100, description="Spark executor pods.")
    executor_cores: int = Field(default=1, ge=1, le=64, description="Cores of each executor (its CPU request).")
    executor_memory: str = Field(default="1g", pattern=SPARK_MEMORY_PATTERN,
                                 description="JVM heap of each executor (Spark's format: 512m, 2g).")
    driver_memory: str = Field(default="1g", pattern=SPARK_MEMORY_PATTERN, description="JVM heap of the driver.")
    jvm_options: list[str] = Field(
        default_factory=list, max_length=64, description="JVM options of the audit's Spark JVMs (the "
        "submission client, the driver and the executors; spark.driver/executor.extraJavaOptions), e.g. GC or JIT "
        "flags; heaps are driverMemory and executorMemory.",
        json_schema_extra={"items": {"type": "string", "pattern": "^-", "maxLength": 1024}})
    min_age_days: float = Field(default=7.0, ge=0, description="Pinning: entry logs at least this old.")
    reports_kept: int = Field(default=10, ge=1, le=1000, description="Complete runs the report store keeps.")
    report_storage: AuditStorageSpec = Field(default_factory=AuditStorageSpec,
                                             description="The report store's volume.")
    starting_deadline_seconds: int = Field(
        default=3600, ge=0, description="A run missed (operator down) by more than this is skipped, not run late.")
    timeout_seconds: int = Field(default=21600, ge=60, description="A run still going after this is stopped.")
    compaction: AuditCompactionSpec = Field(default_factory=AuditCompactionSpec,
                                            description="Forced compaction of bookies with much garbage.")

    @field_validator("schedule")
    @classmethod
    def _cron(cls, value: str | None) -> str | None:
        return _valid_schedule(value, "spec.audit.schedule")


class InspectorSpec(Model):
    """The inspector beside each Apache BookKeeper bookie (implementation apache-bookkeeper; bookie-fleet's bookies
    answer all of this themselves): ``bookie inspect serve`` from the bookie-fleet image, in the bookie's pod, its
    ledger volumes mounted read-only. It serves the explain endpoint (which live ledgers, and which Pulsar topics,
    keep each entry log on disk), bookie_pinned_garbage_bytes and the entry-log gauges on /metrics, and the entry-log
    files the storage audit (spec.audit) reads; it never writes the volumes nor talks to the bookie."""

    enabled: bool = Field(default=True, description="Run the inspector beside each Apache BookKeeper bookie.")
    image: str = Field(default=BOOKIE_IMAGE, min_length=1, max_length=512,
                       description="The inspector's image: bookie-fleet's bookie image.")
    read_rate_bytes: int = Field(
        default=20_000_000, ge=0, description="Bytes per second the inspector may read from the bookie's volumes, "
        "for its own scans and for the audit's reads each (compactionReadRateByBytes and "
        "httpEntryLogReadRateByBytes; 0: unlimited): the bookie's I/O comes first.")
    resources: dict[str, Any] = _preserve(
        "The inspector container's resources (core/v1 ResourceRequirements). Default requests: cpu 50m, memory "
        "128Mi; each request given here replaces the default one, limits are passed as given.")


class AutorecoverySpec(Model):
    enabled: bool = Field(default=True, description="Run BookKeeper's autorecovery in the bookies.")
    lost_bookie_recovery_delay_seconds: int = Field(default=60, ge=0,
                                                    description="Wait before re-replicating a lost bookie.")


class AdminApiSpec(Model):
    """The bookies' admin REST API: every call that changes state needs the token of this Secret, which the
    operator mounts into the bookie pods and presents itself (Apache BookKeeper's bookies have no such check)."""

    token_secret_name: str | None = Field(
        default=None, pattern=DNS_SUBDOMAIN_PATTERN, max_length=253,
        description="An existing Secret whose key `token` holds the bearer token(s), one per line, at least 16 "
        "characters each; the operator presents the first. Default: the operator creates <cluster>-admin-token "
        "once, with a random token, owned by the BookieCluster.")
    metrics_token_secret_name: str | None = Field(
        default=None, pattern=DNS_SUBDOMAIN_PATTERN, max_length=253,
        description="An existing Secret whose key `token` holds the bearer token(s) that may read /metrics and "
        "nothing else (what Prometheus presents: a PodMonitor's authorization). Set, our bookies and the "
        "inspectors serve /metrics, whose topic and ledger labels name the fleet's topics, only with a "
        "credential; they hold the tokens' hashes only. Unset, /metrics is open to whoever the NetworkPolicy "
        "admits (the monitoring namespace). Label it bookie-fleet.dev/cluster=<cluster> (the cluster's own), or "
        "share one Secret between several clusters (one PodMonitor scrapes them all) if the operator allows "
        "foreignSecrets.")


class PdbSpec(Model):
    enabled: bool = Field(default=True, description="Create a PodDisruptionBudget.")
    max_unavailable: int = Field(default=1, ge=1, description="Bookies that may be disrupted at once.")


NAMESPACE_NAME_LABEL = "kubernetes.io/metadata.name"   # set by the API server on every namespace


class LabelSelectorRequirement(Model):
    key: str = Field(description="Label key.", max_length=317)
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist"] = Field(description="How the key is matched.")
    values: list[str] = Field(default_factory=list, max_length=64, description="Values for In and NotIn.")


class LabelSelector(Model):
    """A metav1 LabelSelector; ``{}`` selects everything."""

    match_labels: dict[str, str] = Field(default_factory=dict, description="Labels that must all match.")
    match_expressions: list[LabelSelectorRequirement] = Field(default_factory=list, max_length=16,
                                                              description="Requirements that must all hold.")


class IPBlock(Model):
    cidr: str = Field(description="An IP range (CIDR), e.g. 10.0.0.0/8.", max_length=64)
    except_: list[str] = Field(default_factory=list, alias="except", max_length=32,
                               description="Ranges within cidr that are not included.")


class NetworkPolicyPeer(Model):
    """Who a rule admits (networking/v1 NetworkPolicyPeer). A podSelector alone means pods of the cluster's own
    namespace; with a namespaceSelector, those pods in the selected namespaces; a namespaceSelector alone, every
    pod there."""

    model_config = ConfigDict(json_schema_extra=_rules(
        ("has(self.podSelector) || has(self.namespaceSelector) || has(self.ipBlock)",
         "a network policy peer needs podSelector, namespaceSelector or ipBlock"),
        ("!has(self.ipBlock) || !(has(self.podSelector) || has(self.namespaceSelector))",
         "ipBlock cannot be combined with podSelector or namespaceSelector"),
    ))

    pod_selector: LabelSelector | None = Field(default=None, description="Pods (labels).")
    namespace_selector: LabelSelector | None = Field(default=None, description="Namespaces (labels).")
    ip_block: IPBlock | None = Field(default=None, description="Addresses (for what runs outside pods).")

    @model_validator(mode="after")
    def _one_kind(self) -> NetworkPolicyPeer:
        selectors = self.pod_selector is not None or self.namespace_selector is not None
        if not selectors and self.ip_block is None:
            raise ValueError("a network policy peer needs podSelector, namespaceSelector or ipBlock")
        if selectors and self.ip_block is not None:
            raise ValueError("ipBlock cannot be combined with podSelector or namespaceSelector")
        return self

    def manifest(self) -> dict[str, Any]:
        """As the API server stores it (no empty lists), so the applied object compares equal to the live one."""
        return self.model_dump(by_alias=True, exclude_none=True, exclude_defaults=True)


def _peers(*peers: dict[str, Any]) -> Any:
    return lambda: [NetworkPolicyPeer.model_validate(p) for p in peers]


class NetworkPolicySpec(Model):
    """The bookies' NetworkPolicy: which pods may reach which port, and where the bookies may connect to.

    Only enforced where the cluster's network plugin implements NetworkPolicy. Traffic from the node itself
    (the kubelet's probes) is allowed by the usual plugins whatever the policy says."""

    enabled: bool = Field(default=True, description="Create the NetworkPolicy (false: the operator deletes its own).")
    clients: list[NetworkPolicyPeer] = Field(
        default_factory=list, max_length=32,
        description="Who may reach the bookie port (3181): the pods and namespaces you name (podSelector, "
        "namespaceSelector, ipBlock). Default: none but the cluster's own bookies (re-replication), which always "
        "may. No label admits a pod by itself: whoever may create a pod may set any label on it.")
    monitoring: list[NetworkPolicyPeer] = Field(
        default_factory=_peers({"namespaceSelector": {"matchLabels": {NAMESPACE_NAME_LABEL: "monitoring"}}}),
        max_length=32, description="Who may scrape /metrics, on ports that serve metrics only: bookie-fleet's "
        "dedicated metrics port (prometheusStatsHttpPort, 8000) and the inspector's (8001). Never the admin "
        "port: Apache BookKeeper's bookies, which serve /metrics only on their unauthenticated admin API, are "
        "not scraped through this rule. Default: every pod of the namespace named monitoring.")
    operator: list[NetworkPolicyPeer] | None = Field(
        default=None, max_length=32, description="Who may reach the admin port (8080). Default: the operator's own "
        "pods (the namespace and labels its Helm chart gives it); an operator running outside the cluster needs "
        "an ipBlock here.")
    zookeeper: list[NetworkPolicyPeer] = Field(
        default_factory=list, max_length=32, description="Where the bookies may reach ZooKeeper (the ports of "
        "spec.metadataService.zkServers). Default: any address on those ports.")
    extra_ingress: list[dict[str, Any]] = _preserve_list(
        "More ingress rules (networking/v1 NetworkPolicyIngressRule), e.g. for a sidecar's port.")
    extra_egress: list[dict[str, Any]] = _preserve_list(
        "More egress rules (networking/v1 NetworkPolicyEgressRule), e.g. for a sidecar's destination.")


class SecretRef(Model):
    secret_name: str = Field(description="A Secret of the cluster's namespace in cert-manager's layout: tls.crt "
                             "(the certificate chain), tls.key (its private key, PKCS#8 for Apache BookKeeper's "
                             "bookies) and ca.crt (the CA that signed it and the peers' certificates).",
                             pattern=DNS_SUBDOMAIN_PATTERN, max_length=253)


# BookKeeper (4.17, 4.18) serves plaintext next to TLS unless an auth plugin refuses it: for Java bookies only
# BookieAuthZFactory keeps clientAuthentication's promise (our onlySecureClientsAllowed is unknown to them).
JAVA_CLIENT_AUTH_NEEDS_ROLES = (
    "spec.tls.clientAuthentication on implementation apache-bookkeeper needs spec.tls.authorizedRoles: "
    "Apache BookKeeper's bookies otherwise still serve clients that skip START_TLS")


class TlsSpec(Model):
    """Certificates for the bookies, from Secrets in cert-manager's layout, mounted into the pods and re-read
    when they change (BookKeeper's tlsCertFilesRefreshDurationSeconds): a renewed certificate needs no restart.
    Each bookie's certificate must name its bookie id's host (<pod>.<cluster>-headless.<namespace>.svc.<domain>,
    or a wildcard over the headless service): the operator checks it and says which bookies are not covered."""

    model_config = ConfigDict(json_schema_extra=_rules(
        ("!has(self.authorizedRoles) || size(self.authorizedRoles) == 0 || self.clientAuthentication",
         "spec.tls.authorizedRoles needs spec.tls.clientAuthentication (roles come from client certificates)"),
        ("!has(self.adminClient) || has(self.admin)",
         "spec.tls.adminClient needs spec.tls.admin (client certificates need HTTPS on the admin API)"),
    ))

    bookie: SecretRef | None = Field(default=None, description="TLS on the bookie port (START_TLS, BookKeeper's "
                                     "tls* keys): the bookies' certificate; its ca.crt is what client "
                                     "certificates (and other bookies, for re-replication) must chain to.")
    client_authentication: bool = Field(default=False, description="Require a client certificate signed by the "
                                        "bookie Secret's ca.crt (tlsClientAuthentication).")
    authorized_roles: list[str] = Field(
        default_factory=list, max_length=32, description="Admit only clients whose certificate's first OU role "
        "(OU=0:role1,role2;1:cluster) is one of these (BookKeeper's BookieAuthZFactory, authorizedRoles).",
        json_schema_extra={"items": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$", "maxLength": 64}})
    admin: SecretRef | None = Field(default=None, description="HTTPS on the admin API bookie-fleet serves: our "
                                    "bookies' (the operator trusts its ca.crt) or, beside Apache BookKeeper's "
                                    "bookies, the inspector's (the audit trusts its ca.crt). Apache BookKeeper's "
                                    "own admin server reads Java key stores only and stays on HTTP, admitted to "
                                    "the operator alone, which sends it no token.")
    admin_client: SecretRef | None = Field(
        default=None, description="The operator's client certificate for the admin API (needs spec.tls.admin): its "
        "tls.crt must be signed by the admin Secret's ca.crt and carry a role of adminAllowedRoles as its subject's "
        "first OU role (OU=0:role). The bookies then admit that role (httpServerTlsTrustStorePath, "
        "httpServerAllowedRoles) and the operator presents the certificate with every admin call, next to the "
        "admin token. Read by the operator only, never mounted into the bookies.")
    admin_allowed_roles: list[str] = Field(
        default_factory=lambda: ["bookie-operator"], min_length=1, max_length=32,
        description="With adminClient: the certificate roles the bookies' admin API admits (httpServerAllowedRoles).",
        json_schema_extra={"items": {"type": "string", "pattern": "^[A-Za-z0-9_.-]+$", "maxLength": 64}})
    zookeeper: SecretRef | None = Field(default=None, description="TLS to ZooKeeper (spec.metadataService.zkServers "
                                        "must then name its secureClientPort) with this client certificate; ca.crt "
                                        "must have signed ZooKeeper's. The operator's session for the cluster "
                                        "presents it too. Apache BookKeeper's bookies also need the "
                                        "Secret's tls-combined.pem (cert-manager: additionalOutputFormats "
                                        "CombinedPEM).")
    refresh_seconds: int = Field(default=300, ge=0, le=86400, description="How often the bookies look for "
                                 "renewed certificate files (tlsCertFilesRefreshDurationSeconds; 0: never, a "
                                 "renewal then needs a restart).")

    @model_validator(mode="after")
    def _roles_need_client_certificates(self) -> TlsSpec:
        if self.authorized_roles and not self.client_authentication:
            raise ValueError("spec.tls.authorizedRoles needs spec.tls.clientAuthentication (roles come from client "
                             "certificates)")
        if self.admin_client is not None and self.admin is None:
            raise ValueError("spec.tls.adminClient needs spec.tls.admin (client certificates need HTTPS on the admin "
                             "API)")
        return self

    def secrets(self) -> dict[str, str]:
        """purpose (bookie, admin, zookeeper) -> Secret name, for the purposes configured."""
        return {purpose: ref.secret_name for purpose, ref in
                (("bookie", self.bookie), ("admin", self.admin), ("zookeeper", self.zookeeper)) if ref is not None}

    def checked_secrets(self) -> dict[str, str]:
        """``secrets()`` and the operator's own adminClient Secret: every Secret the operator checks."""
        own = {"adminClient": self.admin_client.secret_name} if self.admin_client is not None else {}
        return {**self.secrets(), **own}


# The numeric USER of both bookie images (bookie_image/Dockerfile, hack/apache-bookkeeper/Dockerfile).
IMAGE_UID = 10000


class PodSecuritySpec(Model):
    """Who the bookie runs as. Everything else of the pod's securityContext is fixed at the `restricted` Pod
    Security Standard (non-root, no capabilities, seccomp RuntimeDefault, read-only root)."""

    run_as_user: int = Field(default=IMAGE_UID, ge=1, le=2147483647, description="The bookie's uid (runAsUser): "
                             "not 0, the restricted profile refuses root. Default: the images' own USER.")
    run_as_group: int = Field(default=IMAGE_UID, ge=1, le=2147483647, description="Its primary gid (runAsGroup), "
                              "not 0; also the volumes' group (fsGroup), so the bookie owns what it writes.")


class ScaleDownSpec(Model):
    pvc_policy: Literal["Delete", "Retain"] = Field(
        default="Delete", description="What happens to a decommissioned bookie's volumes. "
        "Delete also removes its cookie; "
        "Retain keeps the cookie so the ordinal can come back with the same identity.")
    recovery_timeout_seconds: int = Field(
        default=3600, ge=60, description="After this, a decommission waiting for re-replication reports Degraded.")


class ImplementationSwitchSpec(Model):
    """How a change of spec.implementation on a running cluster is rolled out: one bookie at a time, each pod
    restarted on its own volumes with the other image (same bookie id, same cookie, no data moved)."""

    paused: bool = Field(default=False, description="Hold the switch before its next bookie (the one being "
                         "restarted finishes); false resumes it. Bookies already switched stay as they are.")


class RebalanceSpec(Model):
    """Moving closed ledgers' replicas from the fullest bookies to the emptiest (off by default)."""

    enabled: bool = Field(default=False, description="Rebalance the bookies' data when their usage spreads more "
                          "than maxSpread (bookie-fleet bookies: the move is their autorecovery's).")
    paused: bool = Field(default=False, description="Start no new move (the ones running finish); false resumes.")
    max_spread: float = Field(default=0.1, gt=0, lt=1, description="The largest accepted difference between the "
                              "fullest and the emptiest bookie's usage (ledger data over disk size, 0..1).")
    max_concurrent_moves: int = Field(default=1, ge=1, le=16, description="Replica moves running at once.")
    bytes_per_second: int = Field(default=10 * 1024 * 1024, ge=1024, description="Byte rate of all moves "
                                  "together (each gets its share; the copying bookie keeps to it).")


def user_config_keys() -> list[str]:
    """The keys of our bookie's configuration a user may set in spec.config (directories are all owned)."""
    js = BookieConfig.model_json_schema(by_alias=True)
    return sorted(k for k, sub in js["properties"].items()
                  if k not in OWNED_CONFIG_KEYS and sub.get("type") != "array"
                  and not any(o.get("type") == "array" for o in sub.get("anyOf", [])))


def java_config_keys() -> list[str]:
    """The keys of Apache BookKeeper's configuration a user may set in spec.config of a Java-bookie cluster."""
    return sorted(java_config.apache_bookkeeper_keys() - OWNED_CONFIG_KEYS.keys())


def _config_keys_rule() -> tuple[str, str]:
    """spec.config keys of one implementation only are refused for the other, at admission, named.

    The schema declares the keys of both (ours typed, Apache BookKeeper's free-form), so a key of neither is
    an unknown field; this rule judges the rest against the chosen implementation's key set."""
    ours, java = set(user_config_keys()), set(java_config_keys())

    def present(keys: set[str]) -> str:     # a flat list literal: a chain of + is too deep for CEL
        return "[" + ", ".join(f"has(self.config.{k}) ? '{k}' : ''" for k in sorted(keys)) + "]"

    wrong = (f"(self.implementation == 'apache-bookkeeper' ? {present(ours - java)} : "
             f"{present(java - ours)}).filter(k, k != '')")
    # A static message: the API server's cost budget has no room for listing the offending keys.
    return (f"!has(self.config) || size({wrong}) == 0",
            "spec.config: Apache BookKeeper-only keys need implementation apache-bookkeeper, and "
            f"{', '.join(sorted(ours - java))} are bookie-fleet only")


class EnvVar(Model):
    """An environment variable of the bookie container (core/v1 EnvVar)."""

    name: str = Field(description="Variable name.", pattern=ENV_NAME_PATTERN, max_length=256)
    value: str | None = Field(default=None, description="Value.")
    value_from: dict[str, Any] | None = _preserve_or_none("core/v1 EnvVarSource (secretKeyRef, configMapKeyRef...).")


class LocalObjectReference(Model):
    name: str = Field(description="Name of the Secret.", pattern=DNS_SUBDOMAIN_PATTERN, max_length=253)


class NamedObject(BaseModel):
    """A Kubernetes object given as is (a core/v1 Volume or Container); only its name is checked here."""

    model_config = ConfigDict(extra="allow", json_schema_extra={"x-kubernetes-preserve-unknown-fields": True})

    name: str = Field(description="Name (a DNS label).", pattern=DNS_LABEL_PATTERN, max_length=63)


class VolumeMount(Model):
    name: str = Field(description="One of spec.extraVolumes.", pattern=DNS_LABEL_PATTERN, max_length=63)
    mount_path: str = Field(description="Where it is mounted in the bookie container.", pattern=r"^/",
                            max_length=1024)
    read_only: bool = Field(default=False, description="Mount read-only.")
    sub_path: str | None = Field(default=None, description="Sub-path of the volume.", max_length=1024)


# ------------------------------------------------------------------------------------------ adoption
# Taking over a running bookie StatefulSet (apache/pulsar-helm-chart's shape): what the spec asks, what the
# operator found and recorded (the names and paths its own StatefulSet keeps), and where the take-over is.
ADOPTION_DIFF_MAX = 16384
ADOPTION_CONFIG_MAX_KEYS = 256


class AdoptSpec(Model):
    """Take over a running bookie StatefulSet instead of creating one (docs/operator.md, "Bringing an existing
    fleet"): its pods, claims and bookie ids are kept; nothing is restarted or replaced before ``approve``."""

    stateful_set_name: str = Field(description="The StatefulSet to adopt, in the cluster's namespace. It must "
                                   "have the BookieCluster's own name (its pods, and so its bookie ids, are named "
                                   "after it).", pattern=DNS_LABEL_PATTERN, max_length=63)
    approve: bool = Field(default=False, description="Replace the StatefulSet with the operator's (pods orphaned, "
                          "not restarted), then roll the pods onto it one at a time. Read status.adoption's "
                          "diff first.")


class AdoptedVolume(Model):
    claim: str = Field(description="Its volumeClaimTemplate's name (the claims are <claim>-<pod>).", max_length=253)
    path: str = Field(description="Where the bookie has it (its cookie records the directory).", max_length=1024)
    size: str = Field(description="The template's storage request.", max_length=64)
    storage_class_name: str | None = Field(default=None, max_length=253)


class AdoptionFound(Model):
    """What the operator read from the StatefulSet, its pods' configuration and its Service: the names and paths
    its own StatefulSet keeps."""

    stateful_set_name: str = Field(max_length=253)
    uid: str = Field(description="The adopted StatefulSet's uid.", max_length=64)
    service_name: str = Field(description="Its headless Service, part of every bookie id.", max_length=253)
    replicas: int = Field(ge=0)
    image: str = Field(max_length=512)
    pod_labels: dict[str, str] = Field(default_factory=dict, description="Its pod template's labels, kept on the "
                                       "operator's pods (the chart's own selectors still find them).")
    journals: list[AdoptedVolume] = Field(default_factory=list, max_length=8)
    ledgers: list[AdoptedVolume] = Field(default_factory=list, max_length=8)
    config: dict[str, str] = Field(default_factory=dict, description="The bookie configuration its pods are given "
                                   f"(BK_*, PULSAR_PREFIX_* and plain keys; at most {ADOPTION_CONFIG_MAX_KEYS}).")
    bookie_id: str = Field(description="The bookie id of its first pod, as the operator will keep it.",
                           max_length=512)


AdoptionPhase = Literal["Refused", "AwaitingApproval", "Replacing", "Rolling", "Adopted"]


class AdoptionStatus(Model):
    phase: AdoptionPhase = Field(description="Refused (why: message; nothing changed), AwaitingApproval (the diff "
                                 "below is what approve does), Replacing (the StatefulSet deleted with its pods "
                                 "orphaned), Rolling (the operator's StatefulSet; pods restarted one at a time), "
                                 "Adopted.")
    since: str = Field(description="When it reached this phase.")
    message: str = Field(default="", max_length=4096)
    found: AdoptionFound | None = None
    diff: str = Field(default="", description="What approve changes, as a unified diff of the pod template and "
                      f"of the bookie configuration (at most {ADOPTION_DIFF_MAX} characters).",
                      max_length=ADOPTION_DIFF_MAX)


class BookieClusterSpec(Model):
    """Desired state of a fleet of bookies."""

    model_config = ConfigDict(json_schema_extra=_rules(
        ("self.replicas >= self.ensembleSize",
         "spec.replicas must be >= spec.ensembleSize (fewer bookies cannot hold an ensemble)"),
        _image_rule(),
        _config_keys_rule(),
        ("!has(self.jvmOptions) || size(self.jvmOptions) == 0 || self.implementation == 'apache-bookkeeper'",
         "spec.jvmOptions: only for implementation apache-bookkeeper"),
        ("!has(self.tls) || !has(self.tls.clientAuthentication) || !self.tls.clientAuthentication || "
         "self.implementation != 'apache-bookkeeper' || "
         "(has(self.tls.authorizedRoles) && size(self.tls.authorizedRoles) > 0)", JAVA_CLIENT_AUTH_NEEDS_ROLES),
    ))

    replicas: int = Field(default=3, ge=1, le=100, description="Number of bookies.")
    ensemble_size: int = Field(default=3, ge=1, le=100, description="Ensemble size the clients use: the operator never "
                               "leaves fewer writable bookies than this, and never scales below it.")
    image: str = Field(default=BOOKIE_IMAGE, description="Bookie container image, of spec.implementation's bookie "
                       "(the default is bookie-fleet's: set it with implementation apache-bookkeeper). Known images "
                       "of the other implementation are refused; any other that does not run that bookie stops "
                       "at start with a WrongImage termination message.", min_length=1, max_length=512)
    image_pull_policy: Literal["Always", "IfNotPresent", "Never"] = Field(default="IfNotPresent",
                                                                         description="Image pull policy.")
    implementation: Literal["bookie-fleet", "apache-bookkeeper"] = Field(
        default="bookie-fleet", description="Which bookie the image runs: bookie-fleet's Python bookie or Apache "
        "BookKeeper's Java bookie (same REST API; the configuration is delivered differently).")
    cluster_domain: str = Field(default="cluster.local", description="DNS domain of the cluster (bookie ids).",
                                max_length=253)
    metadata_service: MetadataServiceSpec = Field(description="ZooKeeper metadata service.")
    storage: StorageSpec = Field(default_factory=StorageSpec, description="Journal and ledger volumes.")
    config: dict[str, Any] = Field(default_factory=dict, description="Bookie configuration overrides, keyed by "
                                   "BookKeeper key names (validated against bookie.config.BookieConfig, or for "
                                   "implementation apache-bookkeeper against Apache BookKeeper "
                                   f"{java_config.BOOKKEEPER_VERSION}'s own key set).")
    gc: GcSpec = Field(default_factory=GcSpec, description="Garbage collection and compaction.")
    disk_policy: DiskPolicySpec = Field(default_factory=DiskPolicySpec, description="Read-only control.")
    compaction: CompactionSpec = Field(default_factory=CompactionSpec, description="Scheduled forced compactions.")
    audit: AuditSpec = Field(default_factory=AuditSpec, description="The scheduled storage audit (Spark).")
    inspector: InspectorSpec = Field(default_factory=InspectorSpec, description="The inspector beside each Apache "
                                     "BookKeeper bookie (explain endpoint, pinned-garbage metrics, the audit's "
                                     "entry-log reads).")
    autorecovery: AutorecoverySpec = Field(default_factory=AutorecoverySpec, description="Autorecovery.")
    admin_api: AdminApiSpec = Field(default_factory=AdminApiSpec, description="The bookies' admin REST API "
                                    "credential.")
    pdb: PdbSpec = Field(default_factory=PdbSpec, description="PodDisruptionBudget.")
    network_policy: NetworkPolicySpec = Field(default_factory=NetworkPolicySpec,
                                              description="The bookies' NetworkPolicy.")
    tls: TlsSpec | None = Field(default=None, description="TLS certificates (cert-manager Secrets) for the bookie "
                                "port, the admin API and ZooKeeper.")
    scale_down: ScaleDownSpec = Field(default_factory=ScaleDownSpec, description="Safe scale-down.")
    decommission: list[Annotated[str, Field(min_length=1, max_length=253)]] = Field(
        default_factory=list, max_length=100, description="Bookies to decommission whatever their ordinal, each "
        "named by its ordinal (\"2\"), pod name or bookie id: one at a time, its ledgers re-replicated and "
        "verified, its cookie deleted, then its pod and volumes re-created empty (the StatefulSet keeps its "
        "replicas). Done once per entry (status.decommissionRequests); remove the entry to run it again later. "
        "Removing it before the cookie is deleted cancels it.",
        json_schema_extra={"x-kubernetes-list-type": "set"})
    accept_data_loss: list[Annotated[int, Field(ge=0)]] = Field(
        default_factory=list, max_length=10000, description="Ledger ids whose entries with no surviving replica "
        "may be given up so that the decommission of a dead bookie (the one a scale-down removes or one named "
        "in spec.decommission) can finish; status.dataLoss lists them first. Refused while a lost ledger is "
        "missing from this list.")
    implementation_switch: ImplementationSwitchSpec = Field(
        default_factory=ImplementationSwitchSpec, description="Switching the bookies between implementations in "
        "place (a change of spec.implementation on a running cluster): pause and resume.")
    rebalance: RebalanceSpec = Field(default_factory=RebalanceSpec, description="Rebalancing ledger replicas "
                                     "between the bookies by disk usage.")
    resources: dict[str, Any] = _preserve(
        "Bookie container resources (core/v1 ResourceRequirements). Default requests: memory sized for the "
        "bookie's caches (dbStorage_writeCacheMaxSizeMb + dbStorage_readAheadCacheMaxSizeMb + the process), "
        "cpu 500m; each request given here replaces the default one, limits are passed as given.")
    affinity: dict[str, Any] | None = _preserve_or_none(
        "Pod affinity (core/v1 Affinity). Default: preferred pod anti-affinity by kubernetes.io/hostname; "
        "{} for none.")
    tolerations: list[dict[str, Any]] = _preserve_list("Pod tolerations.")
    topology_spread_constraints: list[dict[str, Any]] | None = _preserve_list_or_none(
        "Pod topology spread constraints. Default: maxSkew 1 over topology.kubernetes.io/zone, "
        "ScheduleAnyway; [] for none.")
    node_selector: dict[str, str] = Field(default_factory=dict, description="Pod node selector.")
    publish_racks: bool = Field(
        default=True, description="Publish each bookie's rack, /<region>/<zone> from its node's "
        "topology.kubernetes.io/region and topology.kubernetes.io/zone labels, in ZooKeeper's /bookies znode "
        "(group <namespace>/<name>), where Pulsar's rack-aware placement (BookieRackAffinityMapping) and "
        "bookie-fleet's client read it. false: leave /bookies to others.")
    pod_annotations: dict[str, str] = Field(default_factory=dict, description="Extra pod annotations.")
    pod_security: PodSecuritySpec = Field(default_factory=PodSecuritySpec, description="The uid and gid of the "
                                          "bookie pods (runAsUser, runAsGroup, fsGroup); e.g. a platform that "
                                          "assigns each namespace a uid range.")
    env: list[EnvVar] = Field(default_factory=list, max_length=64,
                              description="Extra environment variables of the bookie container.")
    jvm_options: list[str] = Field(
        default_factory=list, max_length=64, description="JVM options of Apache BookKeeper's bookie "
        "(implementation apache-bookkeeper), appended to the image's (BOOKIE_EXTRA_OPTS), so -Xmx here wins.",
        json_schema_extra={"items": {"type": "string", "pattern": "^-", "maxLength": 1024}})
    image_pull_secrets: list[LocalObjectReference] = Field(default_factory=list, max_length=16,
                                                           description="Secrets to pull the image with.")
    service_account_name: str | None = Field(default=None, description="Service account of the bookie pods.",
                                             pattern=DNS_SUBDOMAIN_PATTERN, max_length=253)
    priority_class_name: str | None = Field(default=None, description="PriorityClass of the bookie pods.",
                                            pattern=DNS_SUBDOMAIN_PATTERN, max_length=253)
    extra_volumes: list[NamedObject] = Field(default_factory=list, max_length=32,
                                             description="Extra pod volumes (core/v1 Volume).")
    extra_volume_mounts: list[VolumeMount] = Field(default_factory=list, max_length=32,
                                                   description="Mounts of spec.extraVolumes in the bookie container.")
    sidecars: list[NamedObject] = Field(default_factory=list, max_length=16,
                                        description="Extra containers of the bookie pods (core/v1 Container).")
    adopt: AdoptSpec | None = Field(default=None, description="Take over a running bookie StatefulSet "
                                    "(apache/pulsar-helm-chart's) instead of creating one; status.adoption.")

    @model_validator(mode="after")
    def _check(self) -> BookieClusterSpec:
        if self.replicas < self.ensemble_size:
            raise ValueError(f"spec.replicas must be >= spec.ensembleSize (got {self.replicas} < "
                             f"{self.ensemble_size})")
        if (self.tls is not None and self.tls.client_authentication and not self.tls.authorized_roles
                and self.implementation == "apache-bookkeeper"):
            raise ValueError(JAVA_CLIENT_AUTH_NEEDS_ROLES)
        if self.metadata_service.digest_secret is not None and self.implementation == "apache-bookkeeper":
            raise ValueError("spec.metadataService.digestSecret: Apache BookKeeper's bookies authenticate to "
                             "ZooKeeper by SASL or a TLS client certificate, not a digest; share the x509 identity "
                             "(spec.tls.zookeeper) instead")
        if self.metadata_service.digest_secret is not None and "zkDigestAuthFile" in self.config:
            raise ValueError("spec.config.zkDigestAuthFile: set by spec.metadataService.digestSecret")
        overlap = self._tls_key_problems()      # before the keys' own checks, which would name a symptom
        if overlap:
            raise ValueError("; ".join(overlap))
        if self.implementation == "apache-bookkeeper":
            validate_java_config_overrides(self.config)
        else:
            validate_config_overrides(self.config, self._implied_zk_keys())
        problems = self._escape_hatch_problems()
        if problems:
            raise ValueError("; ".join(problems))
        known = image_implementation(self.image)
        if known is not None and known != self.implementation:
            raise ValueError(f"spec.image {self.image} runs {known}'s bookie, not spec.implementation "
                             f"{self.implementation}'s: change spec.image and spec.implementation together")
        return self

    @property
    def runs_inspector(self) -> bool:
        """Whether each bookie pod has the inspector beside the bookie (Apache BookKeeper's bookies only)."""
        return self.implementation == "apache-bookkeeper" and self.inspector.enabled

    def _implied_zk_keys(self) -> dict[str, Any]:
        """The ZooKeeper identity keys the operator sets from spec.metadataService and spec.tls, so that
        spec.config's zkEnableSecurity sees the identity it needs (the paths are placeholders)."""
        implied: dict[str, Any] = {}
        if self.metadata_service.digest_secret is not None:
            implied["zkDigestAuthFile"] = "/digest"
        if self.tls is not None and self.tls.zookeeper is not None:
            implied.update(zkTlsEnable=True, zkTlsCertificatePath="/tls.crt", zkTlsKeyPath="/tls.key")
        return implied

    def _tls_key_problems(self) -> list[str]:
        """spec.config may not set what spec.tls sets (two sources of one file path or rule)."""
        if self.tls is None:
            return []
        problems = [f"spec.config.{key}: set by spec.tls.{purpose}" for purpose in self.tls.secrets()
                    for key in TLS_CONFIG_KEYS[purpose] if key in self.config]
        if self.tls.client_authentication and "onlySecureClientsAllowed" in self.config:
            problems.append("spec.config.onlySecureClientsAllowed: set by spec.tls.clientAuthentication (no "
                            "plaintext client is served)")
        return problems

    def _escape_hatch_problems(self) -> list[str]:
        """What the escape hatches may not do: replace what the operator itself puts into the pod."""
        problems = []
        if self.jvm_options and self.implementation != "apache-bookkeeper":
            problems.append("spec.jvmOptions: only for implementation apache-bookkeeper")
        for i, var in enumerate(self.env):
            if var.name in OWNED_ENV or (self.implementation == "apache-bookkeeper" and var.name.startswith("BK_")):
                problems.append(f"spec.env[{i}].name: {var.name} is set by the operator"
                                + (" (BK_* variables are configuration keys: use spec.config)"
                                   if var.name.startswith("BK_") else ""))
            if var.value is not None and var.value_from is not None:
                problems.append(f"spec.env[{i}]: value and valueFrom are exclusive")
        names = [v.name for v in self.extra_volumes]
        for i, name in enumerate(names):
            if name.startswith(OWNED_VOLUME_PREFIXES) or name in OWNED_VOLUME_NAMES:
                problems.append(f"spec.extraVolumes[{i}].name: {name} is the operator's (config, run, tmp, "
                                "journal-*, ledgers-*, tls-*)")
            elif names.index(name) != i:
                problems.append(f"spec.extraVolumes[{i}].name: {name} is given twice")
        for i, mount in enumerate(self.extra_volume_mounts):
            if mount.name not in names:
                problems.append(f"spec.extraVolumeMounts[{i}].name: {mount.name} is not in spec.extraVolumes")
            if any(mount.mount_path == r or mount.mount_path.startswith(r + "/") for r in OWNED_MOUNT_ROOTS):
                problems.append(f"spec.extraVolumeMounts[{i}].mountPath: {mount.mount_path} is under the bookie's "
                                f"own directories ({', '.join(OWNED_MOUNT_ROOTS)})")
            elif mount.mount_path.rstrip("/") in OWNED_MOUNT_PATHS:
                problems.append(f"spec.extraVolumeMounts[{i}].mountPath: {mount.mount_path} is the bookie's own "
                                "writable directory (an emptyDir)")
        sidecars = [c.name for c in self.sidecars]
        for i, name in enumerate(sidecars):
            if name == "bookie" or sidecars.index(name) != i:
                problems.append(f"spec.sidecars[{i}].name: {name} is taken")
        return problems


# The bookie configuration keys spec.tls writes, per purpose.
TLS_CONFIG_KEYS: dict[str, tuple[str, ...]] = {
    "bookie": ("tlsProviderFactoryClass", "tlsProvider", "tlsKeyStoreType", "tlsKeyStore", "tlsCertificatePath",
               "tlsTrustStoreType", "tlsTrustStore", "tlsClientAuthentication", "tlsCertFilesRefreshDurationSeconds",
               "bookieAuthProviderFactoryClass", "authorizedRoles"),
    "admin": ("httpServerTlsEnable", "httpServerTlsCertificatePath", "httpServerTlsKeyPath",
              "httpServerTlsTrustStorePath", "httpServerAllowedRoles", "tlsCertFilesRefreshDurationSeconds"),
    "zookeeper": ("zkTlsEnable", "zkTlsCertificatePath", "zkTlsKeyPath", "zkTlsTrustStorePath"),
}


def _owned(overrides: dict[str, Any]) -> None:
    problems = [f"spec.config.{key}: owned by the operator ({why})"
                for key, why in OWNED_CONFIG_KEYS.items() if key in overrides]
    if problems:
        raise ValueError("; ".join(problems))


def validate_java_config_overrides(overrides: dict[str, Any]) -> None:
    """Check spec.config of a Java-bookie cluster against Apache BookKeeper's own keys (values are scalars)."""
    _owned(overrides)
    known = java_config.apache_bookkeeper_keys()
    problems = []
    for key, value in overrides.items():
        if key not in known:
            close = difflib.get_close_matches(key, known, n=1)
            hint = f" (did you mean {close[0]}?)" if close else ""
            problems.append(f"spec.config.{key}: not an Apache BookKeeper {java_config.BOOKKEEPER_VERSION} "
                            f"configuration key{hint}")
        elif not isinstance(value, str | int | float | bool):
            problems.append(f"spec.config.{key}: must be a string, number or boolean")
    if problems:
        raise ValueError("; ".join(problems))


def validate_config_overrides(overrides: dict[str, Any], implied: dict[str, Any] | None = None) -> BookieConfig:
    """Check spec.config against bookie.config.BookieConfig; errors name ``spec.config.<key>``. ``implied``: keys
    the operator sets from other fields (their paths do not matter here), which rules across keys may need."""
    _owned(overrides)
    try:
        return BookieConfig.model_validate({**overrides, **(implied or {})})
    except ValidationError as exc:
        msgs = []
        for err in exc.errors():
            key = ".".join(str(p) for p in err["loc"])
            where = f"spec.config.{key}" if key else "spec.config"
            if err["type"] == "extra_forbidden":
                msgs.append(f"{where}: unknown bookie configuration key")
            else:
                msgs.append(f"{where}: {err['msg']}")
        raise ValueError("; ".join(msgs)) from None


def parse_spec(spec: dict[str, Any]) -> BookieClusterSpec:
    """Parse a BookieCluster spec; raises InvalidSpec whose message names each bad field."""
    try:
        return BookieClusterSpec.model_validate(spec)
    except ValidationError as exc:
        raise InvalidSpec(describe(exc, "spec")) from None


class InvalidSpec(ValueError):
    """A spec the operator will not act on; the message names the fields."""


def describe(exc: ValidationError, prefix: str) -> str:
    msgs = []
    for err in exc.errors():
        loc = ".".join(str(p) for p in err["loc"])
        msg = err["msg"].removeprefix("Value error, ")
        if msg.startswith("spec."):
            msgs.append(msg)
        else:
            msgs.append(f"{prefix}.{loc}: {msg}" if loc else f"{prefix}: {msg}")
    return "; ".join(msgs)


# -------------------------------------------------------------------------------------------- status
# metav1.Condition's validation (KEP-1623), so the API server accepts what the operator writes and generic
# tools (kstatus, Argo CD, kubectl wait) read it as they read any Kubernetes condition.
CONDITION_TYPE_PATTERN = (r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                          r"(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$")
CONDITION_REASON_PATTERN = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
CONDITION_MESSAGE_MAX = 32768


class Condition(Model):
    """One condition, as metav1.Condition: every field but observedGeneration is required."""

    type: str = Field(description="Ready, Progressing, Reconciling, Stalled, Degraded, Decommissioning, ...",
                      pattern=CONDITION_TYPE_PATTERN, max_length=316)
    status: Literal["True", "False", "Unknown"]
    reason: str = Field(description="CamelCase reason.", pattern=CONDITION_REASON_PATTERN, min_length=1,
                        max_length=1024)
    message: str = Field(description="Human-readable details (may be empty).", max_length=CONDITION_MESSAGE_MAX)
    last_transition_time: str = Field(description="When the status last changed (RFC 3339).",
                                      json_schema_extra={"format": "date-time"})
    observed_generation: int | None = Field(default=None, ge=0, description="The spec generation the condition "
                                            "was set from.")


class StartFailureStatus(Model):
    """Why a bookie's container cannot start, from its termination message."""

    reason: str = Field(description="WrongImage, UnsupportedVersion, DeviceError, CookieMismatch, IncompatibleDisk, "
                        "InvalidConfig, DirectoryNotWritable, MetadataUnreachable, DiskFull, PortInUse or "
                        "StartupFailed (docs/operator.md, Troubleshooting).")
    message: str = Field(description="The bookie's own words (its termination message, at most 4 KiB).")
    since: str = Field(description="When the operator first saw this reason for this bookie.")
    exit_code: int | None = None
    restart_count: int | None = Field(default=None, description="Restarts of the container so far.")


class BookieStatus(Model):
    pod: str
    ordinal: int
    bookie_id: str
    ready: bool = False
    state: Literal["Writable", "ReadOnly", "Unknown"] = "Unknown"
    read_only_reason: str | None = Field(default=None, description="Why it is read-only (operator or bookie).")
    unknown_reason: str | None = Field(default=None, description="Why the state is Unknown: the bookie's admin API "
                                       "did not answer, or answered too much or something malformed.")
    disk_used_fraction: float | None = None
    disk_total_bytes: int | None = None
    last_compaction_time: str | None = None
    next_compaction_time: str | None = None
    major_compactions: int | None = None
    minor_compactions: int | None = None
    forced_gc_at: str | None = Field(default=None, description="When the operator last forced a GC for disk usage.")
    start_failure: StartFailureStatus | None = Field(default=None, description="Why the bookie cannot start.")
    rack: str | None = Field(default=None, description="The rack published for it in /bookies, from its node's "
                             "region and zone.")


class CompactionRunStatus(Model):
    scheduled_for: str = Field(description="The schedule time this run belongs to.")
    pending: list[int] = Field(default_factory=list, description="Ordinals still to compact, in order.")
    active: int | None = Field(default=None, description="Ordinal being compacted.")
    active_since: str | None = None
    baseline_major: int | None = Field(default=None, description="Major compaction counter before the trigger.")
    baseline_minor: int | None = Field(default=None, description="Minor compaction counter before the trigger.")
    baseline_time_ms: int | None = Field(default=None, description="Last compaction time before the trigger.")
    done: list[int] = Field(default_factory=list, description="Ordinals compacted in this run.")


class CompactionStatus(Model):
    last_schedule_time: str | None = Field(default=None, description="Schedule time of the last run started.")
    last_completion_time: str | None = None
    next_schedule_time: str | None = None
    missed_runs: int = Field(default=0, description="Runs skipped because they were missed by more than the deadline.")
    run: CompactionRunStatus | None = None


DecommissionPhase = Literal["MarkingReadOnly", "Recovering", "AwaitingReplication", "DeletingCookie",
                            "ScalingDown", "ApplyingPvcPolicy"]


DataLossPhase = Literal["AwaitingAcceptance", "GivingUp", "GivenUp"]


class LostLedgerStatus(Model):
    ledger_id: int
    topic: str | None = Field(default=None, description="The Pulsar topic (or cursor) of the ledger, from its "
                              "custom metadata.")
    lost_entries: list[str] = Field(default_factory=list, description="Entry ranges with no surviving replica "
                                    "(first-last; first- : to the end of a ledger that was open).")
    replaced_by: list[str] = Field(default_factory=list, description="The live bookies that took the dead "
                                   "bookie's places holding only lost entries.")


class DataLossStatus(Model):
    """Ledgers a dead bookie being decommissioned took entries of with it (no surviving replica)."""

    bookie_id: str
    phase: DataLossPhase = Field(description="AwaitingAcceptance (spec.acceptDataLoss lacks some of "
                                 "them: nothing changes), GivingUp (accepted: their metadata is being "
                                 "repaired), GivenUp (done: what was lost stays listed here).")
    ledgers: list[LostLedgerStatus] = Field(default_factory=list)
    not_accepted: list[int] = Field(default_factory=list, description="Lost ledgers missing from "
                                    "spec.acceptDataLoss.")
    since: str
    message: str = ""


class DecommissionStatus(Model):
    ordinal: int
    pod: str
    bookie_id: str
    phase: DecommissionPhase
    started_at: str
    phase_since: str
    message: str = ""
    recovery_requested_at: str | None = Field(default=None, description="When autorecovery accepted the request.")


DecommissionRequestPhase = Literal["Refused", "Held", "Queued", "MarkingReadOnly", "Recovering",
                                   "AwaitingReplication", "DeletingCookie", "RecreatingBookie", "AwaitingNewBookie",
                                   "Done"]


class DecommissionRequestStatus(Model):
    """One entry of spec.decommission: refused, held, queued, in progress (the resumable phases) or done."""

    entry: str = Field(description="The spec.decommission entry, as written.")
    phase: DecommissionRequestPhase = Field(description="Refused (the entry names no bookie of this cluster, or "
                                            "the rest could not hold an ensemble), Held (waiting for a healthy "
                                            "cluster), Queued (another decommission goes first), the phases of "
                                            "the decommission, Done (kept while the entry stays in the spec).")
    ordinal: int | None = None
    pod: str | None = None
    bookie_id: str | None = None
    message: str = ""
    phase_since: str
    started_at: str | None = None
    completed_at: str | None = None
    recovery_requested_at: str | None = Field(default=None, description="When autorecovery accepted the request.")
    old_pod_uid: str | None = Field(default=None, description="The uid of the pod being replaced (only that pod "
                                    "and its volumes are deleted, never its empty successor).")


ExpansionPhase = Literal["Requested", "ControllerResizing", "FileSystemResizePending", "NodeResizing", "Expanded",
                         "Failed", "NotExpandable"]


class ClaimExpansionStatus(Model):
    claim: str
    ordinal: int
    target: str = Field(description="The size asked for this claim.")
    phase: ExpansionPhase = Field(description="Where the claim is in the resize protocol: Requested (patched, "
                                  "the resizer has not started), ControllerResizing (the storage grows), "
                                  "FileSystemResizePending (the kubelet grows the filesystem online while the "
                                  "bookie runs), NodeResizing, Expanded, Failed, NotExpandable (its "
                                  "StorageClass does not allow expansion).")
    message: str = ""
    since: str = Field(description="When the claim reached this phase.")


class VolumeExpansionStatus(Model):
    """The volume expansion run for the current storage sizes (kept after it completes, until the next one)."""

    journal_size: str = Field(description="spec.storage.journal.size this run grows the claims to.")
    ledgers_size: str = Field(description="spec.storage.ledgers.size this run grows the claims to.")
    started_at: str
    completed_at: str | None = None
    claims: list[ClaimExpansionStatus] = Field(default_factory=list, description="Each bookie's claims.")


class PinningLedger(Model):
    ledger_id: int
    topic: str | None = Field(default=None, description="The Pulsar topic that wrote it, when known.")
    pinned_garbage_bytes: int = Field(description="Garbage kept on disk by the old entry logs it pins.")
    old_logs: int = Field(description="Old entry logs it keeps from deletion.")


class AuditSummary(Model):
    """What the last complete audit found (the report store has every table and the HTML report)."""

    mode: str = Field(default="", description="metadata or full (only full checks replication and data loss).")
    logs: int = 0
    log_bytes: int = 0
    garbage_bytes: int = Field(default=0, description="Deleted ledgers' bytes in entry logs: what GC and "
                               "compaction can give back.")
    reclaimable_bytes: dict[str, int] = Field(default_factory=dict, description="Garbage bytes per bookie id.")
    top_pinning_ledgers: list[PinningLedger] = Field(default_factory=list, max_length=5,
                                                     description="Ledgers pinning the most garbage.")
    data_loss_entries: int = Field(default=0, description="Entries with no replica on any bookie of their write "
                                   "set (full mode), except those given up on purpose.")
    given_up_entries: int = Field(default=0, description="Entries with no replica in ranges their ledgers' "
                                  "metadata records as given up (spec.acceptDataLoss): known holes (full mode).")
    under_replicated_entries: int = Field(default=0, description="Entries with fewer replicas than their write "
                                          "quorum (full mode).")
    under_replicated_ledgers: int = Field(default=0, description="Ledgers marked under-replicated in ZooKeeper.")
    flagged: int = Field(default=0, description="Corrupt, truncated or vanished spans of entry logs.")
    findings: list[str] = Field(default_factory=list, max_length=12, description="The report's first lines.")


class AuditRunStatus(Model):
    id: str = Field(description="The run's name: its Job and its directory in the report store.")
    scheduled_for: str
    started_at: str
    phase: Literal["Running", "Succeeded", "Failed"] = "Running"
    completed_at: str | None = None
    message: str = ""
    report: str | None = Field(default=None, description="In-cluster URL of its HTML report.")
    compacted: list[int] = Field(default_factory=list, description="Ordinals whose compaction it forced.")
    request: str | None = Field(default=None, description=f"The {AUDIT_REQUEST_ANNOTATION} annotation it was run "
                                "for; none: its schedule's fire time.")


class AuditStatus(Model):
    last_schedule_time: str | None = None
    next_schedule_time: str | None = None
    missed_runs: int = 0
    last_request: str | None = Field(default=None, description=f"The last value of the {AUDIT_REQUEST_ANNOTATION} "
                                     "annotation acted on: a new value starts a run now.")
    run: AuditRunStatus | None = Field(default=None, description="The run in progress.")
    last_run: AuditRunStatus | None = Field(default=None, description="The last finished run.")
    last_success_time: str | None = None
    summary: AuditSummary | None = Field(default=None, description="What the last successful run found.")


Implementation = Literal["bookie-fleet", "apache-bookkeeper"]
ImplementationSwitchPhase = Literal["Waiting", "Restarting", "Paused", "Failed"]


class ImplementationSwitchStatus(Model):
    """The switch of the bookies to spec.implementation, one pod at a time (gone once every pod runs it)."""

    target: Implementation = Field(description="The implementation the bookies are switched to.")
    source: Implementation = Field(description="The implementation they ran before.")
    phase: ImplementationSwitchPhase = Field(description="Waiting (for a healthy cluster before the next bookie), "
                                             "Restarting (the current bookie is restarted on the target), Paused "
                                             "(spec.implementationSwitch.paused), Failed (the current bookie "
                                             "cannot start on the target: the switch stops there).")
    current: int | None = Field(default=None, description="Ordinal of the bookie being restarted.")
    converted: list[int] = Field(default_factory=list, description="Ordinals running the target implementation.")
    remaining: list[int] = Field(default_factory=list, description="Ordinals still running the source, in the "
                                 "order they will be switched.")
    started_at: str
    phase_since: str
    message: str = ""


RebalancePhase = Literal["Balanced", "Moving", "Held", "Paused"]


class ReplicaMoveStatus(Model):
    """One replica move, recorded before it is asked of the target bookie (so a restarted operator redoes it)."""

    ledger_id: int = Field(ge=0)
    source: str = Field(description="The bookie id the replica leaves.")
    target: str = Field(description="The bookie id it moves to (its autorecovery copies it).")
    bytes: int = Field(default=0, ge=0, description="The replica's estimated size.")
    requested: bool = Field(default=False, description="The target accepted the move.")
    started_at: str


class FailedReplicaMove(Model):
    """A ledger whose replica move failed: not planned again before ``retryAfter`` (the wait doubles with each
    failure, up to an hour), so a move that cannot succeed is not retried in a loop."""

    ledger_id: int = Field(ge=0)
    target: str = Field(description="The bookie id it failed to move to.")
    failures: int = Field(ge=1, description="Failures in a row.")
    retry_after: str = Field(description="When the ledger may be planned again.")
    last_error: str = ""


class RebalanceStatus(Model):
    """spec.rebalance's progress (kept while it is enabled)."""

    phase: RebalancePhase = Field(description="Balanced (usage within maxSpread), Moving, Held (a bookie not ready, "
                                  "ledgers under-replicated, a decommission or a switch running: message says "
                                  "which), Paused (spec.rebalance.paused).")
    message: str = ""
    spread: float | None = Field(default=None, description="Fullest minus emptiest bookie's usage (0..1).")
    moves: list[ReplicaMoveStatus] = Field(default_factory=list, description="Moves in flight.")
    moves_done: int = Field(default=0, ge=0)
    bytes_moved: int = Field(default=0, ge=0)
    moves_failed: int = Field(default=0, ge=0)
    failed_moves: list[FailedReplicaMove] = Field(
        default_factory=list, max_length=100,
        description="Ledgers whose last move failed, each held back until its retryAfter (the 100 latest).")
    since: str | None = Field(default=None, description="When the phase began.")


class ReReplicationStatus(Model):
    """BookKeeper's re-replication suspended for a planned restart of the bookies (gone once restored)."""

    reason: str = Field(description="The planned restart it is suspended for.")
    previously_disabled: bool = Field(description="Replication was already disabled by someone else when the "
                                      "restart began: it is left disabled afterwards.")
    since: str


class BookieClusterStatus(Model):
    observed_generation: int | None = None
    replicas: int = 0
    ready_replicas: int = 0
    writable_bookies: int = 0
    label_selector: str | None = None
    config_checksum: str | None = None
    instance_id: str | None = Field(default=None, description="BookKeeper instance id of the metadata service.")
    conditions: list[Condition] = Field(
        default_factory=list, description="Conditions keyed by type (one of each type).",
        json_schema_extra={"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["type"]})
    bookies: list[BookieStatus] = Field(default_factory=list)
    compaction: CompactionStatus = Field(default_factory=CompactionStatus)
    audit: AuditStatus = Field(default_factory=AuditStatus)
    decommission: DecommissionStatus | None = None
    data_loss: DataLossStatus | None = Field(default=None, description="Entries a dead bookie took with it, "
                                             "listed before they are given up, and kept once they are.")
    implementation_switch: ImplementationSwitchStatus | None = Field(
        default=None, description="A change of spec.implementation rolled out one bookie at a time.")
    re_replication_suspended: ReReplicationStatus | None = Field(
        default=None, description="Re-replication disabled (underreplication/disable) while the operator restarts "
        "bookies on purpose; what to restore once every bookie is back.")
    volume_expansion: VolumeExpansionStatus | None = Field(
        default=None, description="Growing the bookies' claims to larger spec.storage sizes, claim by claim.")
    decommissioned: list[str] = Field(default_factory=list, description="Bookie ids decommissioned (newest last).")
    decommission_requests: list[DecommissionRequestStatus] = Field(
        default_factory=list, description="What became of each spec.decommission entry (in spec order).")
    rebalance: RebalanceStatus | None = Field(default=None, description="Moving ledger replicas from the fullest "
                                              "bookies to the emptiest (spec.rebalance).")
    adoption: AdoptionStatus | None = Field(default=None, description="Taking over the StatefulSet of "
                                            "spec.adopt, phase by phase.")
    scaled_up_by: int = Field(default=0, ge=0, description="Bookies the operator added for disk pressure: the "
                              "StatefulSet runs spec.replicas plus this (the spec is never written, so GitOps "
                              "controllers see no drift); lowered again only through the safe decommission.")


def parse_status(status: dict[str, Any] | None) -> BookieClusterStatus:
    """Status as last written by the operator; unknown or damaged parts are dropped, never fatal."""
    data = {k: v for k, v in (status or {}).items() if k in _STATUS_KEYS}
    if isinstance(data.get("conditions"), list):
        # One condition that no longer validates (written before metav1.Condition's rules applied) is dropped
        # alone, so the others keep their lastTransitionTime.
        data["conditions"] = [c for c in data["conditions"] if _valid_condition(c)]
    try:
        return BookieClusterStatus.model_validate(data)
    except ValidationError:
        keep = {}
        for key, value in data.items():
            try:
                BookieClusterStatus.model_validate({key: value})
                keep[key] = value
            except ValidationError:
                continue
        return BookieClusterStatus.model_validate(keep)


def _valid_condition(data: Any) -> bool:
    try:
        Condition.model_validate(data)
    except ValidationError:
        return False
    return True


_STATUS_KEYS = {f.alias or name for name, f in BookieClusterStatus.model_fields.items()}
