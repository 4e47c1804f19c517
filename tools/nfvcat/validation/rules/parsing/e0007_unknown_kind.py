from nfvcat.validation.rules.base import Rule


class UnknownKind(Rule):
    id = "E0007"
    shortdesc = "Not a document nfvcat knows"
    description = ("A file given explicitly is neither a Heat template (HOT, or the CloudFormation format that "
                   "Heat also takes), a Heat environment, a TOSCA service "
                   "template, a SOL001 VNFD, a CSAR, a cloud-config, nor a catalog entry, flavor, site "
                   "profile or inventory. Files found by a directory walk or a glob, or handed over as a "
                   "list with --skip-unknown (the pre-commit hook), are skipped and counted instead.")
    source_url = "https://docs.openstack.org/heat/latest/template_guide/hot_spec.html"
