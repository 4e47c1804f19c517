"""Placement planning: where each VNF of a chain lands on a host inventory, and why not.

Fitting is Nova's own code (``nova.virt.hardware`` and ``nova.pci``), imported only by
``nfvcat.plan.novaenv`` when a plan runs; everything else here is plain Python.
"""
