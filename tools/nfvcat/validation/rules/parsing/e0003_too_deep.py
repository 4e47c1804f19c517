from nfvcat.validation.rules.base import Rule


class TooComplex(Rule):
    id = "E0003"
    shortdesc = "YAML too deep or too large once aliases are expanded"
    description = ("A document whose nesting or alias expansion would exhaust memory or time (a 'billion "
                   "laughs' document). Heat caps templates by size; this caps them by structure too.")
    source_url = "https://en.wikipedia.org/wiki/Billion_laughs_attack"
