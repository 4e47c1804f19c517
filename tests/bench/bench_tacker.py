"""Tacker day-2 figures on a running, onboarded dev cloud (prints figures only, asserts nothing about time).

Each nfvcat operation against the bare `openstack` command a user would run for it, on the same VNF instance
(vnf-vrouter instantiated once through Tacker). The bare arm is `openstack vnflcm ... --os-tacker-api-version 2`,
which only sends the request (202), followed by `openstack vnflcm op show` every 2 s until the LCM operation
occurrence is final, as a user waits; nfvcat polls the same occurrence itself (1 s doubling to 5 s) and then
runs what `--no-check` leaves: for scale the "scale level" verdict (a Heat resource list).

- scale out by one step then in by one step: the arms alternate by construction (nfvcat out, openstack in,
  openstack out, nfvcat in, ...), so each arm has as many outs as ins;
- change_vnfpkg: `nfvcat upgrade --via tacker --to NEW --yes --no-check` (the new package already onboarded by
  the warm-up) against `openstack vnflcm change-vnfpkg` back to the running package's vnfdId (nfvcat refuses a
  downgrade; the bare arm leaves the mark at NEW, which nfvcat's next run then keeps). NEW is a later
  vnf-vrouter released in a clone of the repository (as tests/integration/test_tacker.py makes it).

One warm-up of each arm, then --samples rounds. Medians and the ratio of the medians. Take the dev-cloud lock
around it: `flock /work/notes/devcloud.lock python tests/bench/bench_tacker.py`.
"""

from __future__ import annotations

import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from tests.bench.cloudarms import BIN, arguments, line, run, timed

NAME, ASPECT = "bench-vrouter", "VDU_VROUTER_scale"
V2 = ["--os-tacker-api-version", "2"]


def bare(request: list[str], inst_id: str, env: dict[str, str]) -> float:
    """The openstack arm: the request, then `op show` of the newest occurrence until it is final."""
    openstack = str(BIN / "openstack")

    def ops() -> set[str]:
        found = json.loads(run(openstack, "vnflcm", "op", "list", *V2, "-f", "json", "--filter",
                               f"(eq,vnfInstanceId,{inst_id})", env=env))
        return {str(o.get("ID") or o.get("id")) for o in found}

    known = ops()  # before the clock: the occurrence the request makes is the one not known yet
    t = time.monotonic()
    run(openstack, "vnflcm", *request, *V2, env=env)
    (op_id,) = ops() - known
    while True:
        occ = json.loads(run(openstack, "vnflcm", "op", "show", str(op_id), *V2, "-f", "json", env=env))
        state = occ.get("Operation State") or occ.get("operationState")
        if state in ("COMPLETED", "FAILED_TEMP", "FAILED", "ROLLED_BACK"):
            if state != "COMPLETED":
                sys.exit(f"{request[0]}: {state}")
            return time.monotonic() - t
        time.sleep(2)


def main() -> int:
    from nfvcat.catalog import vnfd_ids
    from tests.integration.test_tacker import later_package

    args, env = arguments(__doc__)
    nfvcat = str(BIN / "nfvcat")
    run(nfvcat, "terminate", "--via", "tacker", NAME, env=env)
    made = json.loads(run(nfvcat, "instantiate", "--via", "tacker", "vnfd/vnf-vrouter", "--vnf", NAME, "--no-check",
                          "--format", "json", env=env))
    inst_id, old_id = made["vnf"]["vnf_instance"], made["vnf"]["vnfdId"]
    try:
        out = [nfvcat, "scale", "--via", "tacker", NAME, "--aspect", ASPECT, "--no-check"]
        b_out = ["scale", "--type", "SCALE_OUT", "--aspect-id", ASPECT, inst_id]
        b_in = ["scale", "--type", "SCALE_IN", "--aspect-id", ASPECT, inst_id]
        timed(*out, env=env)  # warm-up: nfvcat out, openstack in, openstack out, nfvcat in
        bare(b_in, inst_id, env)
        bare(b_out, inst_id, env)
        timed(*out, "--in", env=env)
        ta: list[float] = []
        tb: list[float] = []
        for i in range(args.samples):
            if i % 2 == 0:
                ta.append(timed(*out, env=env))
                tb.append(bare(b_in, inst_id, env))
            else:
                tb.append(bare(b_out, inst_id, env))
                ta.append(timed(*out, "--in", env=env))
        line("scale by one step (out and in alternating)", ta, tb)  # each round ends at level 0

        with tempfile.TemporaryDirectory(prefix="bench-tacker-") as tmp:
            clone = Path(tmp) / "clone"
            new = later_package(clone)
            cenv = {**env, "NFVCAT_CATALOG_DIR": str(clone)}
            up = [nfvcat, "upgrade", "--via", "tacker", NAME, "--to", new, "--yes", "--no-check"]
            request = Path(tmp) / "back.json"
            request.write_text(json.dumps({"vnfdId": old_id, "additionalParams": {
                "upgrade_type": "RollingUpdate", "vdu_params": [{"vdu_id": "VDU_VROUTER"}],
                "lcm-operation-user-data": "./UserData/lcm_user_data.py",
                "lcm-operation-user-data-class": "VnfUserDataV2"}}))
            back = ["change-vnfpkg", inst_id, str(request)]
            timed(*up, env=cenv, cwd=clone)  # warm-up (onboards NEW's package)
            bare(back, inst_id, env)
            ta, tb = [], []
            for _ in range(args.samples):
                ta.append(timed(*up, env=cenv, cwd=clone))
                tb.append(bare(back, inst_id, env))
            line(f"change_vnfpkg {new} <-> running package (RollingUpdate)", ta, tb)
            print(f"(vnfdIds: running {old_id}, {new} {vnfd_ids.descriptor_id('vnf-vrouter', new)})")
    finally:
        run(nfvcat, "terminate", "--via", "tacker", NAME, env=env)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
