from nfvcat.validation.rules.base import Rule


class InventedValue(Rule):
    id = "W1005"
    shortdesc = "Heat rejects a value nfvcat invented for a parameter that has none"
    description = ("To validate strictly, nfvcat gives each parameter without a value or default a value "
                   "that satisfies everything it declares and every property it feeds. When no such value "
                   "exists (two allowed patterns that exclude each other, a parameter given both to an "
                   "integer and to a CIDR property), Heat's finding depends on a value the user never wrote: "
                   "it is a warning, naming the invented value. Give the parameter a value (-P, -e) to "
                   "validate it.")
    source_url = "https://docs.openstack.org/heat/latest/template_guide/hot_spec.html#parameter-constraints"
    engine = "heat"
