from nfvcat.validation.rules.base import Rule


class DuplicateKey(Rule):
    id = "E0006"
    shortdesc = "Duplicate mapping key"
    description = ("A key appears twice in one mapping. YAML loaders, Heat's included, silently keep the "
                   "last value, so the first definition is lost without a word.")
    source_url = "https://yaml.org/spec/1.2.2/#mapping"
