"""What an upgrade costs the traffic, on the dev cloud's real host: chain-vrouter 1.0.0 (with the onboarded
vRouter image: the session's day2_chain, which test_watch then breaks and heals) boots under Nova's libvirt
driver; a constant-rate UDP flow (`--traffic devcloud`: test endpoints on the chain's left and right networks,
200 pps) runs through the vRouter while `nfvcat upgrade` runs. The upgrade
to 1.1.0 brings the vRouter hook's new day-0 (new user data: Heat replaces the server): packets lost, the longest
gap and the time back to full rate measured, and the server the preview named is the one that went down. The
upgrade to 1.1.1 changes nothing on the server (only the image's default, and the stack names its image): not
one packet lost, no server down, as the preview said. Each figure goes to standard error."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from tests.integration.conftest import nfvcat

STACK = "day2-vrouter"  # conftest.day2_chain


def upgrade(*args: str) -> dict[str, Any]:
    t0 = time.monotonic()
    res = nfvcat("upgrade", STACK, "--yes", "--no-check", "--format", "json", "--traffic", "devcloud",
                 "--recover-timeout", "1200", *args, timeout=3600)
    sys.stderr.write(f"[outage] upgrade {' '.join(args)}: {time.monotonic() - t0:.0f} s, rc {res.returncode}\n")
    assert res.returncode == 0, res.stderr[-3000:]
    doc = json.loads(res.stdout)
    sys.stderr.write(f"[outage] {json.dumps(doc['outage'])}\n")
    return dict(doc)


def test_an_upgrade_that_replaces_the_vrouter_loses_packets_one_that_does_not_loses_none(conn: Any,
                                                                                         day2_chain: str) -> None:
    from nfvcat.cloud.stacks import servers_of

    assert conn.orchestration.find_stack(day2_chain).tags == ["nfvcat:chain-vrouter@1.0.0"]
    [(_, first)] = servers_of(conn, STACK)

    replaced = upgrade("--to", "1.1.0")
    found = replaced["outage"]
    assert replaced["plan"]["downtime"] and found["baseline_at_full_rate"]
    assert found["lost"] > 0 and found["longest_gap_s"] > 1, found
    assert found["time_to_full_rate_s"] is not None and found["ok"]
    assert (found["prediction"]["predicted_down"], found["prediction"]["went_down"],
            found["prediction"]["held"]) == ([first], [first], True)
    [(_, second)] = servers_of(conn, STACK)
    assert second != first

    same = upgrade("--to", "1.1.1")
    found = same["outage"]
    assert same["plan"]["downtime"] == [] and found["baseline_at_full_rate"]
    assert found["sent"] > 0 and found["lost"] == 0, found
    assert found["prediction"]["held"] is True and found["prediction"]["went_down"] == []
    assert [sid for _, sid in servers_of(conn, STACK)] == [second]
