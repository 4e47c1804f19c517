"""Lifecycle figures on the dev cloud (prints figures only, asserts nothing about time).

- devcloud first start (from an empty state directory) and warm restart (one sample each: a start is the
  environment of everything else),
- `nfvcat instantiate chain-vrouter -e ovs-dpdk` (create + wait + check) against `openstack stack create
  --wait` of the same template and environment, and `nfvcat terminate` (delete + wait + leak check) against
  `openstack stack delete --wait`: one warm-up of each arm, then --samples rounds alternating which arm goes
  first, on the same dev cloud; medians and the ratios of the medians,
- `nfvcat check` of a 10-VNF stack (--samples samples, median).

Runs its own dev cloud in a temporary state directory (root, ports of the dev cloud must be free) and removes it
at the end. `--keep-dir DIR` reuses DIR instead (a second run then measures two warm starts).
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
BIN = Path(sys.executable).parent
TEN_VNF = """heat_template_version: 2021-04-16
description: bench, 10 pinned one-vCPU VNFs with one vhost-user port each
resources:
  vnfs:
    type: OS::Heat::ResourceGroup
    properties:
      count: 10
      resource_def:
        type: vnf.yaml
        properties: {index: '%index%'}
"""
ONE_VNF = """heat_template_version: 2021-04-16
parameters:
  index: {type: string}
resources:
  port:
    type: OS::Neutron::Port
    properties: {name: {list_join: ['-', [bench-vnf, {get_param: index}, data]]}, network: nfv-dpdk-left,
                 port_security_enabled: false}
  server:
    type: OS::Nova::Server
    properties:
      name: {list_join: ['-', [bench-vnf, {get_param: index}]]}
      image: {image}
      flavor: nfvcat-bench.pinned1
      networks: [{port: {get_resource: port}}]
"""


def run(*argv: str, env: dict[str, str], ok: tuple[int, ...] = (0,)) -> float:
    t = time.monotonic()
    res = subprocess.run(list(argv), env=env, cwd=ROOT, capture_output=True, text=True, check=False)
    if res.returncode not in ok:
        sys.exit(f"failed: {' '.join(argv)}\n{res.stdout[-2000:]}\n{res.stderr[-2000:]}")
    return time.monotonic() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--keep-dir", help="state directory to use and keep")
    ap.add_argument("--samples", type=int, default=5, help="samples per arm after the warm-up (at least 3)")
    args = ap.parse_args()
    if args.samples < 3:
        ap.error("--samples must be at least 3")
    state = Path(args.keep_dir) if args.keep_dir else Path(tempfile.mkdtemp(prefix="nfvcat-bench-devcloud-"))
    env = {**os.environ, "NFVCAT_DEVCLOUD_DIR": str(state), "OS_CLOUD": "nfvcat-dev"}
    nfvcat = str(BIN / "nfvcat")
    openstack = str(BIN / "openstack")
    try:
        first = run(nfvcat, "devcloud", "up", env=env)
        print(f"devcloud up (state {'reused' if args.keep_dir else 'empty'}): {first:.1f} s")
        run(nfvcat, "devcloud", "down", env=env)
        warm = run(nfvcat, "devcloud", "up", env=env)
        print(f"devcloud up (warm restart): {warm:.1f} s")

        # the product images, as the integration tier onboards them: build them first (`nfvcat image build`),
        # else the first figure holds their build (minutes)
        print(f"onboard (first): {run(nfvcat, 'onboard', env=env):.1f} s")
        print(f"onboard (no change): {run(nfvcat, 'onboard', env=env):.1f} s")

        entry = Path(os.environ.get("NFVCAT_CATALOG_DIR") or ROOT) / "templates/heat/chain-vrouter"
        template, environment = str(entry / "chain-vrouter.yaml"), str(entry / "examples/ovs-dpdk.env.yaml")

        def ours() -> tuple[float, float]:
            return (run(nfvcat, "instantiate", "chain-vrouter", "-e", environment, env=env),
                    run(nfvcat, "terminate", "chain-vrouter", env=env))

        def bare() -> tuple[float, float]:
            return (run(openstack, "stack", "create", "--wait", "-t", template, "-e", environment, "bench-bare",
                        env=env),
                    run(openstack, "stack", "delete", "--yes", "--wait", "bench-bare", env=env))

        arms = {"nfvcat": ours, "openstack": bare}
        for arm in arms.values():  # warm-up: caches, first image/flavor look-ups, Heat's first stack
            arm()
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in arms}
        for i in range(args.samples):
            order = list(arms) if i % 2 == 0 else list(reversed(arms))
            for name in order:
                samples[name].append(arms[name]())
        med = {name: (statistics.median(c for c, _ in v), statistics.median(d for _, d in v))
               for name, v in samples.items()}
        for name, v in samples.items():
            print(f"{name:9} create: {' '.join(f'{c:.1f}' for c, _ in v)} s (median {med[name][0]:.1f}); "
                  f"delete: {' '.join(f'{d:.1f}' for _, d in v)} s (median {med[name][1]:.1f})")
        create_ratio, delete_ratio = (med["nfvcat"][i] / med["openstack"][i] for i in (0, 1))
        print(f"ratio nfvcat/openstack (medians, {args.samples} alternating samples after a warm-up): "
              f"create {create_ratio:.2f}, delete {delete_ratio:.2f}")

        run(openstack, "flavor", "create", "--vcpus", "1", "--ram", "1024", "--disk", "20", "--property",
            "hw:cpu_policy=dedicated", "nfvcat-bench.pinned1", env=env)
        tdir = state / "bench-10"
        tdir.mkdir(exist_ok=True)
        (tdir / "ten.yaml").write_text(TEN_VNF)
        from nfvcat.packaging.images import refs

        image = str(refs.glance_images(ROOT)[0]["name"])  # a product image `onboard` put on the cloud above
        (tdir / "vnf.yaml").write_text(ONE_VNF.replace("{image}", image))
        create = run(openstack, "stack", "create", "--wait", "-t", str(tdir / "ten.yaml"), "bench-ten", env=env)
        run(nfvcat, "check", "bench-ten", "--format", "json", env=env, ok=(0, 2))  # warm-up
        checks = [run(nfvcat, "check", "bench-ten", "--format", "json", env=env, ok=(0, 2))
                  for _ in range(args.samples)]
        print(f"10-VNF stack create: {create:.1f} s; nfvcat check of 10 VNFs: "
              f"{' '.join(f'{c:.2f}' for c in checks)} s (median {statistics.median(checks):.2f})")
        run(nfvcat, "terminate", "bench-ten", env=env)
        run(openstack, "flavor", "delete", "nfvcat-bench.pinned1", env=env)
    finally:
        subprocess.run([nfvcat, "devcloud", "down", *([] if args.keep_dir else ["--wipe"])], env=env, cwd=ROOT,
                       capture_output=True, check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
