"""The ids the engines and the validation run emit, each declared once with its engine and documentation.
An engine names its findings by these (``emitted.HEAT_VALIDATION.id``); ``nfvcat rules`` and docs/rules.md list
them with the rule classes, which hold detection logic of their own (``nfvcat.validation.rules``)."""

from __future__ import annotations

from nfvcat.core.problems import Declared

UNKNOWN_KIND = Declared(
    "E0007", "nfvcat",
    "Not a document nfvcat knows",
    "A file given explicitly is neither a Heat template (HOT, or the CloudFormation format that "
    "Heat also takes), a Heat environment, a TOSCA service "
    "template, a SOL001 VNFD, a CSAR, a cloud-config, nor a catalog entry, flavor, site "
    "profile or inventory. Files found by a directory walk or a glob, or handed over as a "
    "list with --skip-unknown (the pre-commit hook), are skipped and counted instead.",
    "https://docs.openstack.org/heat/latest/template_guide/hot_spec.html")

ENGINE_FAILURE = Declared(
    "E0009", "nfvcat",
    "An engine could not run",
    "The field's own code (Heat, Nova, tosca-parser, tacker, cloud-init's schema) crashed, "
    "timed out or is missing. The document was not fully validated; the exit code is 3.",
    "https://docs.openstack.org/heat/latest/")

HEAT_VALIDATION = Declared(
    "E1001", "heat",
    "Heat rejects the template",
    "openstack-heat's own engine validates the template in strict mode, offline: sections, "
    "parameters and their constraints, resource types and property schemas (types, allowed "
    "values, required properties), intrinsic functions and references, outputs. The message is "
    "Heat's. Cloud look-ups (does this flavor or image exist) are not made.",
    "https://docs.openstack.org/heat/latest/template_guide/hot_spec.html")

HEAT_BUNDLE = Declared(
    "E1002", "heat",
    "A nested template, get_file or environment cannot be bundled",
    "python-heatclient's template utilities (what `openstack stack create` uses) cannot read "
    "a file the template or environment references: a nested template type, a get_file, or a "
    "resource_registry entry. An environment validated on its own has every file its resource_registry names "
    "read relative to it, as `openstack stack create -e` does before Heat is called; a name that misspells a "
    "file of that directory says which. Remote URLs are not fetched offline.",
    "https://docs.openstack.org/heat/latest/template_guide/composition.html")

HEAT_ENVIRONMENT = Declared(
    "E1004", "heat",
    "Heat rejects the environment file",
    "Heat's own environment parser and loader check an environment file (-e): only the "
    "sections parameters, parameter_defaults, resource_registry, event_sinks, "
    "encrypted_param_names and parameter_merge_strategies, each of the right type.",
    "https://docs.openstack.org/heat/latest/template_guide/environment.html")

SERVER_REQUEST = Declared(
    "E1006", "nova",
    "Nova's API refuses the server or server group request Heat sends",
    "Heat validates an OS::Nova::Server's properties by its own schema, not Nova's: Nova's API checks the "
    "request when the stack is created. nfvcat builds the request Heat sends (the user data wrapped as Heat's "
    "build_userdata wraps it for the server's user_data_format, HEAT_CFNTOOLS by default, a MIME multipart "
    "with Heat's boot files; then base64 as novaclient sends it; the ports of `networks` and the scheduler "
    "hints, a resource of the template standing for its UUID) and validates it with Nova's own validator "
    "and schema of POST /servers: user_data at most 65,535 characters of base64, a name and metadata keys "
    "and values at most 255, a scheduler hint `group` a server group's UUID (not its name); and with the API's "
    "own reading of the requested networks (a port given twice). An OS::Nova::ServerGroup's body is checked "
    "with the schema of POST /os-server-groups (2.64) and the API's rule that only anti-affinity takes `rules`. "
    "Properties that depend on the cloud (get_attr, an unset parameter) are not checked.",
    "https://docs.openstack.org/api-ref/compute/#create-server")

