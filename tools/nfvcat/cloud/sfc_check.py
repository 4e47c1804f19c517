"""``nfvcat check`` of a stack's networking-sfc resources: does what Neutron holds match what the template meant,
and (with host access) did the Open vSwitch agents program the chain on br-int?

What the template meant is read back from Heat: the stack's template (``GET /stacks/{name}/{id}/template``),
each SFC resource's properties resolved from ``get_resource`` (the physical id), ``get_attr`` (the resource's
attributes, e.g. a nested VNF's ``left_port`` output) and ``get_param`` (the stack's parameters; a port given by
name is looked up). What Neutron holds: ``GET /sfc/port_pairs|port_pair_groups|flow_classifiers|port_chains``.

Checks:
- ``port pair ingress`` / ``port pair egress``: the port the template meant, and a port of a server of the stack;
- ``port pair group members``: the group holds exactly the template's port pairs;
- ``flow classifier source port`` (and ``destination port`` when the template sets one);
- ``port chain groups`` (the template's groups, in order) and ``port chain classifiers``;
- with host access (:class:`nfvcat.cloud.hostaccess.SwitchAccess`), on the br-int of the host each port is bound
  to (``ovs-ofctl -O OpenFlow13 dump-flows/dump-groups``): ``chain group on br-int`` (networking-sfc's OVS
  driver makes OpenFlow group ``group_id`` of each port pair group, a bucket per port pair setting the ingress
  port's MAC), ``classifier flow on br-int`` (table 0: from the logical source port to the first group),
  ``ingress flow on br-int`` (to each port pair's ingress port), ``egress flow on br-int`` (from each egress
  port: on to the next group, or back to normal switching after the last one). Without host access these are
  "needs host access"; a port whose binding host is hidden gives "needs admin".
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from nfvcat.cloud.connect import call
from nfvcat.cloud.hostaccess import HostAccess, SwitchAccess
from nfvcat.cloud.stacks import stack_resources
from nfvcat.cloud.verdicts import ADMIN, FAIL, HOST_ACCESS, PASS, UNKNOWN, Verdict

SFC_TYPES = {
    "OS::Neutron::PortPair": "port_pairs",
    "OS::Neutron::PortPairGroup": "port_pair_groups",
    "OS::Neutron::FlowClassifier": "flow_classifiers",
    "OS::Neutron::PortChain": "port_chains",
}
INGRESS_TABLE = 10  # networking-sfc's OVS agent: the table steering into a service function's ingress port
# a bucket's new destination MAC: mod_dl_dst as given, set_field as OpenFlow 1.3 dumps show it
BUCKET_MAC = re.compile(r"(?:mod_dl_dst:|set_field:)([0-9a-fA-F]{2}(?::[0-9a-fA-F]{2}){5})(?:->eth_dst)?")
UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


@dataclass
class Res:
    """One SFC resource of the stack: what the template meant (``want``) and what Neutron has (``got``)."""
    name: str  # the resource name in its template
    kind: str  # port_pairs | port_pair_groups | flow_classifiers | port_chains
    id: str
    want: dict[str, Any] = field(default_factory=dict)
    got: dict[str, Any] = field(default_factory=dict)
    unresolved: dict[str, str] = field(default_factory=dict)  # property -> why its intent is not known


class Unresolved(Exception):
    pass


class StackView:
    """One (nested) stack: its template, parameters and resources, to resolve the template's intent."""

    def __init__(self, conn: Any, stack: str) -> None:
        self.conn = conn
        self.stack = stack  # "name/id"
        self.template = call(conn.orchestration, "GET", f"/stacks/{stack}/template", f"template of stack {stack}")
        body = call(conn.orchestration, "GET", f"/stacks/{stack}", f"stack {stack}")["stack"]
        self.parameters = {str(k): v for k, v in (body.get("parameters") or {}).items()}
        self._resources: dict[str, dict[str, Any]] = {}

    def resource(self, name: str) -> dict[str, Any]:
        if name not in self._resources:
            self._resources[name] = call(self.conn.orchestration, "GET", f"/stacks/{self.stack}/resources/{name}",
                                         f"resource {name} of stack {self.stack}")["resource"]
        return self._resources[name]

    def resolve(self, value: Any) -> Any:
        """A property value with get_resource / get_attr / get_param resolved (lists and maps element-wise)."""
        if isinstance(value, dict) and len(value) == 1:
            (fn, arg), = value.items()
            if fn == "get_resource":
                return self.resource(str(arg)).get("physical_resource_id")
            if fn == "get_attr":
                path = arg if isinstance(arg, list) else [arg]
                attrs = self.resource(str(path[0])).get("attributes") or {}
                out: Any = attrs.get(str(path[1])) if len(path) > 1 else attrs
                for key in path[2:]:
                    out = out[key] if isinstance(out, (list, dict)) else None
                return out
            if fn == "get_param":
                key = arg[0] if isinstance(arg, list) else arg
                if str(key) not in self.parameters:
                    raise Unresolved(f"parameter {key}")
                return self.parameters[str(key)]
            if not fn.startswith("get_") and not fn.startswith("str_") and fn not in ("list_join", "if"):
                return {fn: self.resolve(arg)}
            raise Unresolved(f"{fn} (nfvcat check resolves get_resource, get_attr and get_param)")
        if isinstance(value, list):
            return [self.resolve(v) for v in value]
        if isinstance(value, dict):
            return {k: self.resolve(v) for k, v in value.items()}
        return value


