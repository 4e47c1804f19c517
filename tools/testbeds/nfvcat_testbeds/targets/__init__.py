"""The campaign targets ``nfvcat test`` runs a data plane on (``nfvcat.campaign_targets`` entry points): ``lab``
(the namespace lab) and ``cloud`` (through the chain the dev cloud deployed), with the traffic they send
(``traffic``), the ACL probes (``cloudacl``) and the QoS measurements (``cloudqos``)."""
