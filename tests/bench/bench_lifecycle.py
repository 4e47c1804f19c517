"""Lifecycle figures on the dev cloud (prints figures only, asserts nothing about time).

- devcloud first start (from an empty state directory) and warm restart,
- instantiate + check of chain-vrouter (OVS-DPDK) against a bare `openstack stack create --wait` of the same
  bundle (ratio),
- check time of a 10-VNF stack.

Runs its own dev cloud in a temporary state directory (root, ports of the dev cloud must be free) and removes it
at the end. `--keep-dir DIR` reuses DIR instead (a second run then measures two warm starts).
"""

from __future__ import annotations

import argparse
import os
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
      image: nfvcat-debian12-vnf
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
    args = ap.parse_args()
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

        from tests.integration import qcow2

        images = state / "bench-images"
        images.mkdir(exist_ok=True)
        qcow2.write(images / "nfvcat-debian12-vnf.qcow2")
        print(f"onboard (first): {run(nfvcat, 'onboard', '--image-dir', str(images), env=env):.1f} s")
        print(f"onboard (no change): {run(nfvcat, 'onboard', '--image-dir', str(images), env=env):.1f} s")

        entry = Path(os.environ.get("NFVCAT_CATALOG_DIR") or ROOT) / "templates/heat/chain-vrouter"
        ours = run(nfvcat, "instantiate", "chain-vrouter", "-e", "ovs-dpdk", env=env)
        run(nfvcat, "terminate", "chain-vrouter", env=env)
        bare = run(openstack, "stack", "create", "--wait", "-t", str(entry / "chain-vrouter.yaml"), "-e",
                   str(entry / "examples/ovs-dpdk.env.yaml"), "bench-bare", env=env)
        run(openstack, "stack", "delete", "--yes", "--wait", "bench-bare", env=env)
        print(f"instantiate+check chain-vrouter: {ours:.1f} s; openstack stack create --wait: {bare:.1f} s; "
              f"ratio {ours / bare:.2f}")

        run(openstack, "flavor", "create", "--vcpus", "1", "--ram", "1024", "--disk", "20", "--property",
            "hw:cpu_policy=dedicated", "nfvcat-bench.pinned1", env=env)
        tdir = state / "bench-10"
        tdir.mkdir(exist_ok=True)
        (tdir / "ten.yaml").write_text(TEN_VNF)
        (tdir / "vnf.yaml").write_text(ONE_VNF)
        create = run(openstack, "stack", "create", "--wait", "-t", str(tdir / "ten.yaml"), "bench-ten", env=env)
        check = run(nfvcat, "check", "bench-ten", "--format", "json", env=env, ok=(0, 2))
        print(f"10-VNF stack create: {create:.1f} s; nfvcat check of 10 VNFs: {check:.2f} s")
        run(nfvcat, "terminate", "bench-ten", env=env)
        run(openstack, "flavor", "delete", "nfvcat-bench.pinned1", env=env)
    finally:
        subprocess.run([nfvcat, "devcloud", "down", *([] if args.keep_dir else ["--wipe"])], env=env, cwd=ROOT,
                       capture_output=True, check=False)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
