"""The chain diagram of a HOT entry, drawn from its template as an inline SVG (no script, nothing loaded): the
VNFs (nested catalog templates, or the servers of a VNF template) in a row, the networks they attach to as bars
below, each attachment labelled with its port and vnic type (SR-IOV ``direct``, OVS-DPDK vhost-user, or normal
OVS), server groups as a dashed frame with their policy, QoS policies and SFC port pairs under their VNF."""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape
from typing import Any

# vnic type -> (short label, what it is, colour); the label says it too: colour is never the only cue
VNIC = {"sriov": ("SR-IOV", "vnic direct: an SR-IOV VF", "#b45309"),
        "direct": ("SR-IOV", "vnic direct: an SR-IOV VF", "#b45309"),
        "direct-physical": ("PF", "vnic direct-physical: a whole PF", "#7c2d12"),
        "ovs-dpdk": ("OVS-DPDK", "vnic normal on OVS-DPDK (vhost-user)", "#1d4ed8"),
        "ovs": ("OVS", "vnic normal on kernel OVS", "#4b5563"),
        "normal": ("normal", "vnic normal: a port of the host's virtual switch", "#4b5563")}
BOX_W, BOX_H, GAP, NET_GAP = 270, 92, 40, 54
HALO = 'stroke="#fff" stroke-width="4" paint-order="stroke"'  # text stays readable across the lines


@dataclass
class Vnf:
    name: str
    kind: str  # the nested template's file, or OS::Nova::Server
    ports: list[tuple[str, str, str]] = field(default_factory=list)  # (port, network key, vnic)
    notes: list[str] = field(default_factory=list)
    group: str | None = None


@dataclass
class Chain:
    vnfs: list[Vnf]
    networks: dict[str, str]  # key -> label (physnet, VLAN, type when the template says)
    groups: dict[str, str]  # server group resource -> label with its policy


def _value(v: Any, params: dict[str, Any]) -> Any:
    """A property's value as the chain is drawn: a get_param resolved with the example's value or the default."""
    if isinstance(v, dict) and isinstance(v.get("if"), list) and len(v["if"]) == 3:  # either branch, per condition
        return [_value(v["if"][1], params), _value(v["if"][2], params)]
    if isinstance(v, dict) and "get_param" in v:
        name = v["get_param"]
        name = name[0] if isinstance(name, list) and name else name
        return params.get(str(name))
    return v


def _ref(v: Any) -> tuple[str, str] | None:
    """('param', NAME) or ('resource', NAME) of a network reference."""
    if isinstance(v, dict):
        if "get_param" in v:
            name = v["get_param"]
            return "param", str(name[0] if isinstance(name, list) and name else name)
        if "get_resource" in v:
            return "resource", str(v["get_resource"])
    if isinstance(v, str) and v:
        return "name", v
    return None


