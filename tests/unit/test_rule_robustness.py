"""Rules read documents that tosca-parser or Heat will reject: a section of the wrong type is their finding,
never a rule's crash (found by the fuzz long mode: E4005 on a VduCp whose properties were a list)."""

from __future__ import annotations

from pathlib import Path

from nfvcat.core import documents
from nfvcat.validation.rules import all_rules
from nfvcat.validation.rules.base import Context

VNFD = """tosca_definitions_version: tosca_simple_yaml_1_3
imports: [etsi_nfv_sol001_common_types.yaml, etsi_nfv_sol001_vnfd_types.yaml]
topology_template:
  node_templates:
    CP1:
      type: tosca.nodes.nfv.VduCp
      properties:
        - {virtual_binding: VDU1}
        - {virtual_link: VL1}
      requirements:
        - virtual_link: VL1
    VL1:
      type: tosca.nodes.nfv.VnfVirtualLink
      properties: [not, a, mapping]
"""


def test_rules_survive_sections_of_the_wrong_type(tmp_path: Path) -> None:
    path = tmp_path / "vnfd.yaml"
    path.write_text(VNFD)
    doc = documents.read(str(path))
    assert doc.kind == "vnfd"
    for rule in all_rules():
        if doc.kind in rule.kinds:
            list(rule.check(doc, Context()))  # raises on a crash
