"""A pod's /etc/resolv.conf, as the kubelet writes it from ``dnsPolicy`` and ``dnsConfig``.

``ClusterFirst`` (the default): the cluster DNS server, the search list ``<namespace>.svc.<domain>
svc.<domain> <domain>`` followed by the node's own, ``options ndots:5``. ``Default``: the node's resolv.conf
(a ``hostNetwork`` pod with ``ClusterFirst`` gets that too; ``ClusterFirstWithHostNet`` keeps cluster DNS).
``None``: only ``dnsConfig``. ``dnsConfig`` adds nameservers, search domains and options (an option given
again replaces the earlier value), within the kubelet's limits of 3 nameservers and 32 search domains.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

Obj = dict[str, Any]
MAX_NAMESERVERS = 3
MAX_SEARCHES = 32


@dataclass(frozen=True)
class ClusterDNS:
    server: str
    domain: str


@dataclass(frozen=True)
class Resolv:
    nameservers: tuple[str, ...] = ()
    searches: tuple[str, ...] = ()
    options: tuple[str, ...] = ()

    @classmethod
    def parse(cls, text: str) -> Resolv:
        nameservers: list[str] = []
        searches: list[str] = []
        options: list[str] = []
        for line in text.splitlines():
            fields = line.split("#", 1)[0].split()
            if not fields:
                continue
            if fields[0] == "nameserver" and len(fields) > 1:
                nameservers.append(fields[1])
            elif fields[0] in ("search", "domain"):
                searches = fields[1:]
            elif fields[0] == "options":
                options += fields[1:]
        return cls(tuple(nameservers), tuple(searches), tuple(options))

    def render(self) -> str:
        lines = [f"nameserver {n}" for n in self.nameservers]
        if self.searches:
            lines.append("search " + " ".join(self.searches))
        if self.options:
            lines.append("options " + " ".join(self.options))
        return "\n".join(lines) + "\n"


def _merge_options(options: list[str], extra: list[Obj]) -> list[str]:
    merged = {o.split(":", 1)[0]: o for o in options}
    for option in extra:
        name = str(option["name"])
        merged[name] = f"{name}:{option['value']}" if option.get("value") is not None else name
    return list(merged.values())


def resolv_conf(pod: Obj, cluster: ClusterDNS, node: Resolv) -> str:
    spec = pod["spec"]
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    if policy == "ClusterFirst" and spec.get("hostNetwork"):
        policy = "Default"
    if policy in ("ClusterFirst", "ClusterFirstWithHostNet"):
        namespace = pod["metadata"]["namespace"]
        base = Resolv((cluster.server,), (f"{namespace}.svc.{cluster.domain}", f"svc.{cluster.domain}",
                                          cluster.domain, *node.searches), ("ndots:5",))
    elif policy == "Default":
        base = node
    else:   # None
        base = Resolv()
    config = spec.get("dnsConfig") or {}
    nameservers = [*base.nameservers, *(config.get("nameservers") or [])][:MAX_NAMESERVERS]
    searches = list(dict.fromkeys([*base.searches, *(config.get("searches") or [])]))[:MAX_SEARCHES]
    options = _merge_options(list(base.options), config.get("options") or [])
    return Resolv(tuple(nameservers), tuple(searches), tuple(options)).render()
