"""Redundancy of a deployed stack (``nfvcat check``): for every Nova server group of the stack, that it has the
``anti-affinity`` (or ``soft-anti-affinity``) policy, that at least two of the stack's servers are its members
and that they run on different compute hosts; for every VIP of the stack (a reserved port: a port of the stack
no server uses), that every data port of the group's servers on the VIP's network allows its address
(allowed_address_pairs).

Hosts: ``OS-EXT-SRV-ATTR:host`` where the caller sees it (admin), else ``hostId``, which Nova shows every
project (a hash of the host and the project: equal for two servers of one project exactly when they share a
host). A server without either (not scheduled) gives "unknown", never "pass".
"""

from __future__ import annotations

import ipaddress
from typing import Any

from nfvcat.cloud.connect import call
from nfvcat.cloud.verdicts import FAIL, PASS, UNKNOWN, Verdict

ANTI_AFFINITY = {"anti-affinity": "anti-affinity", "soft-anti-affinity": "soft-anti-affinity (best effort)"}
GROUP_MICROVERSION = "2.64"  # server groups with "policy" (one string) instead of "policies"


def _resources(conn: Any, stack_name: str) -> list[dict[str, Any]]:
    body = call(conn.orchestration, "GET", f"/stacks/{stack_name}/resources?nested_depth=5",
                f"stack {stack_name} resources", ok=(200, 404))
    return list((body or {}).get("resources", []))


def _allows(pairs: list[dict[str, Any]], address: str) -> bool:
    ip = ipaddress.ip_address(address)
    for pair in pairs:
        try:
            if ip in ipaddress.ip_network(str(pair.get("ip_address", "")), strict=False):
                return True
        except ValueError:
            continue
    return False


def check(conn: Any, stack_name: str) -> list[Verdict]:
    """The redundancy verdicts of the stack (none when it has no server group)."""
    resources = [r for r in _resources(conn, stack_name) if r.get("physical_resource_id")]
    groups = [r for r in resources if r.get("resource_type") == "OS::Nova::ServerGroup"]
    if not groups:
        return []
    # a nested template's server is named by the resource that nests it (vrouter_a, not "server")
    servers = {str(r["physical_resource_id"]): str(r.get("parent_resource") or r["resource_name"]) for r in resources
               if r.get("resource_type") == "OS::Nova::Server"}
    stack_ports = [str(r["physical_resource_id"]) for r in resources if r.get("resource_type") == "OS::Neutron::Port"]
    vips = []
    for pid in stack_ports:
        port = call(conn.network, "GET", f"/ports/{pid}", f"port {pid}", ok=(200, 404))
        if port and not port["port"].get("device_id"):
            vips.append(port["port"])
    out: list[Verdict] = []
    for res in groups:
        out += _group(conn, str(res["resource_name"]), str(res["physical_resource_id"]), servers, vips)
    return out


def _group(conn: Any, rname: str, gid: str, servers: dict[str, str], vips: list[dict[str, Any]]) -> list[Verdict]:
    out: list[Verdict] = []

    def add(subject: str, check: str, status: str, detail: str) -> None:
        out.append(Verdict(rname, subject, check, status, detail))

    body = call(conn.compute, "GET", f"/os-server-groups/{gid}", f"server group {gid}",
                microversion=GROUP_MICROVERSION, ok=(200, 404))
    if body is None:
        add(gid, "server group exists", FAIL, "Nova has no server group with this id")
        return out
    group = body["server_group"]
    gname = str(group.get("name") or gid)
    policy = str(group.get("policy") or ",".join(group.get("policies") or []))
    # soft-anti-affinity is best effort: co-located members are what it allows, and the detail says so
    add(gname, "anti-affinity policy", PASS if policy in ANTI_AFFINITY else FAIL,
        ANTI_AFFINITY.get(policy, policy or "no policy"))
    members = [str(m) for m in group.get("members") or []]
    mine = [sid for sid in members if sid in servers]
    outside = sorted(set(servers) - set(members))
    detail = ", ".join(servers[s] for s in mine) or "none"
    if outside:
        detail += f"; not in the group: {', '.join(servers[s] for s in outside)}"
    add(gname, "members (>= 2 servers of the stack)", PASS if len(mine) >= 2 else FAIL, detail)
    hosts: dict[str, tuple[str, str]] = {}  # server id -> (host or hostId, what it is)
    unknown = []
    for sid in mine:
        srv = call(conn.compute, "GET", f"/servers/{sid}", f"server {sid}")["server"]
        if srv.get("OS-EXT-SRV-ATTR:host"):
            hosts[sid] = (str(srv["OS-EXT-SRV-ATTR:host"]), "host")
        elif srv.get("hostId"):
            hosts[sid] = (str(srv["hostId"]), "hostId")
        else:
            unknown.append(f"{servers[sid]} ({srv.get('status')}, no host)")
    if len(mine) >= 2:
        shared: dict[str, list[str]] = {}
        for sid, (host, _) in hosts.items():
            shared.setdefault(host, []).append(servers[sid])
        same = [f"{', '.join(names)} on {host[:16]}" for host, names in shared.items() if len(names) > 1]
        seen = "; ".join(f"{servers[s]}: {kind} {host[:16]}" for s, (host, kind) in hosts.items())
        if same and policy == "soft-anti-affinity":
            # what the template asked for: Nova may co-locate the members when no other host fits
            add(gname, "members on different hosts", PASS,
                f"soft-anti-affinity (best effort) allowed it: {'; '.join(same)}; no host redundancy")
        elif same:
            add(gname, "members on different hosts", FAIL, "; ".join(same))
        elif unknown:
            add(gname, "members on different hosts", UNKNOWN, "; ".join(unknown))
        else:
            add(gname, "members on different hosts", PASS, seen)
    for vip in vips:
        out += _vip(conn, rname, vip, mine, servers)
    return out


def _vip(conn: Any, rname: str, vip: dict[str, Any], members: list[str], servers: dict[str, str]) -> list[Verdict]:
    out: list[Verdict] = []
    vname = str(vip.get("name") or vip["id"])
    ips = [str(f["ip_address"]) for f in vip.get("fixed_ips") or [] if f.get("ip_address")]
    if not ips:
        return [Verdict(rname, vname, "VIP address reserved", FAIL, "the VIP port has no fixed IP")]
    for sid in members:
        ports = call(conn.network, "GET", f"/ports?device_id={sid}&network_id={vip['network_id']}",
                     f"ports of {servers[sid]}")["ports"]
        if not ports:
            out.append(Verdict(rname, servers[sid], f"allows VIP {', '.join(ips)}", FAIL,
                               f"no port on the VIP's network {vip['network_id']}"))
        for port in sorted(ports, key=lambda p: p.get("name") or p["id"]):
            pairs = port.get("allowed_address_pairs") or []
            missing = [ip for ip in ips if not _allows(pairs, ip)]
            have = ", ".join(str(p.get("ip_address")) for p in pairs) or "none"
            security = "" if port.get("port_security_enabled", True) else " (port security disabled)"
            out.append(Verdict(rname, str(port.get("name") or port["id"]), f"allows VIP {', '.join(ips)}",
                               FAIL if missing else PASS, f"allowed_address_pairs: {have}{security}"))
    return out
