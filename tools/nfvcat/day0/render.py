"""The day-0 data a Heat deployment of a catalog VNF delivers to its server: the user data (the result of
the template's own ``user_data`` expression, resolved by Heat's own intrinsic functions) and the
``network_data.json`` / ``meta_data.json`` Nova puts on the config drive or serves from the metadata service.

Values Heat only knows after creating resources (``get_attr`` of ports) come from ``RESOURCE.ATTR[.N...]``
parameters (``-P left_port.mac_address=fa:16:3e:00:00:01``); MAC addresses default to deterministic
``fa:16:3e:..`` ones, IP addresses to the port's fixed IP parameter. ``PORT.cidr`` and ``PORT.gateway``
give a port's subnet for network_data.json (default /24, no gateway); a port without an address is DHCP.
"""

from __future__ import annotations

import copy
import hashlib
import ipaddress
import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nfvcat.catalog import history
from nfvcat.core.errors import UserError

NAMESPACE = uuid.UUID("6f1c7c2e-54a4-4a4c-9a53-6e66a7d0d0a0")  # nfvcat day-0 ids (uuid5)
VNIC_LINK_TYPES = {"normal": "ovs", "direct": "hw_veb", "direct-physical": "hostdev_physical",
                   "macvtap": "macvtap", "virtio-forwarder": "vhostuser"}


@dataclass
class Port:
    name: str
    mac: str
    ip: str | None
    cidr: str
    gateway: str | None
    vnic_type: str
    mtu: int


@dataclass
class Day0:
    """Everything a booted server gets on day 0."""

    vnf: str
    server: str
    user_data: str
    ports: list[Port]
    parameters: dict[str, Any] = field(default_factory=dict)
    added_cloud_configs: list[tuple[str, str]] = field(default_factory=list)  # (filename, text), merged after

    def delivered_user_data(self) -> str:
        """What the server gets: the VNF's user data, a MIME multi-part when cloud-configs were added."""
        from nfvcat.day0.userdata import multipart

        return multipart(self.user_data, self.added_cloud_configs)

    @property
    def server_uuid(self) -> str:
        return str(uuid.uuid5(NAMESPACE, f"{self.vnf}/{self.parameters.get('name', self.server)}/server"))

    def network_data(self) -> dict[str, Any]:
        links: list[dict[str, Any]] = []
        networks: list[dict[str, Any]] = []
        for i, port in enumerate(self.ports):
            vif = str(uuid.uuid5(NAMESPACE, f"{self.server_uuid}/{port.name}"))
            link_id = f"tap{vif[:11]}"
            links.append({"id": link_id, "vif_id": vif, "type": VNIC_LINK_TYPES.get(port.vnic_type, "ovs"),
                          "mtu": port.mtu, "ethernet_mac_address": port.mac})
            net_id = str(uuid.uuid5(NAMESPACE, f"{self.server_uuid}/{port.name}/network"))
            if port.ip is None:
                networks.append({"id": f"network{i}", "type": "ipv4_dhcp", "link": link_id, "network_id": net_id})
                continue
            net = ipaddress.ip_network(port.cidr, strict=False)
            routes = []
            if port.gateway:
                routes.append({"network": "0.0.0.0", "netmask": "0.0.0.0", "gateway": port.gateway})
            networks.append({"id": f"network{i}", "type": "ipv4", "link": link_id, "ip_address": port.ip,
                             "netmask": str(net.netmask), "routes": routes, "network_id": net_id,
                             "services": []})
        return {"links": links, "networks": networks, "services": []}

    def meta_data(self) -> dict[str, Any]:
        name = str(self.parameters.get("name", self.server))
        return {"uuid": self.server_uuid, "name": name, "hostname": name, "launch_index": 0,
                "availability_zone": "nova", "project_id": "00000000000000000000000000000000",
                "meta": {"nfvcat_vnf": self.vnf}, "devices": [],
                "random_seed": hashlib.sha256(self.server_uuid.encode()).hexdigest()}

    def cloud_config(self) -> dict[str, Any]:
        data = yaml.safe_load(self.user_data)
        if not isinstance(data, dict):
            raise UserError(f"{self.vnf}: the rendered user data is not a cloud-config mapping")
        return data


def generated_mac(seed: str) -> str:
    d = hashlib.sha256(seed.encode()).digest()
    return "fa:16:3e:" + ":".join(f"{b:02x}" for b in d[:3])


