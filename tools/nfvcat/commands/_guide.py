"""What ``nfvcat --help`` and each command's help teach besides the options: the commands grouped the way a user
works, and per command an example and its exit codes. A plugin's command (``nfvcat.core.plugins``) lands in the
group its module names (``GROUP = "the dev cloud"``), else in "plugins"; its own epilog brings its example."""

from __future__ import annotations

import argparse

GROUPS: dict[str, tuple[str, ...]] = {
    "author and validate": ("validate", "rules", "docs", "translate", "day0", "versions", "lsp", "server",
                            "fetch-schema"),
    "plan": ("plan", "preflight", "inventory", "flavor"),
    "package and release": ("package", "image", "release", "site"),
    "deploy and operate": ("onboard", "instantiate", "check", "list", "upgrade", "scale", "heal", "watch",
                            "terminate"),
    "test campaigns": ("test",),
}
PLUGINS = "plugins"

OK_USAGE = "0 ok; 1 usage error or bad input"
FINDINGS = "2 errors found (or warnings with --strict)"
CHECKED = "2 a check failed"
ENGINE = "3 an engine could not run (the answer is unknown)"
CLOUD = "3 the cloud could not be used (the answer is unknown, not negative)"

# command -> (examples, exit codes)
GUIDE: dict[str, tuple[tuple[str, ...], str]] = {
    "validate": (("nfvcat validate chain-vrouter",
                  "nfvcat validate vnf-vrouter@2.0.1 --format junit > junit.xml",
                  "nfvcat validate templates/heat/chain-sfc -e sriov"),
                 f"0 no error; 1 usage error; {FINDINGS}; {ENGINE}"),
    "rules": (("nfvcat rules", "nfvcat rules -c id -c shortdesc"), OK_USAGE),
    "docs": (("nfvcat docs --check", "nfvcat docs templates/heat/chain-vrouter"),
             "0 ok (with --check: up to date); 1 usage error; 2 --check found a README out of date"),
    "translate": (("nfvcat translate chain-vrouter -o chain-vrouter.hot.yaml",
                   "nfvcat translate chain-vrouter@1.1.0"),
                  "0 ok; 1 usage error or no such entry; 2 the template does not translate"),
    "day0": (("nfvcat day0 render ipsec-gw -e initiator -P psk=...",
              "nfvcat day0 configdrive vrouter -o cd.iso"),
             "0 ok; 1 usage error or a parameter without value; 2 the day-0 data has errors"),
    "versions": (("nfvcat versions", "nfvcat versions --against HEAD~1 -v"),
                 "0 every changed entry bumped its version as its interface asks; 1 usage error; 2 a missing bump"),
    "lsp": (("nfvcat lsp --stdio   # the editor's language server command",),
            "0 the editor closed the session; 1 usage error"),
    "server": (("nfvcat server start", "nfvcat server status -f json"),
               "0 ok; 1 usage error; 3 the server could not be started or reached"),
    "fetch-schema": (("nfvcat fetch-schema",), "0 ok; 1 usage error; 3 the package could not be fetched"),
    "plan": (("nfvcat plan chain-vrouter -e sriov", "nfvcat plan chain-sfc@1.2.0 --inventory inv.yaml",
              "nfvcat plan --flavor nfv-sriov --count 4"),
             f"0 every instance placed; 1 usage error; 2 an instance does not fit; {ENGINE}"),
    "preflight": (("nfvcat preflight --os-cloud mycloud",
                   "nfvcat preflight chain-vrouter chain-sfc --os-cloud mycloud -f junit > preflight.xml"),
                  f"0 every entry named runs (none named: the report whatever it says); 1 usage error or no such "
                  f"entry; 2 an entry named does not run; {CLOUD}"),
    "inventory": (("nfvcat inventory collect --os-cloud mycloud > inv.yaml", "nfvcat inventory check inv.yaml"),
                  f"0 ok; 1 usage error or a bad inventory; {CLOUD}"),
    "flavor": (("nfvcat flavor list", "nfvcat flavor render nfv-sriov --as host"), OK_USAGE),
    "package": (("nfvcat package vnf-vrouter -o dist/",
                 "nfvcat package vnf-vrouter@2.0.1 --with-image -o dist/"),
                "0 the package is written; 1 usage error, no such entry or version, or an entry that cannot be "
                "packaged"),
    "image": (("nfvcat image list", "nfvcat image build vrouter"),
              "0 ok; 1 usage error; 2 a build or check failed; 3 the build tool could not run"),
    "site": (("nfvcat site -o public/", "nfvcat site -o public/ --mirror"),
             "0 the site is written; 1 usage error or a catalog that does not read; 3 --mirror: the mirror could "
             "not be read (the site is written, its pages say the drift is unknown)"),
    "release": (("nfvcat release -o dist/",),
                "0 ok; 1 usage error; 2 an entry changed without the bump its interface asks"),
    "onboard": (("nfvcat onboard --os-cloud mycloud --dry-run", "nfvcat onboard --os-cloud mycloud --only flavors"),
                f"0 ok; 1 usage error; 2 something could not be onboarded; {CLOUD}"),
    "instantiate": (("nfvcat instantiate chain-vrouter -e sriov --os-cloud mycloud",
                     "nfvcat instantiate --via tacker vnf-vrouter@2.0.1 --os-cloud mycloud"),
                    f"0 deployed and every check passed; 1 usage error; {CHECKED}; {CLOUD}"),
    "check": (("nfvcat check chain-vrouter --os-cloud mycloud", "nfvcat check chain-vrouter -f json"),
              f"0 every check passed; 1 usage error; {CHECKED}; {CLOUD}"),
    "list": (("nfvcat list --os-cloud mycloud", "nfvcat list -c name -c version"), f"0 ok; 1 usage error; {CLOUD}"),
    "upgrade": (("nfvcat upgrade chain-vrouter --to 1.2.0 --dry-run",
                 "nfvcat upgrade chain-vrouter --to chain-vrouter@1.2.0 --yes",
                 "nfvcat upgrade chain-vrouter --to 1.2.0 --yes --traffic devcloud   # and what the traffic lost"),
                f"0 upgraded (or previewed) and every check passed; 1 usage error or a refused upgrade; {CHECKED}; "
                f"{CLOUD}"),
    "scale": (("nfvcat scale --via tacker vnf-vrouter --aspect vdu_aspect --steps 1",),
              f"0 scaled and checked; 1 usage error; {CHECKED}; {CLOUD}"),
    "heal": (("nfvcat heal --via tacker vnf-vrouter --vnfc VNFC_ID",
              "nfvcat heal --via heat chain-vrouter --server vrouter --traffic-command ./my-flow"),
             f"0 healed and checked; 1 usage error; {CHECKED}; {CLOUD}"),
    "watch": (("nfvcat watch chain-vrouter --traffic devcloud --host-access devcloud",
               "nfvcat watch chain-vrouter --export prometheus",
               "nfvcat watch --via tacker vr1 --export tacker"),
              f"0 every round ended with every probe passing; 1 usage error; 2 a probe still failed or a check "
              f"after a heal failed; {CLOUD}"),
    "terminate": (("nfvcat terminate chain-vrouter --os-cloud mycloud",), f"0 deleted; 1 usage error; {CLOUD}"),
    "test": (("nfvcat test tests/tdf/lab.yaml -o reports/",),
             "0 every test passed; 1 usage error or a bad TDF; 2 a test failed; 3 a step could not run"),
}


def group_of(command: str, module_group: str | None = None) -> str:
    """The group a command is listed in: nfvcat's own by ``GROUPS``, a plugin's by its module's GROUP."""
    for group, names in GROUPS.items():
        if command in names:
            return group
    return module_group or PLUGINS


def epilog(command: str, existing: str | None, description: str | None = None) -> str | None:
    """The command's epilog with its examples and exit codes (those its description or epilog gives kept)."""
    if command not in GUIDE or (existing and "Examples:" in existing):
        return existing
    examples, codes = GUIDE[command]
    text = "Examples:\n" + "\n".join(f"  {e}" for e in examples)
    if "Exit codes" not in f"{existing}{description}":
        text += f"\n\nExit codes: {codes}."
    return f"{existing}\n\n{text}" if existing else text


class Formatter(argparse.HelpFormatter):
    """argparse's default formatter, but a paragraph of indented lines (the examples) keeps its lines."""

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        out = []
        for para in text.split("\n\n"):
            lines = para.splitlines()
            if any(line.startswith("  ") for line in lines):
                out.append("\n".join(indent + line for line in lines))
            else:
                out.append(super()._fill_text(para, width, indent))
        return "\n\n".join(out)
