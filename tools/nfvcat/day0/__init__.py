"""Day 0 for real: render a catalog VNF's user data and network data as a Heat deployment would, build a
config drive like Nova's, and the helpers the day-0 test tier uses (namespaces, strongSwan, QEMU)."""