def _split_parameters(given: dict[str, str]) -> tuple[dict[str, str], dict[str, str]]:
    params = {k: v for k, v in given.items() if "." not in k}
    facts = {k: v for k, v in given.items() if "." in k}
    return params, facts


_heat_ready: list[bool] = []


def _heat() -> None:
    if not _heat_ready:
        import logging
        import warnings

        previous = logging.root.manager.disable
        logging.disable(logging.WARNING)  # Heat's notes on deprecated resource types, eventlet's warning
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                from nfvcat.validation.engines import heat_offline

                heat_offline.offline_context()
        finally:
            logging.disable(previous)
        _heat_ready.append(True)


def render(vnf: str, environments: list[str] | None = None, parameters: dict[str, str] | None = None,
           server: str | None = None) -> Day0:
    """Resolve the server's user_data with Heat's own functions; ports from the template's ``networks``. ``vnf``
    and ``environments`` as every command takes them (nfvcat.catalog.history.template): a catalog VNF by name
    (``vnf-ipsec-gw`` or ``ipsec-gw``), its directory or a template; files or the entry's examples by name."""
    found = history.template(vnf)
    path, env_paths = found.path, found.environments(list(environments or []))
    params, facts = _split_parameters(dict(parameters or {}))
    _heat()
    from heat.common import exception
    from heat.engine import environment, function, stack, template

    files, tpl, env = _contents(path, env_paths)
    env_params = dict(env.get("parameters") or {})
    env_params.update(params)
    given_params = {**env_params, **facts}
    env["parameters"] = env_params
    resources = tpl.get("resources") or {}
    server = _server(path, resources, server)
    try:
        tmpl = template.Template(tpl, files=files, env=environment.Environment(env))
        stk = stack.Stack(_heat_state(), "nfvcat-day0", tmpl)
        unset = {n: s for n, s in tmpl.param_schemata().items() if n not in env_params and s.default is None}
        needed = _params_used(resources[server].get("properties") or {}, resources, tpl.get("conditions") or {})
        missing = sorted(n for n in unset if n in needed)
        if missing:
            raise UserError(f"{path.name}: parameters the day-0 data needs have no value: {', '.join(missing)} "
                            "(give them with -e or -P)")
        if unset:  # parameters day 0 does not depend on (networks, say): any valid value
            from nfvcat.validation.engines.heat_offline import placeholder

            env_params.update({n: placeholder(n, s, tpl, tmpl.env.get_class) for n, s in unset.items()})
            tmpl = template.Template(tpl, files=files, env=environment.Environment(env))
            stk = stack.Stack(_heat_state(), "nfvcat-day0", tmpl)
        stk.parameters.validate(validate_value=True)

        def resolve(snippet: Any) -> Any:
            return function.resolve(stk.t.parse(stk.defn, snippet))

        stack_name = str(env_params.get("name") or server)
        # like Neutron's, two servers' MACs differ: the seed covers every parameter given
        seed = hashlib.sha256(json.dumps(given_params, sort_keys=True, default=str).encode()).hexdigest()[:16]
        props = resources[server].get("properties") or {}
        ports, attrs = _ports(props, resources, facts, resolve, (stack_name, seed))
        attrs.update({k: v for k, v in facts.items() if k.rsplit(".", 1)[-1] not in ("cidr", "gateway", "mtu", "ip")})
        snippet = _replace_get_attr(copy.deepcopy(props["user_data"]), attrs, path.name)
        user_data = resolve(snippet)
        values = {n: stk.parameters[n] for n in tmpl.param_schemata()}
    except exception.HeatException as exc:
        raise UserError(f"{path.name}: {exc}") from None
    except (ValueError, TypeError, KeyError) as exc:
        raise UserError(f"{path.name}: {type(exc).__name__}: {exc}") from None
    if not isinstance(user_data, str):
        raise UserError(f"{path.name}: user_data of {server} does not resolve to a string")
    return Day0(vnf=path.parent.name, server=server, user_data=user_data, ports=ports, parameters=values)


def _contents(path: Path, env_paths: list[Path]) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """The template's files (text), the template and the merged environment, as heatclient reads them."""
    from heatclient.common import template_utils

    try:
        files, tpl = template_utils.get_template_contents(template_file=str(path))
        _env_files, env = template_utils.process_multiple_environments_and_files(
            env_paths=[str(e) for e in env_paths] or None)
    except Exception as exc:
        raise UserError(f"cannot read {path} with its files and environments: {exc}") from None
    return {u: b.decode() if isinstance(b, bytes) else b for u, b in files.items()}, tpl, env