def model(template: dict[str, Any], env: dict[str, Any] | None = None,
          provider: dict[str, dict[str, Any]] | None = None) -> Chain:
    """The chain a HOT template describes, with ``env`` (an example environment's parameters) for its values;
    ``provider``: the catalog's provider networks by name (nfvcat.catalog.provider_networks), which give the
    physnet and VLAN of a network the template takes by name."""
    specs = template.get("parameters") or {}
    params = {str(k): (s or {}).get("default") for k, s in specs.items() if isinstance(s, dict)}
    params.update((env or {}).get("parameters") or {})
    resources = {str(k): v for k, v in (template.get("resources") or {}).items() if isinstance(v, dict)}
    networks: dict[str, str] = {}
    groups: dict[str, str] = {}
    for name, res in resources.items():
        props = res.get("properties") or {}
        if res.get("type") in ("OS::Neutron::ProviderNet", "OS::Neutron::Net"):
            networks[f"resource:{name}"] = name + _segment(
                {k: _value(props.get(k), params) for k in ("network_type", "physical_network", "segmentation_id")})
        elif res.get("type") == "OS::Nova::ServerGroup":
            policies = _value(props.get("policies"), params) or [_value(props.get("policy"), params)]
            policy = ", ".join(str(_value(p, params)) for p in policies if p) if isinstance(policies, list) else ""
            groups[name] = f"server group {name}" + (f" ({policy})" if policy else "")
    vnfs: list[Vnf] = []
    by_name: dict[str, Vnf] = {}
    for name, res in resources.items():
        rtype, props = str(res.get("type")), res.get("properties") or {}
        if rtype.endswith((".yaml", ".yml")):
            vnf = Vnf(name, rtype.rsplit("/", 1)[-1])
            plane = str(_value(props.get("data_plane"), params) or "ovs")
            for key, v in props.items():
                ref = _ref(v) if str(key).endswith("_network") else None
                if ref is None:
                    continue
                label = str(key).removesuffix("_network")
                vnf.ports.append((label, _net(ref, networks, params, provider), "ovs" if label == "mgmt" else plane))
            qos = [str(k) for k, v in props.items() if "qos" in str(k) and _value(v, params)]
            vnf.notes += [f"QoS policy: {k}" for k in qos]
            group = _ref(props.get("server_group"))
            vnf.group = group[1] if group and group[1] in groups else None
        elif rtype == "OS::Nova::Server":
            vnf = Vnf(name, rtype)
            for item in props.get("networks") or []:
                port = _ref(item.get("port")) if isinstance(item, dict) else None
                net = _ref(item.get("network")) if isinstance(item, dict) else None
                if port and port[1] in resources:
                    pprops = resources[port[1]].get("properties") or {}
                    raw = _value(pprops.get("binding:vnic_type"), params) or "normal"
                    vnic = "|".join(str(x) for x in raw) if isinstance(raw, list) else str(raw)
                    pnet = _ref(pprops.get("network"))
                    if pnet:
                        short = port[1].removeprefix(f"{name}_").removesuffix("_port")
                        vnf.ports.append((short, _net(pnet, networks, params, provider), vnic))
                    if _value(pprops.get("qos_policy"), params):
                        vnf.notes.append(f"QoS policy on {port[1]}")
                elif net:
                    vnf.ports.append(("port", _net(net, networks, params, provider), "normal"))
            hints = props.get("scheduler_hints") or {}
            group = _ref(hints.get("group")) if isinstance(hints, dict) else None
            vnf.group = group[1] if group and group[1] in groups else None
        else:
            continue
        vnfs.append(vnf)
        by_name[name] = vnf
    for name, res in resources.items():
        props = res.get("properties") or {}
        if res.get("type") == "OS::Neutron::PortPair":
            ins, out = props.get("ingress"), props.get("egress")
            if isinstance(ins, dict) and isinstance(out, dict) and "get_attr" in ins and "get_attr" in out:
                owner = by_name.get(str(ins["get_attr"][0]))
                if owner is not None:
                    owner.notes.append(f"SFC port pair {name}: in {str(ins['get_attr'][1]).removesuffix('_port')} "
                                       f"→ out {str(out['get_attr'][1]).removesuffix('_port')}")
    return Chain(vnfs, networks, groups)


def _segment(net: dict[str, Any]) -> str:
    """'  [vlan physnet_dpdk VLAN 210]' of a provider network's properties ('' when it names none)."""
    bits = [str(net[k]) for k in ("network_type", "physical_network") if net.get(k)]
    if net.get("segmentation_id") is not None:
        bits.append(f"VLAN {net['segmentation_id']}")
    return f"  [{' '.join(bits)}]" if bits else ""


def _net(ref: tuple[str, str], networks: dict[str, str], params: dict[str, Any],
         provider: dict[str, dict[str, Any]] | None = None) -> str:
    kind, name = ref
    key = f"{kind}:{name}"
    if key not in networks:
        value = params.get(name) if kind == "param" else name if kind == "name" else None
        label = f"{name} = {value}" if value and kind == "param" else (
            f"{name} (parameter)" if kind == "param" else name)
        known = (provider or {}).get(value) if isinstance(value, str) else None
        if known:  # a provider network of the catalog (net-provider's): its type, physnet and VLAN
            label += _segment(known)
        networks[key] = label
    return key


def legend() -> list[tuple[str, str, str]]:
    """(short label, meaning, colour) of each vnic kind the diagrams draw, for the page's key."""
    return list(dict.fromkeys(VNIC.values()))


