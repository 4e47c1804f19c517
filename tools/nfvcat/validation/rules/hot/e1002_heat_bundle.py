from nfvcat.validation.rules.base import Rule


class HeatBundle(Rule):
    id = "E1002"
    shortdesc = "A nested template, get_file or environment cannot be bundled"
    description = ("python-heatclient's template utilities (what `openstack stack create` uses) cannot read "
                   "a file the template or environment references: a nested template type, a get_file, or a "
                   "resource_registry entry. Remote URLs are not fetched offline.")
    source_url = "https://docs.openstack.org/heat/latest/template_guide/composition.html"
    engine = "heat"
