"""Agreement of ``nfvcat validate`` with Heat's own verdict on a directory of other people's templates.

Heat's verdict is what its template-validate API answers (lax ``Stack.validate``, first error only), run
in-process and offline by nfvcat's Heat worker (``mode: heat-api``). Each HOT template found is put in
one category:

- agree-clean: neither reports an error;
- agree-error: both do;
- nfvcat-only: nfvcat reports an error Heat's API does not (false-positive candidates; strict checks such
  as value types are expected here, read the messages);
- heat-only: Heat's API rejects the template and nfvcat does not (missed);
- offline: either side could not validate without a cloud (E0009).

Usage: ``python -m tests.corpus.run_corpus DIR [DIR...] [--details] [--json]
[--nfvcat "env PYTHONPATH=/tmp/old/tools python -m nfvcat"]`` (the last compares another nfvcat build).
Point it at checkouts of other projects (openstack/heat-templates, tacker's samples); they are read,
never copied into this repository.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from nfvcat.core import documents

SUFFIXES = (".yaml", ".yml", ".template", ".hot", ".json")
CHUNK = 150


def hot_templates(roots: list[str]) -> list[str]:
    out: list[str] = []
    for root in roots:
        for dirpath, dirnames, filenames in os.walk(root):
            dirnames[:] = sorted(d for d in dirnames if not d.startswith("."))
            for name in sorted(filenames):
                if name.endswith(SUFFIXES):
                    path = os.path.abspath(os.path.join(dirpath, name))
                    if documents.read(path).kind == "hot":
                        out.append(path)
    return out


def heat_verdicts(files: list[str]) -> dict[str, list[dict[str, Any]]]:
    jobs = [{"file": f, "mode": "heat-api"} for f in files]
    proc = subprocess.run([sys.executable, "-m", "nfvcat.validation.engines.heat"],
                          input=json.dumps({"jobs": jobs}) + "\n",
                          capture_output=True, text=True, check=True)
    results = json.loads(proc.stdout)["results"]
    return {f: r["findings"] for f, r in zip(files, results, strict=True)}


def nfvcat_verdicts(files: list[str], command: list[str]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for i in range(0, len(files), CHUNK):
        chunk = files[i:i + CHUNK]
        proc = subprocess.run([*command, "validate", "--format", "json", "--no-cache", *chunk],
                              capture_output=True, text=True, env={**os.environ, "NFVCAT_NO_SERVER": "1"})
        if "Traceback" in proc.stderr:
            raise SystemExit(f"nfvcat crashed on {chunk[0]}...: {proc.stderr[-2000:]}")
        report = json.loads(proc.stdout)
        for f in report["findings"] if isinstance(report, dict) else report:
            out[os.path.abspath(str(f["file"]))].append(f)
    return out


def category(heat: list[dict[str, Any]], ours: list[dict[str, Any]]) -> str:
    errors = [f for f in ours if f["id"].startswith("E")]
    if any(f["id"] == "E0009" for f in heat + errors):
        return "offline"
    heat_error = bool(heat)
    if heat_error and errors:
        return "agree-error"
    if heat_error:
        return "heat-only"
    if errors:
        return "nfvcat-only"
    return "agree-clean"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("roots", nargs="+")
    parser.add_argument("--nfvcat", default=f"{shlex.quote(sys.executable)} -m nfvcat",
                        help="the nfvcat command to compare (default: this interpreter's)")
    parser.add_argument("--details", action="store_true", help="list each disagreement with the messages")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    files = hot_templates(args.roots)
    heat = heat_verdicts(files)
    ours = nfvcat_verdicts(files, shlex.split(args.nfvcat))
    rows = []
    for f in files:
        cat = category(heat[f], ours.get(f, []))
        rows.append({"file": f, "category": cat, "heat": [h["message"] for h in heat[f]],
                     "nfvcat": [f"{o['id']} {o['line']}: {o['message']}" for o in ours.get(f, [])
                                if o["id"].startswith("E")]})
    counts = Counter(r["category"] for r in rows)
    rules = Counter(o["id"] for r in rows if r["category"] == "nfvcat-only" for o in ours.get(r["file"], [])
                    if o["id"].startswith("E"))
    if args.json:
        print(json.dumps({"templates": len(files), "counts": counts, "nfvcat_only_rules": rules, "rows": rows},
                         indent=1))
        return 0
    print(f"{len(files)} HOT templates under {', '.join(args.roots)}")
    for name in ("agree-clean", "agree-error", "nfvcat-only", "heat-only", "offline"):
        print(f"  {name:12} {counts.get(name, 0)}")
    if rules:
        print("  nfvcat-only errors by rule: " + ", ".join(f"{k} {v}" for k, v in sorted(rules.items())))
    if args.details:
        for r in rows:
            if r["category"] in ("nfvcat-only", "heat-only", "offline", "agree-error"):
                print(f"\n[{r['category']}] {Path(r['file'])}")
                for m in r["heat"]:
                    print(f"   heat:   {m[:300]}")
                for m in r["nfvcat"]:
                    print(f"   nfvcat: {m[:300]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
