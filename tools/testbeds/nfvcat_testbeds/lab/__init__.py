"""The day-0 lab: the catalog's VNFs from their rendered day-0 in network namespaces (``netns``, ``chain``,
``hapair``) and QEMU guests (``qemu``, ``vmpair``), and what probes them (``probe``, ``frames``, ``sockets``,
``aclprobe``)."""
