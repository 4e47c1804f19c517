from nfvcat.validation.rules.base import Rule


class Unreadable(Rule):
    id = "E0002"
    shortdesc = "File missing or unreadable"
    description = "A path given on the command line, or referenced by a catalog entry, cannot be read."
    source_url = "https://docs.python.org/3/library/functions.html#open"
