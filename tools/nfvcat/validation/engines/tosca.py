"""TOSCA engine: tosca-parser's own validation of TOSCA templates and SOL001 VNFDs, and tacker's CSAR loader.

Offline: the ETSI SOL001 type files that VNFDs import by URL are resolved to the copies shipped in the
installed tacker wheel (patched by tacker for tosca-parser), and no other URL is fetched. One import hook
does it for every loader (a YAML file, a CSAR's structure check, tosca-parser on the package, tacker's
loader), so a package resolves its imports exactly as the same VNFD outside a package does. A standalone
VNFD that imports the SOL001 files by bare name (as tacker's sample packages do, with the files beside
it in the package) gets the same copies; inside a CSAR the files must really be there, as tacker needs.

Findings: E4001 tosca-parser rejects the template, E4002 tosca-parser rejects the CSAR's structure,
E4003 tacker's ``load_csar_data`` rejects the package (manifest hashes, VNF properties, flavours); only
for VNF packages: a generic TOSCA CSAR gets tosca-parser's verdict alone, and its messages say so. A message
is located on the key path of the names it quotes (tosca_locate).
Heat and Nova are never imported here (their oslo.config options clash with each other).
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import tempfile
import uuid
import zipfile
from functools import cache
from importlib import util as importlib_util
from typing import Any

import yaml

from nfvcat.core import confine
from nfvcat.core.documents import Document, display_path
from nfvcat.validation.emitted import CSAR_STRUCTURE, ENGINE_FAILURE, TACKER_CSAR, TACKER_LCM, TOSCA_PARSER
from nfvcat.validation.engines import tacker_lcm, tosca_files
from nfvcat.validation.engines.jobs import EngineJob, JobContext
from nfvcat.validation.engines.tosca_locate import STOPPED, crash_at_cause, locate, manifest_line
from nfvcat.validation.engines.worker import Job, Result, finding, serve

ENGINE = "tosca"
TACKER = "tacker"
SOL001_BASE = "https://forge.etsi.org/rep/nfv/SOL001"
SOL001_FILES = ("etsi_nfv_sol001_common_types.yaml", "etsi_nfv_sol001_vnfd_types.yaml")
# v2 releases seen in the wild, all served by the one v2.6.1 copy tacker ships and tosca-parser accepts
# (they differ little). v3+ changed types and allowed values (vnic_type direct, ...): serving them the
# v2.6.1 file would report errors that are not there, so their imports stay unresolved and the document
# is reported as not validated (E0009, exit code 3) rather than invalid.
SOL001_VERSIONS = ("2.5.1", "2.6.1", "2.7.1", "2.8.1")
OFFLINE = "is not fetched: nfvcat validates offline"
VNF_TYPE = "tosca.nodes.nfv.VNF"
GENERIC_CSAR = ("a generic TOSCA CSAR, not a VNF package: tosca-parser's checks ran, tacker's VNF-package "
                "checks do not apply")

_state: dict[str, Any] = {"read": None, "bare_sol001": False}


@cache
def sol001_dir() -> str:
    spec = importlib_util.find_spec("tacker")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("tacker is not installed: the SOL001 type files come from its wheel")
    root = next(iter(spec.submodule_search_locations))
    return os.path.join(root, "tests", "unit", "vnfm", "infra_drivers", "openstack", "data", "etsi_nfv")


def local_defs() -> dict[str, str]:
    """URL -> local file for every SOL001 import URL spelling this engine serves offline."""
    defs: dict[str, str] = {}
    for version in SOL001_VERSIONS:
        for name in SOL001_FILES:
            for raw in ("raw", "-/raw"):
                defs[f"{SOL001_BASE}/{raw}/v{version}/{name}"] = os.path.join(sol001_dir(), name)
    return defs


def jobs(doc: Document, ctx: JobContext) -> list[EngineJob]:
    """tosca-parser (and tacker, for a CSAR) on every TOSCA template, VNFD and package."""
    if doc.kind in ("tosca", "vnfd", "csar"):
        return [EngineJob(ENGINE, doc, {"file": doc.abspath, "kind": doc.kind, "confine": confine.current().to_json()})]
    return []


def offline_setup() -> None:
    """tosca-parser set up offline in this process (once), SOL001 imported by bare name resolved to the
    copies tacker ships: for the commands that parse TOSCA in-process (translate)."""
    setup()
    _state["bare_sol001"] = True


def setup() -> None:
    """Route tosca-parser's YAML loading and imports through this engine's offline resolution; once."""
    if _state.get("ready"):
        return
    from toscaparser import imports, tosca_template
    from toscaparser.common.exception import ExceptionCollector, URLException
    from toscaparser.utils import yamlparser

    original_load = yamlparser.load_yaml
    defs = local_defs()
    known = {os.path.abspath(p) for p in defs.values()}  # the SOL001 type files tacker ships: served offline

    def load_offline(path: str, a_file: bool = True) -> Any:
        if not a_file:
            ExceptionCollector.appendException(URLException(
                what=f'"{path}" {OFFLINE} (only the SOL001 v2 type files tacker ships are known '
                     f"locally)"))
            return None
        if _state["read"] is not None:
            _state["read"].append(os.path.abspath(path))
        text = (_state.get("overlay") or {}).get(os.path.abspath(path))
        if text is not None:  # the file's unsaved content (an editor's buffer): parsed as load_yaml parses
            return yaml.load(text, Loader=yamlparser.yaml_loader)
        if os.path.abspath(path) not in known:  # an import of the document's: as the call's policy allows
            try:
                return yaml.load(tosca_files.read(path, _state), Loader=yamlparser.yaml_loader)
            except confine.Refused as exc:
                ExceptionCollector.appendException(URLException(what=f'"{path}": {exc.why}'))
                return None
            except OSError:  # tosca-parser's own message
                return original_load(path, a_file)
        return original_load(path, a_file)

    yamlparser.load_yaml = load_offline
    imports.YAML_LOADER = load_offline
    tosca_template.YAML_LOADER = load_offline

    original_import = imports.ImportsLoader._load_import_template
    tosca_files.watch_extraction(_state)

    def load_import(self: Any, import_name: str, import_uri_def: Any) -> Any:
        return original_import(self, import_name, _local_import(import_uri_def, self.path, defs))

    # Every ImportsLoader goes through here: ToscaTemplate's, CSAR.validate()'s (which passes no
    # local_defs) and tacker's, so a SOL001 import resolves the same in a YAML file and in a package.
    imports.ImportsLoader._load_import_template = load_import
    _state["ready"] = True


def _local_import(import_uri_def: Any, importer: str | None, defs: dict[str, str]) -> Any:
    """The import with a SOL001 type file this engine serves offline replaced by its local copy: a known
    URL always; a bare ``etsi_nfv_sol001_*_types.yaml`` name only in a standalone VNFD that does not have
    the file beside it (in a package the file must be there, as tacker needs)."""
    if isinstance(import_uri_def, dict):
        if import_uri_def.get("repository") is not None:
            return import_uri_def
        name = import_uri_def.get("file")
    else:
        name = import_uri_def
    if not isinstance(name, str):
        return import_uri_def
    local = defs.get(name)
    if (local is None and _state["bare_sol001"] and name in SOL001_FILES and importer
            and not os.path.isfile(os.path.join(os.path.dirname(os.path.abspath(importer)), name))):
        local = os.path.join(sol001_dir(), name)
    if local is None:
        return import_uri_def
    return {**import_uri_def, "file": local} if isinstance(import_uri_def, dict) else local


def _tacker_setup() -> None:
    """tacker's config and offline SOL001 definitions; imported only for CSARs (about 2 s)."""
    if "tacker" in _state:
        return
    from tacker.common import csar_utils
    from tacker.conf import CONF
    from tacker.tosca import utils as toscautils

    CONF([], project="tacker", default_config_files=[])
    toscautils.tosca_tmpl_local_defs = dict  # the import hook of setup() resolves them, for tacker too
    _state["tacker"] = (csar_utils, CONF)


