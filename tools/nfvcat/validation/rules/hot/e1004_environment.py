from nfvcat.validation.rules.base import Rule


class HeatEnvironment(Rule):
    id = "E1004"
    shortdesc = "Heat rejects the environment file"
    description = ("Heat's own environment parser and loader check an environment file (-e): only the "
                   "sections parameters, parameter_defaults, resource_registry, event_sinks, "
                   "encrypted_param_names and parameter_merge_strategies, each of the right type.")
    source_url = "https://docs.openstack.org/heat/latest/template_guide/environment.html"
    engine = "heat"
