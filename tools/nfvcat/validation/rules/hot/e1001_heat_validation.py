from nfvcat.validation.rules.base import Rule


class HeatValidation(Rule):
    id = "E1001"
    shortdesc = "Heat rejects the template"
    description = ("openstack-heat's own engine validates the template in strict mode, offline: sections, "
                   "parameters and their constraints, resource types and property schemas (types, allowed "
                   "values, required properties), intrinsic functions and references, outputs. The message is "
                   "Heat's. Cloud look-ups (does this flavor or image exist) are not made.")
    source_url = "https://docs.openstack.org/heat/latest/template_guide/hot_spec.html"
    engine = "heat"
