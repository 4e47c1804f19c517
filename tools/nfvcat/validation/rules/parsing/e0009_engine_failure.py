from nfvcat.validation.rules.base import Rule


class EngineFailure(Rule):
    id = "E0009"
    shortdesc = "An engine could not run"
    description = ("The field's own code (Heat, Nova, tosca-parser, tacker, cloud-init's schema) crashed, "
                   "timed out or is missing. The document was not fully validated; the exit code is 3.")
    source_url = "https://docs.openstack.org/heat/latest/"