def _load(path: str) -> Any:
    text = (_state.get("overlay") or {}).get(os.path.abspath(path))
    try:
        if text is not None:
            return yaml.safe_load(text)
        with open(path, encoding="utf-8") as f:
            return yaml.safe_load(f)
    except (OSError, yaml.YAMLError, UnicodeDecodeError):
        return None


def _messages(exc: BaseException) -> list[str]:
    from toscaparser.common.exception import ExceptionCollector, ValidationError

    messages = [_clean(str(m)) for m in ExceptionCollector.getExceptionsReport(full=False)]
    if not isinstance(exc, ValidationError) or not messages:  # the parser itself stopped on a bad value
        crash = f"{type(exc).__name__}: {exc}".strip()
        messages.append(f"{STOPPED}{crash}); fix the errors reported and validate again"
                        if messages else crash)
    return messages


def _clean(message: str) -> str:
    message = message.strip()
    match = re.fullmatch(r"KeyError: '(.*)'", message, re.S)
    return f"KeyError: {match.group(1)}" if match else message


def _parse(path: str) -> tuple[list[str], list[str]]:
    """Run ToscaTemplate on a YAML file or a CSAR; return (error messages, files read)."""
    from toscaparser.common.exception import ExceptionCollector
    from toscaparser.tosca_template import ToscaTemplate

    _state["read"] = []
    errors: list[str] = []
    try:
        ToscaTemplate(path)
    except Exception as exc:  # ValidationError with every collected error, or a crash inside the parser
        errors = _messages(exc)
    finally:
        ExceptionCollector.stop()
        ExceptionCollector.clear()
    read, _state["read"] = _state["read"] or [], None
    return errors, read


