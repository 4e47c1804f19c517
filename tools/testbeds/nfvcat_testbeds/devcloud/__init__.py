"""The dev cloud: a private OpenStack on loopback (nfvcat devcloud)."""