def _server(path: Path, resources: dict[str, Any], server: str | None) -> str:
    """The server whose user data is rendered: ``server``, or the template's only one with user_data."""
    servers = [n for n, r in resources.items()
               if isinstance(r, dict) and r.get("type") == "OS::Nova::Server"
               and "user_data" in (r.get("properties") or {})]
    if server is None:
        if len(servers) != 1:
            raise UserError(f"{path}: {len(servers)} servers with user_data ({', '.join(servers)}); use --server")
        return servers[0]
    if server not in servers:
        raise UserError(f"{path}: no server {server!r} with user_data (have: {', '.join(servers)})")
    return server


def _ports(props: dict[str, Any], resources: dict[str, Any], facts: dict[str, str], resolve: Callable[[Any], Any],
           mac_seed: tuple[str, str]) -> tuple[list[Port], dict[str, Any]]:
    """The server's ports (its ``networks`` of ``get_resource`` ports), and the attributes (MAC, first fixed IP)
    its user data may ``get_attr``: from ``facts`` (``PORT.ATTR`` given with -P) or the template, a MAC
    generated from ``mac_seed`` (the stack's name and the seed of the parameters given) where none is given."""
    ports: list[Port] = []
    attrs: dict[str, Any] = {}
    for item in props.get("networks") or []:
        ref = item.get("port", {}).get("get_resource") if isinstance(item, dict) else None
        body = resources.get(ref) if ref else None
        if not isinstance(body, dict):
            continue
        pprops = body.get("properties") or {}
        fixed = resolve(copy.deepcopy(pprops.get("fixed_ips"))) if pprops.get("fixed_ips") else None
        ip = facts.get(f"{ref}.fixed_ips.0.ip_address") or facts.get(f"{ref}.ip")
        if ip is None and isinstance(fixed, list) and fixed and isinstance(fixed[0], dict):
            ip = fixed[0].get("ip_address") or None
        mac = facts.get(f"{ref}.mac_address") or generated_mac(f"{mac_seed[0]}/{ref}/{mac_seed[1]}")
        vnic = resolve(copy.deepcopy(pprops.get("binding:vnic_type", "normal"))) or "normal"
        default_cidr = f"{ip}/24" if ip else "0.0.0.0/0"
        ports.append(Port(str(ref), mac.lower(), ip, facts.get(f"{ref}.cidr", default_cidr),
                          facts.get(f"{ref}.gateway"), str(vnic), int(facts.get(f"{ref}.mtu", 1500))))
        attrs[f"{ref}.mac_address"] = mac.lower()
        if ip:
            attrs[f"{ref}.fixed_ips.0.ip_address"] = ip
    return ports, attrs


def _params_used(props: dict[str, Any], resources: dict[str, Any], conditions: dict[str, Any]) -> set[str]:
    """Parameters the user data and the ports' addresses depend on, through conditions too."""
    found: set[str] = set()
    conds: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k == "get_param":
                    found.add(str(v[0] if isinstance(v, list) else v))
                elif k == "if" and isinstance(v, list) and v and isinstance(v[0], str) and v[0] not in conds:
                    conds.add(v[0])
                    walk(conditions.get(v[0]))
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(props.get("user_data"))
    for item in props.get("networks") or []:
        ref = item.get("port", {}).get("get_resource") if isinstance(item, dict) else None
        body = resources.get(ref) if ref else None
        if isinstance(body, dict):
            walk((body.get("properties") or {}).get("fixed_ips"))
    return found


def _heat_state() -> Any:
    from nfvcat.validation.engines import heat_offline

    return heat_offline.offline_context()


def _replace_get_attr(node: Any, attrs: dict[str, Any], where: str) -> Any:
    if isinstance(node, dict):
        if len(node) == 1 and "get_attr" in node:
            key = ".".join(str(p) for p in node["get_attr"])
            if key not in attrs:
                raise UserError(f"{where}: get_attr {key} has no value; give it with -P {key}=VALUE")
            return attrs[key]
        return {k: _replace_get_attr(v, attrs, where) for k, v in node.items()}
    if isinstance(node, list):
        return [_replace_get_attr(v, attrs, where) for v in node]
    return node


def write_json(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