def _csar_structure(path: str) -> tuple[list[str], str | None]:
    """tosca-parser's CSAR checks (TOSCA.meta, Entry-Definitions, artifacts exist); main template."""
    from toscaparser.common.exception import ExceptionCollector
    from toscaparser.prereq.csar import CSAR

    ExceptionCollector.start()
    main: str | None = None
    try:
        csar = CSAR(path)
        csar.validate()
        main = csar.main_template_file_name
        errors = [str(m).strip() for m in ExceptionCollector.getExceptionsReport(full=False)]
    except Exception as exc:
        errors = [f"{type(exc).__name__}: {exc}"]
    finally:
        ExceptionCollector.stop()
        ExceptionCollector.clear()
    return errors, main


def _tacker_load(path: str, workdir: str) -> list[str]:
    _tacker_setup()
    csar_utils, conf = _state["tacker"]
    from tacker import context

    store = os.path.join(workdir, "vnfpackages")
    os.makedirs(store, exist_ok=True)
    conf.set_override("vnf_package_csar_path", store, group="vnf_package")
    package_id = str(uuid.uuid4())
    try:
        csar_utils.load_csar_data(context.get_admin_context(), package_id, path)
    except Exception as exc:
        return [str(getattr(exc, "msg", None) or exc).strip() or type(exc).__name__]
    finally:
        csar_utils.delete_csar_data(package_id)
    return []


