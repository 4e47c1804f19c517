from nfvcat.validation.rules.base import Rule


class ToscaParserValidation(Rule):
    id = "E4001"
    shortdesc = "tosca-parser rejects the TOSCA template or VNFD"
    description = ("OpenStack's tosca-parser (the library Tacker and heat-translator load templates with) "
                   "reports the template invalid: unknown fields, wrong property types or values, missing "
                   "required properties, requirements pointing at missing node templates, unresolvable "
                   "imports. ETSI SOL001 v2 type files (2.5.1 to 2.8.1) imported by URL or by name are "
                   "resolved offline to the v2.6.1 copies tacker ships; no other URL is fetched, so a "
                   "template importing SOL001 v3+ or other remote files is reported not validated (E0009).")
    source_url = "https://docs.openstack.org/tosca-parser/latest/"
    engine = "tosca"