def _stack_of(resource: dict[str, Any]) -> str | None:
    """``name/id`` of the stack a listed resource belongs to (its ``stack`` link)."""
    for link in resource.get("links") or []:
        if link.get("rel") == "stack":
            parts = str(link.get("href", "")).rstrip("/").split("/")
            return f"{parts[-2]}/{parts[-1]}" if len(parts) >= 2 else None
    return None


class SfcChecker:
    def __init__(self, conn: Any, stack_name: str, access: HostAccess | None) -> None:
        self.conn = conn
        self.stack_name = stack_name
        self.access = access
        self.verdicts: list[Verdict] = []
        self._ports: dict[str, dict[str, Any] | None] = {}
        self._dumps: dict[tuple[str, str], str | None] = {}

    def add(self, vnf: str, subject: str, check: str, status: str, detail: str = "") -> None:
        self.verdicts.append(Verdict(vnf, subject, check, status, detail))

    def port(self, pid: str) -> dict[str, Any] | None:
        if pid not in self._ports:
            body = call(self.conn.network, "GET", f"/ports/{pid}", f"port {pid}", ok=(200, 404))
            self._ports[pid] = (body or {}).get("port")
        return self._ports[pid]

    def port_id(self, ref: Any) -> str | None:
        """A port given by ID or name (as a template parameter may give it) -> its ID."""
        if not ref:
            return None
        ref = str(ref)
        if UUID.match(ref):
            return ref
        ports = call(self.conn.network, "GET", f"/ports?name={ref}", f"port {ref}")["ports"]
        return str(ports[0]["id"]) if len(ports) == 1 else ref

    def port_label(self, pid: str | None) -> str:
        if not pid:
            return "none"
        p = self.port(pid)
        return f"{p.get('name') or pid} ({pid})" if p else f"{pid} (no such port)"

    def run(self) -> list[Verdict]:
        everything = stack_resources(self.conn, self.stack_name)
        listed = [r for r in everything if r.get("resource_type") in SFC_TYPES]
        if not listed:
            return []
        servers = {str(r["physical_resource_id"]): str(r.get("parent_resource") or r["resource_name"])
                   for r in everything
                   if r.get("resource_type") == "OS::Nova::Server" and r.get("physical_resource_id")}
        views: dict[str, StackView] = {}
        res: dict[str, Res] = {}
        for r in listed:
            kind = SFC_TYPES[r["resource_type"]]
            rid = str(r.get("physical_resource_id") or "")
            item = Res(str(r["resource_name"]), kind, rid)
            stack = _stack_of(r) or self.stack_name
            if stack not in views:
                views[stack] = StackView(self.conn, stack)
            props = ((views[stack].template.get("resources") or {}).get(item.name) or {}).get("properties") or {}
            for key, value in props.items():
                try:
                    item.want[key] = views[stack].resolve(value)
                except Unresolved as exc:
                    item.unresolved[key] = str(exc)
            if rid:
                body = call(self.conn.network, "GET", f"/sfc/{kind}/{rid}", f"{kind[:-1]} {rid}", ok=(200, 404))
                item.got = (body or {}).get(kind[:-1]) or {}
            if not item.got:
                self.add(self.stack_name, item.name, "exists in Neutron", FAIL,
                         f"{kind[:-1]} {rid or '(no physical id)'} not found")
            res[item.name] = item
        by_id = {x.id: x for x in res.values() if x.id}
        for x in res.values():
            if not x.got:
                continue
            if x.kind == "port_pairs":
                self._port_pair(x, servers)
            elif x.kind == "port_pair_groups":
                self._group(x, by_id)
            elif x.kind == "flow_classifiers":
                self._classifier(x)
            else:
                self._chain(x, by_id)
                self._switch(x, by_id)
        return self.verdicts

    def _unknown(self, r: Res, key: str, check: str) -> bool:
        """An "unknown" verdict when the template's intent for ``key`` could not be read back."""
        if key not in r.unresolved:
            return False
        self.add(self.stack_name, r.got.get("name") or r.name, check, UNKNOWN,
                 f"the template's {key} is not known: cannot resolve {r.unresolved[key]}")
        return True

    # -- what Neutron holds against the template --------------------------------------------------------------

    def _port_pair(self, r: Res, servers: dict[str, str]) -> None:
        for side in ("ingress", "egress"):
            if self._unknown(r, side, f"port pair {side}"):
                continue
            got = r.got.get(side)
            want = self.port_id(r.want.get(side))
            port = self.port(str(got)) if got else None
            owner = servers.get(str((port or {}).get("device_id") or ""))
            problems = []
            if want and got != want:
                problems.append(f"the template means {self.port_label(want)}")
            if owner is None:
                problems.append("not a port of a server of this stack")
            vnf = owner or servers.get(str((self.port(want) or {}).get("device_id") or "") if want else "") or "?"
            self.add(vnf, r.got.get("name") or r.name, f"port pair {side}", FAIL if problems else PASS,
                     f"{self.port_label(got)}" + (f" of {owner}" if owner else "") +
                     (": " + "; ".join(problems) if problems else ""))

    def _group(self, r: Res, by_id: dict[str, Res]) -> None:
        if self._unknown(r, "port_pairs", "port pair group members"):
            return
        got = [str(x) for x in r.got.get("port_pairs") or []]
        want = [str(x) for x in r.want.get("port_pairs") or []]
        names = {i: by_id[i].name if i in by_id else i for i in got + want}
        ok = sorted(got) == sorted(want)
        self.add(self.stack_name, r.got.get("name") or r.name, "port pair group members", PASS if ok else FAIL,
                 f"{[names[i] for i in got]}" + ("" if ok else f", the template means {[names[i] for i in want]}"))

    def _classifier(self, r: Res) -> None:
        for key, check in (("logical_source_port", "flow classifier source port"),
                           ("logical_destination_port", "flow classifier destination port")):
            if (r.want.get(key) or r.got.get(key) or key in r.unresolved) and self._unknown(r, key, check):
                continue
            want = self.port_id(r.want.get(key))
            got = r.got.get(key)
            if not want and not got:
                continue
            self.add(self.stack_name, r.got.get("name") or r.name, check, PASS if got == want else FAIL,
                     self.port_label(got) + ("" if got == want else f", the template means {self.port_label(want)}"))

    def _chain(self, r: Res, by_id: dict[str, Res]) -> None:
        name = r.got.get("name") or r.name
        for key, check, ordered in (("port_pair_groups", "port chain groups", True),
                                    ("flow_classifiers", "port chain classifiers", False)):
            if self._unknown(r, key, check):
                continue
            got = [str(x) for x in r.got.get(key) or []]
            want = [str(x) for x in r.want.get(key) or []]
            label = {i: by_id[i].name if i in by_id else i for i in got + want}
            ok = got == want if ordered else sorted(got) == sorted(want)
            self.add(self.stack_name, name, check, PASS if ok else FAIL,
                     f"{[label[i] for i in got]}" + ("" if ok else f", the template means {[label[i] for i in want]}")
                     + (" (in order)" if ordered and ok else ""))

    # -- what the Open vSwitch agents programmed ------------------------------------------------------------------

    def _switch(self, chain: Res, by_id: dict[str, Res]) -> None:
        name = chain.got.get("name") or chain.name
        checks = ("chain group on br-int", "classifier flow on br-int", "ingress flow on br-int",
                  "egress flow on br-int")
        if not isinstance(self.access, SwitchAccess):
            why = ("no API shows the flows and groups networking-sfc's OVS agent programs (check --host-access)"
                   if self.access is None else f"{self.access.name} has no Open vSwitch access")
            for check in checks:
                self.add(self.stack_name, name, check, HOST_ACCESS, why)
            return
        access = self.access
        groups = [self._neutron(by_id, "port_pair_groups", g) for g in chain.got.get("port_pair_groups") or []]
        pairs = [[self._neutron(by_id, "port_pairs", p) for p in g.get("port_pairs") or []] for g in groups]
        sources = [str(c.get("logical_source_port")) for c in
                   (self._neutron(by_id, "flow_classifiers", f) for f in chain.got.get("flow_classifiers") or [])
                   if c.get("logical_source_port")]
        # the group of each port pair group, on the host of every port that sends into it
        for gi, (group, members) in enumerate(zip(groups, pairs, strict=True)):
            senders = sources if gi == 0 else [str(p.get("egress")) for p in pairs[gi - 1]]
            macs = sorted(str((self.port(str(p.get("ingress"))) or {}).get("mac_address", "")).lower()
                          for p in members)
            for sender in senders:
                where = self._where(name, "chain group on br-int", sender)
                if where is None:
                    continue
                host, bridge, _ = where
                gid = group.get("group_id")
                text = self._dump(access, host, bridge, "dump-groups")
                line = next((g for g in (text or "").splitlines() if f"group_id={gid}," in g), None)
                got_macs = sorted(m.lower() for m in BUCKET_MAC.findall(line or ""))
                ok = line is not None and got_macs == macs
                self.add(self.stack_name, group.get("name") or group.get("id", "?"), "chain group on br-int",
                         PASS if ok else FAIL,
                         f"{host} {bridge}: " + (f"group {gid} buckets to {got_macs}" if line else
                                                 f"no group {gid}") +
                         ("" if ok else f", want buckets to the ingress ports {macs}"))
                prefix = "classifier" if gi == 0 else "egress"
                self._flow(access, name, f"{prefix} flow on br-int", sender, [f"group:{gid}"], table=0)
        for members in pairs:
            for p in members:
                ingress = str(p.get("ingress"))
                where = self._where(name, "ingress flow on br-int", ingress)
                if where is not None:
                    mac = str((self.port(ingress) or {}).get("mac_address", "")).lower()
                    self._flow(access, name, "ingress flow on br-int", ingress, [f"output:{where[2]}"],
                               table=INGRESS_TABLE, match=f"dl_dst={mac}")
        for p in pairs[-1] if pairs else []:
            self._flow(access, name, "egress flow on br-int", str(p.get("egress")), ["NORMAL"], table=0)

    def _neutron(self, by_id: dict[str, Res], kind: str, rid: str) -> dict[str, Any]:
        if rid in by_id and by_id[rid].got:
            return by_id[rid].got
        body = call(self.conn.network, "GET", f"/sfc/{kind}/{rid}", f"{kind[:-1]} {rid}", ok=(200, 404))
        return (body or {}).get(kind[:-1]) or {"id": rid}

    def _where(self, chain: str, check: str, pid: str) -> tuple[str, str, int] | None:
        """(host, integration bridge, OpenFlow port) of a port, or None after a verdict saying why not."""
        assert isinstance(self.access, SwitchAccess)
        port = self.port(pid)
        label = self.port_label(pid)
        if port is None:
            self.add(self.stack_name, chain, check, FAIL, f"{label}")
            return None
        if "binding:host_id" not in port:
            self.add(self.stack_name, chain, check, ADMIN, f"{label}: binding:host_id is admin-only")
            return None
        host = str(port.get("binding:host_id") or "")
        bridge = str((port.get("binding:vif_details") or {}).get("bridge_name") or "br-int")
        if not host:
            self.add(self.stack_name, chain, check, FAIL, f"{label}: not bound to a host")
            return None
        ofport = self.access.ofport(host, pid)
        if ofport is None:
            self.add(self.stack_name, chain, check, UNKNOWN if not self.access.knows(host) else FAIL,
                     f"{label}: " + (f"{self.access.name} cannot reach the switch of {host}"
                                     if not self.access.knows(host) else f"no OpenFlow port on {host}'s switch"))
            return None
        return host, bridge, ofport

    def _dump(self, access: SwitchAccess, host: str, bridge: str, what: str) -> str | None:
        key = (host, f"{bridge} {what}")
        if key not in self._dumps:
            self._dumps[key] = access.openflow(host, bridge, what)
        return self._dumps[key]

    def _flow(self, access: SwitchAccess, chain: str, check: str, pid: str, actions: list[str], table: int,
              match: str | None = None) -> None:
        """A flow of ``table`` on the port's host (matching the port's in_port, or ``match``) whose actions hold
        every one of ``actions``."""
        where = self._where(chain, check, pid)
        if where is None:
            return
        host, bridge, ofport = where
        text = self._dump(access, host, bridge, "dump-flows") or ""
        want = match or f"in_port={ofport}"
        flows = [f for f in text.splitlines() if f" table={table}," in f" {f.strip()}" and
                 re.search(rf"[ ,]{re.escape(want)}[ ,]", f)]
        hit = [f for f in flows if all(a.lower() in f.split("actions=", 1)[-1].lower() for a in actions)]
        self.add(self.stack_name, self.port_label(pid), check, PASS if hit else FAIL,
                 f"{host} {bridge}: " + (f"table {table} {want} -> {hit[0].split('actions=', 1)[-1]}" if hit else
                                         f"no table {table} flow on {want} with actions {actions}" +
                                         (f" ({len(flows)} with other actions)" if flows else "")))


def check(conn: Any, stack_name: str, access: HostAccess | None = None) -> list[Verdict]:
    """The SFC verdicts of a stack ([] for a stack without networking-sfc resources)."""
    return SfcChecker(conn, stack_name, access).run()