def _check_yaml(job: Job, findings: list[dict[str, Any]], deps: dict[str, None]) -> None:
    path = os.path.abspath(job["file"])
    _state["bare_sol001"] = True
    errors, read = _parse(path)
    for dep in read:
        if not dep.startswith(sol001_dir()):
            deps[dep] = None
    docs = [(f, _load(f)) for f in [path, *[d for d in deps if d != path]]
            if os.path.isfile(f) or f in _state["overlay"]]
    if any(OFFLINE in m for m in errors):  # the other errors follow from types it could not load
        unresolved = "; ".join(m for m in errors if OFFLINE in m)
        findings.append(finding(ENGINE_FAILURE.id, ["imports"], f"tosca-parser could not validate this document: "
                                f"{unresolved}", ENGINE))
        return
    located = [locate(message, docs or [(path, None)]) for message in errors]
    for message, (where, key_path) in zip(errors, crash_at_cause(errors, located), strict=True):
        findings.append(finding(TOSCA_PARSER.id, key_path, message, ENGINE,
                                file=None if where == path else where))
    if not errors and job.get("kind") == "vnfd":
        for where, key_path, message in tacker_lcm.check(docs):
            findings.append(finding(TACKER_LCM.id, key_path, message, TACKER, file=None if where == path else where))


def _zip_docs(path: str, main: str) -> dict[str, str]:
    """The YAML members of a CSAR as text, the main template first (the archive is small: E4004 ran)."""
    texts: dict[str, str] = {}
    with zipfile.ZipFile(path) as zf:
        names = [main, *sorted(n for n in zf.namelist() if n.endswith((".yaml", ".yml")) and n != main)]
        for name in names:
            if os.path.basename(name) in SOL001_FILES:
                continue
            try:
                texts[name] = zf.read(name).decode("utf-8")
            except (KeyError, UnicodeDecodeError):
                continue
    return texts


def _zip_finding(rule_id: str, message: str, engine: str, display: str, member: str | None,
                 key_path: list[Any], text: str | None) -> dict[str, Any]:
    """A finding inside a CSAR member: ``file`` is ``ARCHIVE!/MEMBER`` and the line is given directly."""
    result = finding(rule_id, [], message, engine, file=f"{display}!/{member}" if member else display)
    line, column = 1, 1
    if text is not None and key_path:
        from nfvcat.core import yamlpos

        with contextlib.suppress(Exception):  # a member that does not parse: tosca-parser said so already
            line, column = yamlpos.load(text)[1].locate(tuple(key_path))
    result.update(line=line, column=column)
    return result


def _vnf_package(path: str, docs: list[Any]) -> bool:
    """A VNF package (SOL004), to which tacker's onboarding checks apply: TOSCA.meta names an ETSI entry
    manifest, or a template has a node (or a substitution mapping) of ``tosca.nodes.nfv.VNF`` or of a
    type derived from it. Any other CSAR is a generic TOSCA package."""
    with zipfile.ZipFile(path) as zf:
        try:
            meta = zf.read("TOSCA-Metadata/TOSCA.meta").decode("utf-8", "replace")
        except KeyError:
            meta = ""
    if re.search(r"^ETSI-Entry-Manifest\s*:", meta, re.M):
        return True
    vnf_types = {VNF_TYPE}
    node_types = {name: body.get("derived_from") for data in docs if isinstance(data, dict)
                  for name, body in (data.get("node_types") or {}).items() if isinstance(body, dict)}
    while True:
        more = {name for name, parent in node_types.items() if parent in vnf_types} - vnf_types
        if not more:
            break
        vnf_types |= more
    for data in docs:
        topo = data.get("topology_template") if isinstance(data, dict) else None
        if not isinstance(topo, dict):
            continue
        nodes = topo.get("node_templates")
        used = [n.get("type") for n in nodes.values() if isinstance(n, dict)] if isinstance(nodes, dict) else []
        sub = topo.get("substitution_mappings")
        used.append(sub.get("node_type") if isinstance(sub, dict) else None)
        if vnf_types & {t for t in used if isinstance(t, str)}:
            return True
    return False


def _not_validated(messages: list[str], display: str, main: str | None) -> dict[str, Any]:
    unresolved = "; ".join(m for m in messages if OFFLINE in m)
    return _zip_finding(ENGINE_FAILURE.id, f"tosca-parser could not validate this package: {unresolved}", ENGINE,
                        display, main, [], None)


