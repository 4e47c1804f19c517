from nfvcat.validation.rules.base import Rule


class TackerCsar(Rule):
    id = "E4003"
    shortdesc = "Tacker would refuse to onboard the VNF package"
    description = ("tacker's own package loader (csar_utils.load_csar_data, what tacker-conductor runs on "
                   "upload) rejects the CSAR: a manifest or TOSCA.meta artifact whose hash or algorithm is "
                   "wrong or whose Source is missing, a VNF node without its properties (descriptor_id...), "
                   "no deployment flavour, instantiation levels that are not defined, or more than one "
                   "software image per VDU. Such a package stays in CREATED or the upload fails. Only VNF packages "
                   "are checked (TOSCA.meta names an ETSI-Entry-Manifest, or a node is a tosca.nodes.nfv.VNF): "
                   "a generic TOSCA CSAR gets tosca-parser's verdict (E4001, E4002) alone.")
    source_url = "https://docs.openstack.org/tacker/latest/user/vnf-package.html"
    engine = "tacker"