EXTRA_SPEC_INVALID = Declared(
    "E2001", "nova",
    "Nova rejects an extra spec",
    "Every flavor extra spec (in flavors/, in OS::Nova::Flavor resources, in a VNFD's "
    "nova_extra_specs) goes through Nova's own extra-spec validators, as the compute API does "
    "from microversion 2.86 on. The message is Nova's.",
    "https://docs.openstack.org/nova/latest/configuration/extra-specs.html")

NUMA_CONSTRAINTS = Declared(
    "E2002", "nova",
    "The flavor's extra specs contradict each other (Nova's boot-time checks)",
    "Nova's API runs nova.virt.hardware's constraint getters (numa_get_constraints, realtime, "
    "CPU topology, vif multiqueue, PCI aliases) only when a server is created: a thread policy "
    "or realtime without dedicated CPUs, a realtime mask that leaves no housekeeping vCPU, "
    "emulator threads isolate without dedicated CPUs, incomplete or asymmetric NUMA cells, NUMA "
    "memory that does not add up. nfvcat runs the same code on the flavor.",
    "https://docs.openstack.org/nova/latest/admin/cpu-topologies.html")

PAGE_SIZE_NOT_OFFERED = Declared(
    "E2005", "nova",
    "Memory page size no host of the site offers",
    "`hw:mem_page_size` given as a size (`3MB`, `2048`) passes Nova's API validation, but "
    "the scheduler's NUMA topology filter only places the instance on a host with pages of "
    "exactly that size: an x86_64 host has 4 KiB, 2 MiB and 1 GiB pages, so `3MB` fits no "
    "host and every boot ends in 'No valid host'. The size is read as Nova reads it; the "
    "site's page sizes come from the site profile's `page_sizes` (x86_64's when absent). "
    "`small`, `large` and `any` are not checked.",
    "https://docs.openstack.org/nova/latest/admin/huge-pages.html")

HUGE_PAGES_WHOLE = Declared(
    "E2006", "nova",
    "Memory that is not a whole number of the flavor's pages",
    "With `hw:mem_page_size` the guest's memory is backed by pages of that size, and each NUMA cell's memory "
    "(`hw:numa_mem.N`, or the flavor's RAM split over `hw:numa_nodes`) must be a whole number of them: Nova's "
    "NUMA fitting (`NUMACell.can_fit_pagesize`) refuses every host cell otherwise, so every boot ends in "
    "'No valid host' on any cloud. nfvcat runs Nova's own test of a host cell "
    "(`hardware._numa_cell_supports_pagesize_request`) on each cell against a cell with every page size "
    "of the site (`large` and `any` may take any of them) and memory to spare.",
    "https://docs.openstack.org/nova/latest/admin/huge-pages.html")

QOS_RULES_CONFLICT = Declared(
    "E3006", "neutron",
    "Neutron's API refuses a QoS rule beside the policy's other rules",
    "Heat validates each OS::Neutron::QoS*Rule by its own schema; Neutron's QoS plugin then checks each new rule "
    "against the rules its policy already has and answers 409 when the stack is created, half-built: two rules "
    "of one type and direction (a `direction` left out is Heat's default, egress, and may collide), a minimum "
    "bandwidth above the policy's own bandwidth limit in that direction, a directionless minimum packet rate "
    "beside a directed one. nfvcat builds Neutron's own rule objects from the template's rules and runs "
    "Neutron's own validator (`neutron.objects.qos.qos_policy_validator`) on them in the template's order.",
    "https://docs.openstack.org/neutron/latest/admin/config-qos.html")

TOSCA_PARSER = Declared(
    "E4001", "tosca",
    "tosca-parser rejects the TOSCA template or VNFD",
    "OpenStack's tosca-parser (the library Tacker and heat-translator load templates with) "
    "reports the template invalid: unknown fields, wrong property types or values, missing "
    "required properties, requirements pointing at missing node templates, unresolvable "
    "imports. ETSI SOL001 v2 type files (2.5.1 to 2.8.1) imported by URL or by name are "
    "resolved offline to the v2.6.1 copies tacker ships; no other URL is fetched, so a "
    "template importing SOL001 v3+ or other remote files is reported not validated (E0009).",
    "https://docs.openstack.org/tosca-parser/latest/")

