"""The release record: every catalog entry's released version, a digest of its files and its interface.

``RELEASES.yaml`` at the catalog's top level is committed with the catalog, so ``nfvcat versions`` can compare
the working tree with the last release in any clone, in CI and before a commit (git tags do not travel with a
submission; the record does). ``nfvcat release`` rewrites it; tags are a convenience made from it.

The interface of an entry is what its users depend on:

- HOT: parameters (type, default) and outputs;
- TOSCA service templates: topology inputs (type, default) and outputs;
- VNFD: its deployment flavours, each with its inputs (type, default);
- flavor: its extra specs;
- hook: its ``__NAME__`` placeholders.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from nfvcat.catalog import CATALOG_DIRS
from nfvcat.catalog.entries import Entry
from nfvcat.core import yamlpos

RECORD_NAME = "RELEASES.yaml"
FORMAT = 1
PLACEHOLDER = re.compile(r"__([A-Z][A-Z0-9_]*)__")
HEADER = (
    "# nfvcat release record: the released version of every catalog entry, the sha256 of each of its files\n"
    "# and its interface. Written by `nfvcat release`; `nfvcat versions` compares the working tree with it.\n"
    "# Do not edit by hand.\n"
)


class RecordError(Exception):
    """The record or git cannot answer (one line for the user)."""


@dataclass
class Snapshot:
    """An entry as the record holds it: the entry (its directory and entry.yaml, read as they are: a broken
    entry.yaml is recorded too), the sha256 of each of its files, its interface and its release day."""

    entry: Entry
    files: dict[str, str]  # path relative to the entry -> sha256
    interface: dict[str, Any] = field(default_factory=dict)
    released: str | None = None  # YYYY-MM-DD (UTC): the day a record first held this version

    @property
    def kind(self) -> str | None:
        kind = self.entry.meta.get("kind")
        return None if kind is None else str(kind)

    @property
    def version(self) -> str | None:
        return str(self.entry.meta["version"]) if "version" in self.entry.meta else None

    @property
    def digest(self) -> str:
        h = hashlib.sha256()
        for name in sorted(self.files):
            h.update(f"{name}\0{self.files[name]}\n".encode())
        return h.hexdigest()

    def as_record(self) -> dict[str, Any]:
        dated = {"released": self.released} if self.released else {}
        return {"kind": self.kind, "version": self.version, **dated, "digest": self.digest,
                "files": dict(sorted(self.files.items())), "interface": self.interface}


def load_yaml(raw: bytes) -> Any:
    try:
        return yamlpos.load(raw.decode("utf-8"))[0]
    except (UnicodeDecodeError, yamlpos.DocumentError):
        return None


def run_git(cwd: Path, *args: str) -> subprocess.CompletedProcess[bytes] | None:
    """``git ARGS`` in ``cwd``, its output captured; None when git is missing or hangs."""
    try:
        return subprocess.run(["git", *args], cwd=cwd, capture_output=True, check=False, timeout=60)
    except (FileNotFoundError, subprocess.TimeoutExpired):
        return None


def catalog_files(root: Path) -> list[str]:
    """The catalog's files relative to ``root``: git's view (tracked and untracked, minus ignored files) in a
    work tree, so build outputs never count; every non-hidden file in a plain copy."""
    proc = run_git(root, "ls-files", "--cached", "--others", "--exclude-standard", "-z", "--", *CATALOG_DIRS)
    if proc is not None and proc.returncode == 0:
        names = {p for p in proc.stdout.decode("utf-8", "replace").split("\0") if p}
        return sorted(p for p in names if (root / p).is_file())
    out: list[str] = []
    for d in CATALOG_DIRS:
        for dirpath, dirnames, filenames in os.walk(root / d):
            dirnames[:] = [n for n in dirnames if not n.startswith(".") and n != "__pycache__"]
            out.extend(os.path.relpath(os.path.join(dirpath, n), root).replace(os.sep, "/")
                       for n in filenames if not n.startswith("."))
    return sorted(out)


def group(paths: list[str]) -> dict[str, list[str]]:
    """Files grouped by the entry directory (deepest directory with an entry.yaml) they belong to."""
    entries = sorted({os.path.dirname(p) for p in paths if os.path.basename(p) == "entry.yaml"},
                     key=len, reverse=True)
    grouped: dict[str, list[str]] = {e: [] for e in entries}
    for p in paths:
        for e in entries:
            if p.startswith(e + "/"):
                grouped[e].append(p)
                break
    return grouped


def _typed(specs: Any) -> dict[str, dict[str, Any]]:
    """name -> {type, default?} of HOT parameters or TOSCA inputs."""
    out: dict[str, dict[str, Any]] = {}
    if not isinstance(specs, dict):
        return out
    for name, spec in specs.items():
        spec = spec if isinstance(spec, dict) else {}
        item: dict[str, Any] = {"type": None if spec.get("type") is None else str(spec.get("type"))}
        if "default" in spec:
            item["default"] = spec["default"]
        out[str(name)] = item
    return out


def _names(specs: Any) -> list[str]:
    return sorted(str(k) for k in specs) if isinstance(specs, dict) else []


def interface(kind: Any, main: Any, others: dict[str, Any], main_text: str = "") -> dict[str, Any]:
    """The interface of an entry of ``kind`` from its parsed main file (and, for a VNFD, its other files)."""
    if kind == "heat":
        data = main if isinstance(main, dict) else {}
        return {"parameters": _typed(data.get("parameters")), "outputs": _names(data.get("outputs"))}
    if kind == "tosca":
        topo = main.get("topology_template") if isinstance(main, dict) else None
        topo = topo if isinstance(topo, dict) else {}
        return {"parameters": _typed(topo.get("inputs")), "outputs": _names(topo.get("outputs"))}
    if kind == "vnfd":
        flavours: dict[str, Any] = {}
        for data in [main, *others.values()]:
            topo = data.get("topology_template") if isinstance(data, dict) else None
            subst = topo.get("substitution_mappings") if isinstance(topo, dict) else None
            props = subst.get("properties") if isinstance(subst, dict) else None
            if isinstance(props, dict) and "flavour_id" in props and isinstance(topo, dict):
                flavours[str(props["flavour_id"])] = {"parameters": _typed(topo.get("inputs"))}
        return {"flavours": dict(sorted(flavours.items()))}
    if kind == "flavor":
        specs = main.get("extra_specs") if isinstance(main, dict) else None
        return {"extra_specs": {str(k): str(v).lower() if isinstance(v, bool) else str(v)
                                for k, v in sorted(specs.items())} if isinstance(specs, dict) else {}}
    if kind == "hook":  # comment lines explain the token syntax; they hold no placeholder
        text = "\n".join(line for line in main_text.splitlines() if not line.lstrip().startswith("#"))
        return {"placeholders": sorted(set(PLACEHOLDER.findall(text)))}
    return {}


def snapshot(root: Path) -> dict[str, Snapshot]:
    """Every entry of the catalog under ``root`` as it is now (the working tree)."""
    root = root.resolve()
    entries: dict[str, Snapshot] = {}
    for entry_dir, paths in group(catalog_files(root)).items():
        raws = {p[len(entry_dir) + 1:]: (root / p).read_bytes() for p in paths}
        meta = load_yaml(raws.get("entry.yaml", b""))
        meta = meta if isinstance(meta, dict) else {}
        kind = meta.get("kind")
        template = meta.get("template") if isinstance(meta.get("template"), str) else None
        main_raw = raws.get(template, b"") if template else b""
        others = {}
        if kind == "vnfd":
            others = {n: load_yaml(r) for n, r in raws.items() if n != template and n.endswith((".yaml", ".yml"))
                      and n.startswith("Definitions/")}
        entries[entry_dir] = Snapshot(
            Entry(root / entry_dir, meta), {n: hashlib.sha256(r).hexdigest() for n, r in raws.items()},
            interface(kind, load_yaml(main_raw), others, main_raw.decode("utf-8", "replace")))
    return dict(sorted(entries.items()))


def record_path(root: Path) -> Path:
    return root / RECORD_NAME


def parse_record(raw: bytes, where: str) -> dict[str, Any]:
    """The ``entries`` mapping of a record (entry path -> kind, version, digest, files, interface)."""
    try:
        data = yaml.safe_load(raw.decode("utf-8"))
    except (UnicodeDecodeError, yaml.YAMLError) as exc:
        raise RecordError(f"{where}: not YAML ({exc.__class__.__name__})") from None
    if not isinstance(data, dict) or not isinstance(data.get("entries"), dict):
        raise RecordError(f"{where}: no 'entries' mapping (not a release record)")
    if data.get("format") != FORMAT:
        raise RecordError(f"{where}: record format {data.get('format')!r}, this nfvcat reads {FORMAT}")
    entries = data["entries"]
    for name, item in entries.items():
        if not isinstance(item, dict) or not isinstance(item.get("files"), dict):
            raise RecordError(f"{where}: entry {name!r} has no 'files' mapping")
    return {"release": data.get("release"), "entries": entries}


def read_record(root: Path, ref: str | None = None) -> dict[str, Any] | None:
    """The record in the working tree, or as committed at git ``ref``; None when there is none."""
    if ref is None:
        path = record_path(root)
        return parse_record(path.read_bytes(), str(path)) if path.is_file() else None
    top = run_git(root, "rev-parse", "--show-toplevel")
    if top is None or top.returncode != 0:
        raise RecordError(f"{root}: not a git work tree, so no record at {ref}")
    rel = os.path.relpath(record_path(root.resolve()), top.stdout.decode().strip()).replace(os.sep, "/")
    proc = run_git(root, "show", f"{ref}:{rel}")
    if proc is None or proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip().splitlines() if proc else []
        raise RecordError(f"no {rel} at {ref}: {msg[-1] if msg else 'git failed'}")
    return parse_record(proc.stdout, f"{ref}:{rel}")


def render_record(entries: dict[str, Snapshot], release: int) -> str:
    body = {"format": FORMAT, "release": release,
            "entries": {name: e.as_record() for name, e in sorted(entries.items())}}
    return HEADER + yaml.safe_dump(body, sort_keys=False, default_flow_style=False, width=120)


def release_date(root: Path, entry: str, version: str) -> str | None:
    """The day the record at ``root`` says ``entry`` (its directory relative to the root) was released at
    ``version``; None when the record holds another version, or no date."""
    try:
        record = read_record(root)
    except RecordError:
        return None
    item = (record or {}).get("entries", {}).get(entry)
    if not isinstance(item, dict) or str(item.get("version")) != version or not item.get("released"):
        return None
    return str(item["released"])


def record_history(root: Path) -> list[tuple[str, int, dict[str, Any]]]:
    """Every committed version of the record, oldest first: (commit, commit time, the parsed record); one this
    nfvcat cannot read is left out. Empty outside git. The releases are these commits, tags or not."""
    top = run_git(root, "rev-parse", "--show-toplevel")
    if top is None or top.returncode != 0:
        return []
    rel = os.path.relpath(record_path(root.resolve()), top.stdout.decode().strip()).replace(os.sep, "/")
    log = run_git(root, "log", "--reverse", "--format=%H %ct", "--", rel)
    out = []
    for line in log.stdout.decode().split("\n") if log is not None and log.returncode == 0 else []:
        commit, _, stamp = line.partition(" ")
        shown = run_git(root, "show", f"{commit}:{rel}") if stamp else None
        if shown is None or shown.returncode != 0:
            continue
        try:
            out.append((commit, int(stamp), parse_record(shown.stdout, f"{commit}:{rel}")))
        except RecordError:
            continue
    return out


def recorded_dates(root: Path) -> dict[tuple[str, str], str]:
    """(entry, version) -> the day (UTC) of the first commit whose record holds that version: the release date
    of a version recorded before records carried dates. Empty outside git."""
    found: dict[tuple[str, str], str] = {}
    for _, stamp, record in record_history(root):
        day = datetime.fromtimestamp(stamp, UTC).date().isoformat()
        for name, item in record["entries"].items():
            found.setdefault((str(name), str(item.get("version"))), day)
    return found


def date_entries(root: Path, entries: dict[str, Snapshot], today: str) -> None:
    """Set each entry's release date: the record's for a version it holds (from git's history of the record
    when it holds no date), else ``today``, the day of the release being recorded."""
    old = (read_record(root) or {}).get("entries", {})
    history: dict[tuple[str, str], str] | None = None
    for name, e in entries.items():
        item = old.get(name) if isinstance(old.get(name), dict) else {}
        if e.version is None:
            continue
        if str(item.get("version")) != e.version:
            e.released = today
        elif item.get("released"):
            e.released = str(item["released"])
        else:
            history = recorded_dates(root) if history is None else history
            e.released = history.get((name, e.version), today)


def write_record(root: Path, entries: dict[str, Snapshot], today: str | None = None) -> tuple[Path, bool, int]:
    """Write the record for ``entries``, each dated (``date_entries``; ``today`` default: UTC's); returns its
    path, whether it changed and the release number."""
    date_entries(root, entries, today or datetime.now(UTC).date().isoformat())
    path = record_path(root)
    old = read_record(root)
    old_text = path.read_text(encoding="utf-8") if path.is_file() else None
    number = int(old["release"]) if old and isinstance(old.get("release"), int) else 0
    text = render_record(entries, number)
    if text == old_text:
        return path, False, number
    text = render_record(entries, number + 1)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)
    return path, True, number + 1


CHANGELOG = "CHANGELOG.md"
UNRELEASED = "## [Unreleased]"


def date_entry_changelogs(root: Path, old: dict[str, Any] | None, today: str) -> dict[Path, str]:
    """Before a release is recorded: each entry whose version the record does not hold yet gets the heading of
    that version in its CHANGELOG.md dated with the release day (``## 2.1.0 - 2026-11-26``; a date written
    before the release is replaced), so the entry's CHANGELOG says what the record says. The files written, with
    their text before (to put back if the release is not recorded)."""
    recorded = (old or {}).get("entries", {})
    written: dict[Path, str] = {}
    for entry_dir, paths in group(catalog_files(root)).items():
        meta = load_yaml((root / entry_dir / "entry.yaml").read_bytes()) if f"{entry_dir}/entry.yaml" in paths else None
        version = str(meta["version"]) if isinstance(meta, dict) and "version" in meta else None
        item = recorded.get(entry_dir)
        if version is None or (isinstance(item, dict) and str(item.get("version")) == version):
            continue
        changelog = root / entry_dir / CHANGELOG
        if not changelog.is_file():
            continue
        text = changelog.read_text(encoding="utf-8")
        heading = re.compile(rf"^## {re.escape(version)}(?: - \d{{4}}-\d{{2}}-\d{{2}})?[ \t]*$", re.M)
        dated = heading.sub(f"## {version} - {today}", text, count=1)
        if dated != text:
            changelog.write_text(dated, encoding="utf-8")
            written[changelog] = text
    return written


def date_tool_changelog(root: Path, number: int, today: str) -> Path | None:
    """After release ``number`` is recorded: the [Unreleased] section of the CHANGELOG.md beside the record
    becomes ``## [Release N] - DAY`` under a new, empty [Unreleased]. None when there is no such section."""
    path = root / CHANGELOG
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    if f"\n{UNRELEASED}\n" not in text:
        return None
    path.write_text(text.replace(f"\n{UNRELEASED}\n", f"\n{UNRELEASED}\n\n## [Release {number}] - {today}\n", 1),
                    encoding="utf-8")
    return path


def tag_name(entry: str, version: str) -> str:
    """One git tag per released entry version: ``templates/heat/vnf-vrouter/v1.0.1``."""
    return f"{entry}/v{version}"


def tag(root: Path, entries: dict[str, Snapshot]) -> tuple[list[str], str | None]:
    """Tag HEAD with every entry version of the record that has no tag yet, when HEAD holds the record as it
    is in the working tree; returns the tags made and, when nothing could be tagged, why."""
    try:
        head = read_record(root, "HEAD") if _inside_git(root) else None
    except RecordError:
        head = None
    now = read_record(root)
    if head is None or now is None or head["entries"] != now["entries"]:
        return [], f"commit {RECORD_NAME} first, then run `nfvcat release` again to tag the release"
    made: list[str] = []
    for name, e in entries.items():
        if e.version is None:
            continue
        t = tag_name(name, e.version)
        exists = run_git(root, "rev-parse", "--verify", "--quiet", f"refs/tags/{t}")
        if exists is not None and exists.returncode == 0:
            continue
        proc = run_git(root, "tag", t, "HEAD")
        if proc is None or proc.returncode != 0:
            msg = proc.stderr.decode("utf-8", "replace").strip() if proc else "git failed"
            raise RecordError(f"git tag {t}: {msg}")
        made.append(t)
    return made, None


def _inside_git(root: Path) -> bool:
    proc = run_git(root, "rev-parse", "--is-inside-work-tree")
    return proc is not None and proc.returncode == 0
