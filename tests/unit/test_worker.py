"""The engine workers' harness (nfvcat.validation.engines.worker): one JSON request per line in, one answer
per line out, library chatter kept off the answers, and the loaded engine kept out of the garbage collector's walks."""

from __future__ import annotations

import json
import subprocess
import sys

WORKER = """
import gc, sys
from nfvcat.validation.engines.worker import serve
loaded = []
def setup():
    loaded.extend([i] for i in range(50_000))  # an engine's modules and state, as far as gc sees them
    print("chatter of a library being loaded")
def check(job):
    print("chatter of a job")
    if job.get("fail"):
        raise ValueError("no such thing")
    return {"frozen": gc.get_freeze_count(), "tracked_now": len(gc.get_objects()), "job": job["n"]}
serve("probe", setup, check)
"""


def _run(*requests: dict[str, object]) -> tuple[list[dict[str, object]], str]:
    proc = subprocess.run([sys.executable, "-c", WORKER], input="".join(json.dumps(r) + "\n" for r in requests),
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    return [json.loads(line) for line in proc.stdout.splitlines()], proc.stderr


def test_a_worker_answers_each_request_in_order_and_keeps_chatter_off_its_answers() -> None:
    answers, stderr = _run({"jobs": [{"n": 1}, {"n": 2}]}, {"jobs": [{"n": 3, "fail": True}]})
    assert [[r.get("job") for r in a["results"]] for a in answers] == [[1, 2], [None]]  # type: ignore[union-attr]
    [failed] = answers[1]["results"]  # type: ignore[misc]
    assert failed["findings"][0]["id"] == "E0009" and "ValueError: no such thing" in failed["findings"][0]["message"]
    assert "chatter of a library being loaded" in stderr


def test_what_set_up_loaded_is_frozen_out_of_the_collector() -> None:
    """A full collection of a loaded Heat walks ~270,000 objects (~0.1 s, in the middle of a job now and then);
    frozen after set-up, the collector sees only what jobs make."""
    [answer], _ = _run({"jobs": [{"n": 1}]})
    [result] = answer["results"]  # type: ignore[misc]
    assert result["frozen"] >= 50_000 and result["tracked_now"] < 50_000, result