CSAR_STRUCTURE = Declared(
    "E4002", "tosca",
    "CSAR structure rejected by tosca-parser",
    "The VNF package is not a CSAR tosca-parser accepts: TOSCA-Metadata/TOSCA.meta "
    "missing or without Entry-Definitions, the entry definitions file absent, more than one "
    "root-level YAML file in a package without TOSCA.meta, or imports and artifacts the "
    "templates name that are not in the archive.",
    "https://www.etsi.org/deliver/etsi_gs/NFV-SOL/001_099/004/02.06.01_60/"
                  "gs_NFV-SOL004v020601p.pdf")

TACKER_CSAR = Declared(
    "E4003", "tacker",
    "Tacker would refuse to onboard the VNF package",
    "tacker's own package loader (csar_utils.load_csar_data, what tacker-conductor runs on "
    "upload) rejects the CSAR: a manifest or TOSCA.meta artifact whose hash or algorithm is "
    "wrong or whose Source is missing, a VNF node without its properties (descriptor_id...), "
    "no deployment flavour, instantiation levels that are not defined, or more than one "
    "software image per VDU. Such a package stays in CREATED or the upload fails. Only VNF packages "
    "are checked (TOSCA.meta names an ETSI-Entry-Manifest, or a node is a tosca.nodes.nfv.VNF): "
    "a generic TOSCA CSAR gets tosca-parser's verdict (E4001, E4002) alone.",
    "https://docs.openstack.org/tacker/latest/user/vnf-package.html")

TACKER_LCM = Declared(
    "E4007", "tacker",
    "Tacker's instantiate or scale fails on the VNFD",
    "tosca-parser accepts a VNFD whose policies Tacker's LCM cannot follow. Each deployment flavour is "
    "instantiated at each of its instantiation levels and scaled along each of its aspects through the "
    "methods of tacker's vnfd_utils.Vnfd its instantiate and scale code calls: a VDU with no number of "
    "instances for a level, a default_level that is no level, a level's scale_info naming an aspect no "
    "ScalingAspects defines or a scale level above its max_scale_level, a step delta no "
    "VduScalingAspectDeltas defines (DeltaMissingInVnfd, raised only when the VNF is scaled) and deltas for "
    "an aspect that does not exist are reported at their keys. A flavour's substitution_mappings flavour_id "
    "that is not the flavour_id of the VNF node it substitutes (a node template of its node_type) leaves the "
    "node's flavour without a topology: Tacker finds no such deployment flavour to instantiate.",
    "https://docs.openstack.org/tacker/latest/user/etsi_vnf_scaling.html")

INVENTED_VALUE = Declared(
    "W1005", "heat",
    "Heat rejects a value nfvcat invented for a parameter that has none",
    "To validate strictly, nfvcat gives each parameter without a value or default a value "
    "that satisfies everything it declares and every property it feeds, of the type and format that property "
    "needs (an IP, a CIDR, a MAC, a UUID, an integer in range...; each item of a comma_delimited_list for what "
    "that item feeds, `get_param: [list, 0]`; for a nested template's parameter, what its own constraints "
    "allow). A Heat error that may come from "
    "such a value is decided by evidence: the stack is validated again with other invented values, and an "
    "error that stays the same (the values aside) is Heat's error whatever the value (E1001). It is a "
    "warning, naming the values tried, when it changes or goes with the value, when no other value could "
    "be tried, or when no value nfvcat can make satisfies the parameter (two allowed patterns that exclude "
    "each other, a parameter given both to an integer and to a CIDR property): a user's value may. Give "
    "the parameter a value (-P, -e) to validate it.",
    "https://docs.openstack.org/heat/latest/template_guide/hot_spec.html#parameter-constraints")

UNKNOWN_NAMESPACE = Declared(
    "W2003", "nova",
    "Extra spec namespace unknown to Nova",
    "Nova's validators let an extra spec in a namespace they do not know pass silently; such a "
    "key (a typo like `hw_cpu:policy`, or a site-specific namespace) has no effect unless a "
    "filter of the site reads it.",
    "https://docs.openstack.org/nova/latest/configuration/extra-specs.html")
