"""Day-2 figures on a running, onboarded dev cloud (prints figures only, asserts nothing about time).

Each nfvcat operation against the bare `openstack` command that does the same request, on the same stack:

- `nfvcat list --format json` (Heat's stack list, the catalog's release history) against `openstack stack list`;
- `nfvcat upgrade chain-vrouter --to NEW --dry-run` (Heat's update preview, the release record, the CHANGELOG)
  against `openstack stack update --existing --dry-run --show-nested` of the same template and environment;
- the update itself, `nfvcat upgrade --to NEW --yes --no-check` (preview, PATCH, progress) from OLD to NEW,
  against `openstack stack update --existing --wait` of OLD's template back from NEW to OLD: each replaces the
  vRouter's server (its user data differs), so the arms alternate by construction.

One warm-up of each arm, then --samples rounds; list and preview alternate which arm goes first. Medians and
the ratio of the medians. Take the dev-cloud lock around it: `flock /work/notes/devcloud.lock python ...`.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.bench.cloudarms import BIN, ROOT, arguments, line
from tests.bench.cloudarms import timed as run

STACK = "chain-vrouter"


def main() -> int:
    from nfvcat.catalog import history
    from tests.integration.conftest import glance_name

    args, env = arguments(__doc__)
    nfvcat, openstack = str(BIN / "nfvcat"), str(BIN / "openstack")
    old, new = history.versions(ROOT, STACK, "heat")[-2:]
    old_dir = history.resolve(ROOT, f"{STACK}@{old}", "heat").dir
    new_dir = history.resolve(ROOT, f"{STACK}@{new}", "heat").dir
    run(nfvcat, "terminate", STACK, env=env)
    run(nfvcat, "instantiate", f"{STACK}@{old}", "-e", "ovs-dpdk", "-P", f"image={glance_name('vrouter')}",
        "--no-check", "--ready-timeout", "0", env=env)
    try:
        arms = {
            "list": ([nfvcat, "list", "--format", "json"], [openstack, "stack", "list", "-f", "json"]),
            "upgrade --dry-run": (
                [nfvcat, "upgrade", STACK, "--to", new, "--dry-run"],
                [openstack, "stack", "update", "--existing", "--dry-run", "--show-nested", "-t",
                 str(new_dir / "chain-vrouter.yaml"), "-e", str(new_dir / "examples" / "ovs-dpdk.env.yaml"),
                 STACK, "-f", "json"])}
        for what, (a, b) in arms.items():
            run(*a, env=env)
            run(*b, env=env)
            ta: list[float] = []
            tb: list[float] = []
            for i in range(args.samples):
                first, second = (a, b) if i % 2 == 0 else (b, a)
                t1, t2 = run(*first, env=env), run(*second, env=env)
                ta.append(t1 if first is a else t2)
                tb.append(t2 if first is a else t1)
            line(what, ta, tb)
        up = [nfvcat, "upgrade", STACK, "--to", new, "--yes", "--no-check"]
        back = [openstack, "stack", "update", "--existing", "--wait", "-t", str(old_dir / "chain-vrouter.yaml"),
                "-e", str(old_dir / "examples" / "ovs-dpdk.env.yaml"), "--tags", f"nfvcat:{STACK}@{old}", STACK]
        run(*up, env=env)
        run(*back, env=env)
        ta, tb = [], []
        for _ in range(args.samples):
            ta.append(run(*up, env=env))
            tb.append(run(*back, env=env))
        line(f"update {old} <-> {new} (server replaced)", ta, tb)
    finally:
        run(nfvcat, "terminate", STACK, env=env)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
