"""5xxx: service chains (networking-sfc port pairs and flow classifiers)."""
