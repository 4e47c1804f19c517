from nfvcat.validation.rules.base import Rule


class InvalidYaml(Rule):
    id = "E0001"
    shortdesc = "Invalid YAML or JSON"
    description = ("The file does not parse as YAML (JSON is YAML). Heat, tosca-parser and cloud-init "
                   "would all reject it before looking at its content.")
    source_url = "https://yaml.org/spec/1.2.2/"
