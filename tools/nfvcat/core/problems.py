"""The reader's own problems: what reading a file finds before any rule or engine looks at it (E0001-E0006),
declared here, where they are found (``yamlpos``, ``documents``). ``nfvcat rules`` lists them with the rules.

:class:`Declared` is also how the validator declares the ids its engines emit (``nfvcat.validation.emitted``):
an id, the engine that emits it, and its documentation, in one place."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Declared:
    """A finding id that code outside the rule classes emits, with its documentation."""
    id: str
    engine: str
    shortdesc: str
    description: str
    source_url: str


INVALID_YAML = Declared(
    "E0001", "nfvcat",
    "Invalid YAML or JSON",
    "The file does not parse as YAML (JSON is YAML). Heat, tosca-parser and cloud-init "
    "would all reject it before looking at its content.",
    "https://yaml.org/spec/1.2.2/")

UNREADABLE = Declared(
    "E0002", "nfvcat",
    "File missing or unreadable",
    "A path given on the command line, or referenced by a catalog entry, cannot be read.",
    "https://docs.python.org/3/library/functions.html#open")

TOO_COMPLEX = Declared(
    "E0003", "nfvcat",
    "YAML too deep or too large once aliases are expanded",
    "A document whose nesting or alias expansion would exhaust memory or time (a 'billion "
    "laughs' document). Heat caps templates by size; this caps them by structure too.",
    "https://en.wikipedia.org/wiki/Billion_laughs_attack")

TOO_LARGE = Declared(
    "E0004", "nfvcat",
    "File or archive too large",
    "A document over the size limit, a Heat template (HOT or CloudFormation format) over Heat's "
    "max_template_size (524288 bytes by default), or a CSAR whose members expand beyond the limit.",
    "https://docs.openstack.org/heat/latest/configuration/config-options.html")

NOT_TEXT = Declared(
    "E0005", "nfvcat",
    "Empty, binary or non-UTF-8 file",
    "The file is empty, binary, or not UTF-8 text, so it is no template of any kind.",
    "https://docs.openstack.org/heat/latest/template_guide/hot_spec.html")

DUPLICATE_KEY = Declared(
    "E0006", "nfvcat",
    "Duplicate mapping key",
    "A key appears twice in one mapping. YAML loaders, Heat's included, silently keep the "
    "last value, so the first definition is lost without a word.",
    "https://yaml.org/spec/1.2.2/#mapping")

OUTSIDE = Declared(
    "E0015", "nfvcat",
    "A file outside the project is referenced",
    "A template's get_file, a nested template's type, an environment's resource_registry entry, or a file a "
    "walk found, whose real path (symlinks followed) lies outside the project's roots: the project directory "
    "(the nearest one with .nfvcat.yaml or .git), the catalog, the directories given, and those --allow-root "
    "or allow_roots in .nfvcat.yaml add. It is not read: a template validated in CI must not reach the "
    "runner's files (/etc/shadow, /proc/self/environ) and have them printed. The finding names the reference, "
    "never the content.",
    "https://docs.openstack.org/heat/latest/template_guide/hot_spec.html#get-file")

NOT_REGULAR = Declared(
    "E0016", "nfvcat",
    "Not a regular file",
    "A FIFO, a character or block device, a socket or a kernel pseudo-file (/proc, /sys) is given or "
    "referenced where a file is expected. It is not read: a FIFO blocks until a writer comes and /dev/zero "
    "never ends. A shell's process substitution (<(cmd)) and - (standard input) are read by the command "
    "itself, bounded, as a buffer.",
    "https://man7.org/linux/man-pages/man7/inode.7.html")
