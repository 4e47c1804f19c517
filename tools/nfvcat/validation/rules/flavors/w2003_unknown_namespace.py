from nfvcat.validation.rules.base import Rule


class UnknownNamespace(Rule):
    id = "W2003"
    shortdesc = "Extra spec namespace unknown to Nova"
    description = ("Nova's validators let an extra spec in a namespace they do not know pass silently; such a "
                   "key (a typo like `hw_cpu:policy`, or a site-specific namespace) has no effect unless a "
                   "filter of the site reads it.")
    source_url = "https://docs.openstack.org/nova/latest/configuration/extra-specs.html"
    engine = "nova"