def svg(chain: Chain, title: str) -> str:
    """The chain as an SVG document fragment (``role=img`` with a title and a description for screen readers)."""
    # the networks a VNF attaches to, and those the template creates (a template of networks alone: net-provider)
    nets = [k for k in chain.networks
            if k.startswith("resource:") or any(p[1] == k for v in chain.vnfs for p in v.ports)]
    width = max(2, len(chain.vnfs)) * (BOX_W + GAP) + GAP + 140  # room for the last port's label
    top = 40 if chain.vnfs else 0
    net_y0 = top + BOX_H + 64 if chain.vnfs else 20
    height = net_y0 + len(nets) * NET_GAP + 20
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" class="chain" viewBox="0 0 {width} {height}" '
           f'width="{width}" height="{height}" role="img" aria-labelledby="t-{escape(title)}">',
           f'<title id="t-{escape(title)}">{escape(title)}: {len(chain.vnfs)} VNF(s) on {len(nets)} network(s)</title>']
    for group, label in chain.groups.items():
        members = [i for i, v in enumerate(chain.vnfs) if v.group == group]
        if members:
            x0 = GAP + min(members) * (BOX_W + GAP) - 14
            x1 = GAP + max(members) * (BOX_W + GAP) + BOX_W + 14
            out.append(f'<rect x="{x0}" y="{top - 26}" width="{x1 - x0}" height="{BOX_H + 34}" fill="none" '
                       f'stroke="#6b21a8" stroke-dasharray="6 4"/>')
            out.append(f'<text x="{x0 + 6}" y="{top - 10}" fill="#6b21a8" font-size="12">{escape(label)}</text>')
    dots: list[str] = []
    for i, vnf in enumerate(chain.vnfs):
        x = GAP + i * (BOX_W + GAP)
        out.append(f'<rect x="{x}" y="{top}" width="{BOX_W}" height="{BOX_H}" rx="6" fill="#f1f5f9" '
                   'stroke="#0f172a"/>')
        out.append(f'<text x="{x + 8}" y="{top + 18}" font-size="14" font-weight="bold" fill="#0f172a" '
                   f'class="vnf">{escape(vnf.name)}</text>')
        out.append(f'<text x="{x + 8}" y="{top + 34}" font-size="11" fill="#334155">{escape(vnf.kind)}</text>')
        for k, note in enumerate(vnf.notes[:3]):
            out.append(f'<text x="{x + 8}" y="{top + 52 + k * 14}" font-size="11" fill="#334155">'
                       f'{escape(note)}</text>')
        n = max(1, len(vnf.ports))
        for k, (port, key, vnic) in enumerate(vnf.ports):
            if key not in nets:
                continue
            px = x + int((k + 0.5) * BOX_W / n)
            y = net_y0 + nets.index(key) * NET_GAP
            kinds = [VNIC.get(v, (v, v, "#4b5563")) for v in vnic.split("|")]
            short, label, colour = " or ".join(c[0] for c in kinds), " or ".join(c[1] for c in kinds), kinds[0][2]
            dash = ' stroke-dasharray="2 3"' if vnic in ("ovs", "normal") else ""
            out.append(f'<line x1="{px}" y1="{top + BOX_H}" x2="{px}" y2="{y}" stroke="{colour}" stroke-width="3"'
                       f'{dash}><title>{escape(vnf.name)} {escape(port)}: {escape(label)}</title></line>')
            dots.append(f'<circle cx="{px}" cy="{y + 4}" r="6" fill="{colour}"/>')  # where it attaches
            out.append(f'<text x="{px + 4}" y="{top + BOX_H + 24 + k * 15}" font-size="12" fill="{colour}" {HALO}>'
                       f'{escape(port)} · {escape(short)}</text>')
    for j, key in enumerate(nets):
        y = net_y0 + j * NET_GAP
        out.append(f'<rect x="10" y="{y}" width="{width - 20}" height="8" fill="#94a3b8"/>')
        out.append(f'<text x="14" y="{y + 24}" font-size="13" fill="#0f172a" {HALO}>'
                   f'network {escape(chain.networks[key])}</text>')
    out += dots  # over the bars
    out.append("</svg>")
    return "\n".join(out)