def _check_csar(job: Job, findings: list[dict[str, Any]], deps: dict[str, None]) -> None:
    src = os.path.abspath(job["file"])
    deps[src] = None
    display = display_path(src)  # relative to the runner's directory, as the runner shows paths
    _state["bare_sol001"] = False
    workdir = tempfile.mkdtemp(prefix="nfvcat-tosca-")
    old_tempdir = tempfile.tempdir
    tempfile.tempdir = workdir  # tosca-parser extracts CSARs to temp dirs it never removes
    try:
        path = src
        if not src.lower().endswith((".zip", ".csar")):
            path = os.path.join(workdir, "package.zip")
            shutil.copyfile(src, path)
        structure, main = _csar_structure(path)
        if any(OFFLINE in m for m in structure):  # its CSAR check loads the imports: not validated, not invalid
            findings.append(_not_validated(structure, display, main))
            return
        for message in structure:
            meta = re.search(r"TOSCA\.meta|Entry-Definitions", message)
            member = "TOSCA-Metadata/TOSCA.meta" if meta else None
            findings.append(_zip_finding(CSAR_STRUCTURE.id, _strip_tmp(message, workdir, display, src), ENGINE, display,
                                         member, [], None))
        if structure or not main:
            return
        errors, _read = _parse(path)
        if any(OFFLINE in m for m in errors):
            findings.append(_not_validated(errors, display, main))
            return
        texts = _zip_docs(path, main)
        docs = [(name, _safe_yaml(text)) for name, text in texts.items()]
        vnf = _vnf_package(path, [data for _, data in docs])
        places = crash_at_cause(errors, [locate(message, docs or [(main, None)]) for message in errors])
        for message, (member, key_path) in zip(errors, places, strict=True):
            shown = _strip_tmp(message, workdir, display, src)
            findings.append(_zip_finding(TOSCA_PARSER.id, shown if vnf else f"{shown} ({GENERIC_CSAR})",
                                         ENGINE, display, member, key_path, texts.get(member)))
        if errors or not vnf:
            return
        refused = _tacker_load(path, workdir)
        for message in refused:
            manifest, _text, _path, line = manifest_line(path, message)
            shown = _strip_tmp(message, workdir, display, src)
            if manifest is None:  # about the VNFD: at the key it names (a flavour, a level, an interface...)
                member, key_path = locate(message, docs)
                findings.append(_zip_finding(TACKER_CSAR.id, shown, TACKER, display, member, key_path,
                                             texts.get(member)))
                continue
            item = _zip_finding(TACKER_CSAR.id, shown, TACKER, display, manifest, [], None)
            item["line"] = line
            findings.append(item)
        for member, key_path, message in tacker_lcm.check(docs) if not refused else []:
            findings.append(_zip_finding(TACKER_LCM.id, message, TACKER, display, member, key_path, texts.get(member)))
    finally:
        tempfile.tempdir = old_tempdir
        shutil.rmtree(workdir, ignore_errors=True)


def _safe_yaml(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return None


def _strip_tmp(message: str, workdir: str, display: str, src: str = "") -> str:
    """Messages name tosca-parser's extraction directory or our copy: show the archive as named."""
    for original in (os.path.join(workdir, "package.zip"), src):
        if original:
            message = message.replace(original, display)
    return re.sub(re.escape(workdir) + r"/[^/\s\"']+/?", "", message)


def check(job: Job) -> Result:
    findings: list[dict[str, Any]] = []
    deps: dict[str, None] = {}
    _state["overlay"] = dict(job.get("overlay") or {})  # unsaved content by absolute path, read before the disk
    _state["policy"] = confine.Policy.from_json(job.get("confine"))  # what an import may read
    _state["extracted"] = []
    if job.get("kind") == "csar" or zipfile.is_zipfile(job["file"]):
        _check_csar(job, findings, deps)
    else:
        _check_yaml(job, findings, deps)
    return {"findings": findings, "deps": deps}


def main() -> None:
    serve(ENGINE, setup, check)


if __name__ == "__main__":
    main()
