"""4xxx: TOSCA service templates, ETSI SOL001 VNFDs and SOL004 CSAR packages."""
