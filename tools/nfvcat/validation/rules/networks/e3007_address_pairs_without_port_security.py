"""E3007: allowed_address_pairs on a port without port security."""

from __future__ import annotations

from collections.abc import Iterator

from nfvcat.core import hot
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule


class AddressPairsWithoutPortSecurity(Rule):
    id = "E3007"
    shortdesc = "allowed_address_pairs on a port without port security"
    description = ("Heat's schema takes `allowed_address_pairs` and `port_security_enabled: false` together; "
                   "Neutron's ML2 plugin refuses such a port when the stack is created (409, "
                   "AddressPairAndPortSecurityRequired: 'Port Security must be enabled in order to have allowed "
                   "address pairs on a port.'). A port that does not set port_security_enabled takes its "
                   "network's (an OS::Neutron::Net of the template). Without port security no address is "
                   "filtered, so the pairs are not needed: drop them, or keep port security on.")
    source_url = "https://docs.openstack.org/neutron/latest/admin/config-allowed-address-pairs.html"
    engine = "neutron"
    kinds = ("hot",)
    follows_nesting = True

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        for name, port in hot.resources(doc.data, "OS::Neutron::Port"):
            p = hot.props(port)
            pairs = hot.resolve(doc.data, p.get("allowed_address_pairs"), ctx.parameters)
            if not isinstance(pairs, list) or not pairs:
                continue
            where = "the port"
            security = hot.resolve(doc.data, p["port_security_enabled"], ctx.parameters) \
                if "port_security_enabled" in p else None
            if "port_security_enabled" not in p:
                net = hot.follow(doc.data, p.get("network"), ctx.parameters, ctx.outer, "OS::Neutron::Net")
                if isinstance(net, tuple) and "port_security_enabled" in hot.props(net[1]):
                    scope, body = net
                    security = hot.resolve(scope, hot.props(body)["port_security_enabled"],
                                           ctx.parameters if scope is doc.data else {})
                    where = "its network"
            if security is False or (isinstance(security, str) and security.lower() in ("false", "0", "no", "off")):
                yield self.finding(("resources", name, "properties", "allowed_address_pairs"),
                                   f"port '{name}' has allowed_address_pairs but {where} has port_security_enabled "
                                   "false: Neutron refuses the port (409 AddressPairAndPortSecurityRequired: Port "
                                   "Security must be enabled in order to have allowed address pairs on a port)")
