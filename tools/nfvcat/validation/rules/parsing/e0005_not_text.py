from nfvcat.validation.rules.base import Rule


class NotText(Rule):
    id = "E0005"
    shortdesc = "Empty, binary or non-UTF-8 file"
    description = "The file is empty, binary, or not UTF-8 text, so it is no template of any kind."
    source_url = "https://docs.openstack.org/heat/latest/template_guide/hot_spec.html"
