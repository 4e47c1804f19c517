"""``nfvcat validate``: read documents, run the in-process rules, hand the rest to the engines.

Engines run as worker processes in parallel (Heat and Nova cannot share one), only those the documents
need, and only for jobs whose result is not cached.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from nfvcat import cache, catalog, documents, yamlpos
from nfvcat.documents import Document
from nfvcat.errors import UserError
from nfvcat.findings import Finding, RawFinding
from nfvcat.rules import all_rules
from nfvcat.rules.base import Context, Rule, SiteProfile
from nfvcat.rules.parsing.e0007_unknown_kind import UnknownKind
from nfvcat.rules.parsing.e0009_engine_failure import EngineFailure

ENGINE_TIMEOUT = float(os.environ.get("NFVCAT_ENGINE_TIMEOUT", "900"))


@dataclass
class Options:
    environments: list[str] = field(default_factory=list)
    parameters: dict[str, str] = field(default_factory=dict)
    site: str | None = None
    use_cache: bool = True
    catalog_root: Path | None = None


@dataclass
class Report:
    findings: list[Finding]
    files: int
    timings: dict[str, float] = field(default_factory=dict)
    jobs: dict[str, int] = field(default_factory=dict)
    cache_hits: int = 0
    engine_failed: bool = False


@dataclass
class _Job:
    engine: str
    doc: Document
    payload: dict[str, Any]
    prefix: tuple[Any, ...] = ()
    result: dict[str, Any] | None = None


def load_site(path: Path | None, explicit: bool) -> SiteProfile:
    if path is None or not path.is_file():
        if explicit:
            raise UserError(f"site profile {path}: no such file")
        return SiteProfile()
    try:
        data, _ = yamlpos.load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yamlpos.DocumentError) as exc:
        raise UserError(f"site profile {path}: {getattr(exc, 'message', exc)}") from None
    physnets = data.get("physnets") if isinstance(data, dict) else None
    if not isinstance(physnets, dict):
        raise UserError(f"site profile {path}: no 'physnets' mapping")
    return SiteProfile(str(path), physnets, _page_sizes(path, data.get("page_sizes")))


def _page_sizes(path: Path, value: Any) -> tuple[int, ...]:
    """The site profile's ``page_sizes`` (the page sizes its hosts offer, e.g. [4K, 2M, 1G]) in KiB."""
    from nfvcat.plan.inventory import page_size_kb
    from nfvcat.rules.base import X86_64_PAGE_SIZES_KB

    if value is None:
        return X86_64_PAGE_SIZES_KB
    try:
        if not isinstance(value, list) or not value:
            raise ValueError("must be a list of sizes such as [4K, 2M, 1G]")
        return tuple(sorted({page_size_kb(v) for v in value}))
    except ValueError as exc:
        raise UserError(f"site profile {path}: page_sizes: {exc}") from None


