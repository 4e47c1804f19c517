"""nfvcat's test beds, a distribution of their own (``nfvcat-testbeds``, ``tools/testbeds``): what the project,
and a user who wants to try the catalog, can start, and what the product never needs.

- ``devcloud``: a private OpenStack on loopback (root) with its compute hosts, simulated or this machine under
  libvirt, each in a network namespace with the wires between them;
- ``lab``: the day-0 lab, network namespaces and QEMU guests running the catalog's VNFs from their rendered day-0;
- ``targets``: the campaign targets ``nfvcat test`` runs data planes on (the namespace lab, the dev cloud's chain);
- ``command``: ``nfvcat devcloud``.

They plug into nfvcat by entry points (``nfvcat.core.plugins``); nfvcat imports none of this.
"""
