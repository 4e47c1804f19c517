from nfvcat.validation.rules.base import Rule


class CsarStructure(Rule):
    id = "E4002"
    shortdesc = "CSAR structure rejected by tosca-parser"
    description = ("The VNF package is not a CSAR tosca-parser accepts: TOSCA-Metadata/TOSCA.meta "
                   "missing or without Entry-Definitions, the entry definitions file absent, more than one "
                   "root-level YAML file in a package without TOSCA.meta, or imports and artifacts the "
                   "templates name that are not in the archive.")
    source_url = ("https://www.etsi.org/deliver/etsi_gs/NFV-SOL/001_099/004/02.06.01_60/"
                  "gs_NFV-SOL004v020601p.pdf")
    engine = "tosca"