def _catalog_flavors(root: Path | None, docs: dict[str, Document]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    if root is None or not (root / "flavors").is_dir():
        return out
    for path in catalog.walk(root / "flavors"):
        doc = docs.get(str(path.resolve())) or documents.read(str(path))
        if doc.kind == "flavor" and isinstance(doc.data.get("name"), str):
            out[doc.data["name"]] = doc.data
    return out


def _env_parameters(env: Document) -> dict[str, Any]:
    params = env.data.get("parameters") if env.kind == "environment" else None
    return dict(params) if isinstance(params, dict) else {}


def _pci_aliases(flavor: dict[str, Any]) -> list[str] | None:
    """``[pci] alias`` entries a catalog flavor's ``host`` section states, as JSON strings for Nova."""
    host = flavor.get("host")
    if not isinstance(host, dict):
        return None
    flat = host.get("pci_alias")
    if isinstance(flat, list) and flat:
        return [a if isinstance(a, str) else json.dumps(a) for a in flat]
    for holder in (host, host.get("nova_conf"), host.get("nova.conf")):
        pci = holder.get("pci") if isinstance(holder, dict) else None
        alias = pci.get("alias") if isinstance(pci, dict) else None
        if isinstance(alias, list) and alias:
            return [a if isinstance(a, str) else json.dumps(a) for a in alias]
    return None


def _vnfd_flavors(data: Any, path: tuple[Any, ...] = ()) -> list[tuple[tuple[Any, ...], dict[str, Any]]]:
    """(path of nova_extra_specs, its virtual_compute properties) for every Vdu in a SOL001 VNFD."""
    found: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
    if isinstance(data, dict):
        for key, value in data.items():
            if key == "nova_extra_specs" and isinstance(_specs_of(value), dict) and len(path) >= 2:
                found.append((path + (key,), {}))
            else:
                found.extend(_vnfd_flavors(value, path + (key,)))
    elif isinstance(data, list):
        for i, item in enumerate(data):
            found.extend(_vnfd_flavors(item, path + (i,)))
    return found


def _specs_of(value: Any) -> Any:
    """SOL001 ``compute_requirements`` is a map of strings, so ``nova_extra_specs`` arrives as a JSON or
    YAML string (heat-translator parses it the same way)."""
    if isinstance(value, str):
        try:
            return yaml.safe_load(value)
        except yaml.YAMLError:
            return None
    return value


def _dig(data: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        if isinstance(data, dict):
            data = data.get(key)
        elif isinstance(data, list) and isinstance(key, int) and key < len(data):
            data = data[key]
        else:
            return None
    return data


def _mem_mib(value: Any) -> int | None:
    """'4 GiB' / '512 MB' as MiB."""
    if isinstance(value, (int, float)):
        return int(value)
    parts = str(value).split()
    if len(parts) != 2:
        return None
    try:
        number = float(parts[0])
    except ValueError:
        return None
    scale = {"b": 1 / 1048576, "kb": 1 / 1024, "kib": 1 / 1024, "mb": 1, "mib": 1, "gb": 1024, "gib": 1024,
             "tb": 1048576, "tib": 1048576}.get(parts[1].lower())
    return int(number * scale) if scale else None


def _positive(value: Any, default: int) -> int:
    """A size for Nova's objects; a bad one is reported by E2004, Nova gets the default."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**31 else default


def _string_specs(data: Any, specs: dict[str, Any], params: dict[str, Any]) -> dict[str, str]:
    from nfvcat import hot

    out = {}
    for key, value in specs.items():
        value = hot.resolve(data, value, params)
        if value is not hot.UNRESOLVED and not isinstance(value, (dict, list)):
            out[str(key)] = str(value).lower() if isinstance(value, bool) else str(value)
    return out


class Validation:
    def __init__(self, paths: list[str], options: Options):
        self.options = options
        self.root = options.catalog_root or catalog.find_root()
        self.catalog_mode = not paths
        self.docs: dict[str, Document] = {}
        self.raw: list[tuple[Document, RawFinding]] = []
        self.jobs: list[_Job] = []
        self.timings: dict[str, float] = {}
        self.rules = all_rules()
        self.blocking = {r.id for r in self.rules if r.blocks_engines}
        self.nesting_rules = [r for r in self.rules if r.follows_nesting]
        self.explicit: set[str] = set()
        self.spawned: dict[str, float] = {}
        self.paths = self._expand(paths)

    def _expand(self, paths: list[str]) -> list[str]:
        if not paths:
            if self.root is None:
                raise UserError("no catalog here (no templates/ and flavors/ above the current directory); "
                                "give the files to validate")
            return [str(p) for p in catalog.catalog_files(self.root)]
        out: list[str] = []
        for p in paths:
            if os.path.isdir(p):
                found = catalog.walk(Path(p))
                out.extend(str(f) for f in found)
                if not found:
                    out.append(p)
                    self.explicit.add(os.path.abspath(p))
            else:
                out.append(p)
                self.explicit.add(os.path.abspath(p))
        return out

    def doc(self, path: str) -> Document:
        key = os.path.abspath(path)
        if key not in self.docs:
            self.docs[key] = documents.read(path)
        return self.docs[key]

    def run(self) -> Report:
        t0 = time.monotonic()
        targets = [self.doc(p) for p in dict.fromkeys(self.paths)]
        envs = [self.doc(p) for p in self.options.environments]
        site_path = Path(self.options.site) if self.options.site else (
            self.root / catalog.SITE_PROFILE if self.root else None)
        params: dict[str, Any] = {}
        for env in envs:
            params.update(_env_parameters(env))
        params.update(self.options.parameters)
        ctx = Context(site=load_site(site_path, bool(self.options.site)), parameters=params,
                      flavors=_catalog_flavors(self.root, self.docs), networks=self._catalog_networks())
        self.timings["read"] = time.monotonic() - t0

        # Jobs first, so the workers import Heat, Nova and tosca-parser while the rules run here.
        t1 = time.monotonic()
        checked = [doc for doc in dict.fromkeys(targets + envs) if self._prepare(doc, ctx)]
        pending, hits = self._lookup()
        procs = {name: self._spawn(name) for name in pending}
        blocked = {doc for doc in checked if self._rules(doc, ctx)}
        self.timings["rules"] = time.monotonic() - t1
        self.jobs = [job for job in self.jobs if job.doc not in blocked]
        threads = [threading.Thread(target=self._engine, daemon=True, args=(
            name, [(k, j) for k, j in batch if j.doc not in blocked], procs[name])) for name, batch in pending.items()]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        findings = sorted(set(self._locate()))
        self.timings["total"] = time.monotonic() - t0
        jobs: dict[str, int] = {}
        for job in self.jobs:
            jobs[job.engine] = jobs.get(job.engine, 0) + 1
        failed = any(f.rule_id == EngineFailure.id for f in findings)
        return Report(findings, len(targets), self.timings, jobs, hits, failed)

    # -- in-process rules, then engine jobs -------------------------------------------------------
    def _prepare(self, doc: Document, ctx: Context) -> bool:
        """Record what reading found and plan the document's engine jobs; False when nothing more runs."""
        for problem in doc.problems:
            self.raw.append((doc, problem))
        if any(p.rule_id.startswith("E") for p in doc.problems) and doc.kind != "csar":
            return False
        if doc.kind == "unknown":
            if doc.abspath in self.explicit:
                self.raw.append((doc, RawFinding(
                    UnknownKind.id, (), "not a HOT template, Heat environment, TOSCA template, SOL001 VNFD, CSAR, "
                    "cloud-config, or catalog entry/flavor/site profile/inventory")))
            return False
        self._plan_jobs(doc, ctx, self._examples(doc))
        return True

    def _rules(self, doc: Document, ctx: Context) -> bool:
        """Run the in-process rules; True when one of them keeps the document from the engines."""
        blocked = False
        contexts = [replace(ctx, parameters={**_env_parameters(self.doc(ex)), **self.options.parameters})
                    for ex in self._examples(doc)] or [ctx]
        for rule in self.rules:
            if doc.kind in rule.kinds:
                for each in contexts:  # an entry's template is checked with each of its examples
                    for raw in self._safe(rule, doc, each):
                        self.raw.append((doc, raw))
                        blocked = blocked or raw.rule_id in self.blocking
        if doc.kind == "hot":
            for each in contexts:
                self._check_nested(doc, each, via=[])
        return blocked

    def _check_nested(self, parent: Document, ctx: Context, via: list[str]) -> None:
        """Run the rules that depend on parameters over each nested template, with what the parent
        passes it: a chain's networks and flavor reach the VNF template's ports and server."""
        if len(via) >= 5:
            return
        from nfvcat import hot

        for name, path, properties in hot.nested_templates(parent.data, os.path.dirname(parent.abspath)):
            child = self.doc(path)
            if child.kind != "hot" or child.problems:
                continue  # Heat's bundling (E1002) reports a nested template that cannot be read
            here = [*via, f"{parent.path} resource '{name}'"]
            child_ctx = replace(ctx, parameters=hot.child_parameters(parent.data, properties, ctx.parameters),
                                outer=(parent.data, *ctx.outer))
            for rule in self.nesting_rules:
                for raw in self._safe(rule, child, child_ctx):
                    self.raw.append((child, replace(raw, message=f"{raw.message} (as used by {' via '.join(here)})")))
            self._check_nested(child, child_ctx, here)

    def _catalog_networks(self) -> dict[str, dict[str, Any]]:
        def read(path: Path) -> Any:
            doc = self.doc(str(path))
            return doc.data if not doc.problems else None

        return catalog.provider_networks(self.root, read)

    def _examples(self, doc: Document) -> list[str]:
        """The example environments of the entry whose main template ``doc`` is (none with -e)."""
        if doc.kind != "hot" or self.options.environments:
            return []
        entry_dir = catalog.entry_of(Path(doc.abspath))
        if entry_dir is None:
            return []
        entry = self.doc(str(entry_dir / "entry.yaml")).data
        if catalog.main_template(entry_dir, entry) != Path(doc.abspath):
            return []
        return [str(p) for p in catalog.examples_of(entry_dir)]

    def _safe(self, rule: Rule, doc: Document, ctx: Context) -> list[RawFinding]:
        try:
            return list(rule.check(doc, ctx))
        except Exception as exc:  # a rule bug must not hide the others' findings
            return [RawFinding(EngineFailure.id, (), f"rule {rule.id} failed: {type(exc).__name__}: {exc}")]

    def _plan_jobs(self, doc: Document, ctx: Context, examples: list[str]) -> None:
        kind = doc.kind
        if kind == "hot":
            env_sets = [[ex] for ex in examples] or [[os.path.abspath(e) for e in self.options.environments]]
            for envs in env_sets:
                self.jobs.append(_Job("heat", doc, {"file": doc.abspath, "environments": envs,
                                                    "parameters": self.options.parameters}))
            self._plan_hot_flavors(doc, ctx)
        elif kind == "environment":
            self.jobs.append(_Job("heat", doc, {"file": doc.abspath, "kind": "environment"}))
        elif kind == "flavor":
            data = doc.data
            specs = data.get("extra_specs")
            specs = specs if isinstance(specs, dict) else {}
            self.jobs.append(_Job("nova", doc, {
                "name": str(data.get("name")), "vcpus": _positive(data.get("vcpus"), 1),
                "ram": _positive(data.get("ram"), 512), "disk": _positive(data.get("disk"), 0),
                "extra_specs": _string_specs(None, specs, {}),
                "pci_alias": _pci_aliases(data), "page_sizes": list(ctx.site.page_sizes_kb)}, ("extra_specs",)))
        elif kind in ("tosca", "vnfd", "csar"):
            self.jobs.append(_Job("tosca", doc, {"file": doc.abspath, "kind": kind}))
            if kind == "vnfd":
                for where, _ in _vnfd_flavors(doc.data):
                    compute = _dig(doc.data, where[:-2]) or {}
                    cpu = _dig(compute, ("virtual_cpu", "num_virtual_cpu"))
                    mem = _mem_mib(_dig(compute, ("virtual_memory", "virtual_mem_size")))
                    self.jobs.append(_Job("nova", doc, {
                        "name": str(where[2]) if len(where) > 2 else "vdu",
                        "vcpus": _positive(cpu, 1), "ram": _positive(mem, 512),
                        "extra_specs": _string_specs(None, _specs_of(_dig(doc.data, where)) or {}, {}),
                        "page_sizes": list(ctx.site.page_sizes_kb)}, where))

    def _plan_hot_flavors(self, doc: Document, ctx: Context) -> None:
        from nfvcat import hot

        for name, body in hot.resources(doc.data, "OS::Nova::Flavor"):
            p = hot.props(body)
            specs = p.get("extra_specs")
            specs = specs if isinstance(specs, dict) else {}
            vcpus = hot.resolve(doc.data, p.get("vcpus"), ctx.parameters)
            ram = hot.resolve(doc.data, p.get("ram"), ctx.parameters)
            self.jobs.append(_Job("nova", doc, {
                "name": name, "vcpus": _positive(vcpus, 1), "ram": _positive(ram, 512),
                "extra_specs": _string_specs(doc.data, specs, ctx.parameters),
                "page_sizes": list(ctx.site.page_sizes_kb)}, ("resources", name, "properties", "extra_specs")))

    # -- engines --------------------------------------------------------------------------------
    def _lookup(self) -> tuple[dict[str, list[tuple[str, _Job]]], int]:
        """Cached results into their jobs; the rest by engine, with their cache keys."""
        hits = 0
        pending: dict[str, list[tuple[str, _Job]]] = {}
        for job in self.jobs:
            key = cache.job_key(job.engine, job.payload)
            cached = cache.get(key) if self.options.use_cache else None
            if cached is not None:
                job.result = cached
                hits += 1
            else:
                pending.setdefault(job.engine, []).append((key, job))
        return pending, hits

    def _spawn(self, name: str) -> subprocess.Popen[bytes] | str:
        """Start an engine's worker; it loads its engine at once and then waits for its jobs."""
        self.spawned[name] = time.monotonic()
        try:
            return subprocess.Popen([sys.executable, "-m", f"nfvcat.engines.{name}"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                    env=dict(os.environ, PYTHONWARNINGS="ignore"))
        except OSError as exc:
            return str(exc)

    def _engine(self, name: str, batch: list[tuple[str, _Job]], proc: subprocess.Popen[bytes] | str) -> None:
        t0 = self.spawned.get(name, time.monotonic())
        if not batch and not isinstance(proc, str):  # every job's document was blocked by a rule
            proc.kill()
            proc.wait()
            return
        payload = json.dumps([job.payload for _, job in batch])
        results: list[Any] | None = None
        error = proc if isinstance(proc, str) else ""
        if not isinstance(proc, str):
            try:
                out, err = proc.communicate(payload.encode(), timeout=ENGINE_TIMEOUT)
                if proc.returncode == 0:
                    results = json.loads(out)
                else:
                    lines = [ln for ln in err.decode(errors="replace").splitlines() if ln.strip()]
                    error = lines[-1] if lines else f"exit code {proc.returncode}"
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.communicate()
                error = f"timed out after {ENGINE_TIMEOUT:.0f} s"
            except ValueError as exc:
                error = f"unreadable output: {exc}"
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        if not isinstance(results, list) or len(results) != len(batch):
            message = f"{name} engine did not run: {error or 'bad result count'}"
            results = [{"findings": [{"id": EngineFailure.id, "path": [], "message": message, "engine": name}]}
                       for _ in batch]
        else:
            for (key, _), result in zip(batch, results, strict=True):
                if not any(f.get("id") == EngineFailure.id for f in result.get("findings", [])):
                    cache.put(key, result)
        for (_, job), result in zip(batch, results, strict=True):
            job.result = result
        self.timings[f"engine {name}"] = time.monotonic() - t0

    # -- mapping paths to lines -----------------------------------------------------------------
    def _locate(self) -> list[Finding]:
        out = [self._finding(doc, raw) for doc, raw in self.raw]
        for job in self.jobs:
            for data in (job.result or {}).get("findings", []):
                raw = RawFinding.from_json(data)
                if raw.file is None:
                    raw = RawFinding(raw.rule_id, job.prefix + raw.path, raw.message, raw.engine, None,
                                     raw.line, raw.column)
                out.append(self._finding(job.doc, raw))
        return out

    def _finding(self, doc: Document, raw: RawFinding) -> Finding:
        target = doc
        if raw.file and os.path.abspath(raw.file) != doc.abspath and os.path.isfile(raw.file):
            target = self.doc(raw.file)
        if raw.line is not None:
            line, col = raw.line, raw.column or 1
        else:
            line, col = target.locate(raw.path)
        shown = target.path if (target is not doc or not raw.file) else doc.path
        if raw.file and not os.path.isfile(raw.file):
            shown = raw.file  # a member of an archive, say
        return Finding(shown, line, col, raw.rule_id, raw.message, raw.engine)


def validate_paths(paths: list[str], options: Options | None = None) -> Report:
    return Validation(list(paths), options or Options()).run()
