from nfvcat.validation.rules.base import Rule


class NumaConstraints(Rule):
    id = "E2002"
    shortdesc = "The flavor's extra specs contradict each other (Nova's boot-time checks)"
    description = ("Nova's API runs nova.virt.hardware's constraint getters (numa_get_constraints, realtime, "
                   "CPU topology, vif multiqueue, PCI aliases) only when a server is created: a thread policy "
                   "or realtime without dedicated CPUs, a realtime mask that leaves no housekeeping vCPU, "
                   "emulator threads isolate without dedicated CPUs, incomplete or asymmetric NUMA cells, NUMA "
                   "memory that does not add up. nfvcat runs the same code on the flavor.")
    source_url = "https://docs.openstack.org/nova/latest/admin/cpu-topologies.html"
    engine = "nova"
