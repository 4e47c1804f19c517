"""3xxx: provider networks and ports (VLAN ids, SR-IOV, vhost-user)."""
