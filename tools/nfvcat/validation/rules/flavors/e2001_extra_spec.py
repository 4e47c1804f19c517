from nfvcat.validation.rules.base import Rule


class ExtraSpecInvalid(Rule):
    id = "E2001"
    shortdesc = "Nova rejects an extra spec"
    description = ("Every flavor extra spec (in flavors/, in OS::Nova::Flavor resources, in a VNFD's "
                   "nova_extra_specs) goes through Nova's own extra-spec validators, as the compute API does "
                   "from microversion 2.86 on. The message is Nova's.")
    source_url = "https://docs.openstack.org/nova/latest/configuration/extra-specs.html"
    engine = "nova"
