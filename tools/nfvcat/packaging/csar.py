"""An ETSI SOL004 CSAR (a VNF package for Tacker) built from a vnfd entry (``nfvcat package``).

The package holds TOSCA-Metadata/TOSCA.meta, the entry's Definitions/ (plus the SOL001 type files the
VNFD imports by name, taken from the installed tacker wheel), UserData/ for Tacker's LCM, BaseHOT/
generated from the catalog (the entry's basehot.yaml: a top template over the catalog HOT template,
which is nested byte for byte, with the hook files it get_file's; see nfvcat.packaging.basehot),
Files/ChangeLog.txt, and a manifest with the SHA-256 of every other file. The zip is deterministic:
sorted members, fixed timestamps and permissions, so the same entry always gives the same bytes.
"""

from __future__ import annotations

import hashlib
import os
import re
import zipfile
from importlib import resources
from importlib import util as importlib_util
from pathlib import Path
from typing import Any

import yaml

from nfvcat.catalog import entries, releases
from nfvcat.core.errors import UserError
from nfvcat.packaging import basehot, signing
from nfvcat.packaging import package_images as images
from nfvcat.packaging.images import refs

PACKAGE_DIRS = ("Definitions", "BaseHOT", "UserData", "Scripts", "Files")
USER_DATA = "UserData/lcm_user_data.py"  # shipped in nfvcat/data/tacker/ for every entry
SOL001_FILES = ("etsi_nfv_sol001_common_types.yaml", "etsi_nfv_sol001_vnfd_types.yaml")
ZIP_TIME = (1980, 1, 1, 0, 0, 0)
CHANGELOG_MEMBER = "Files/ChangeLog.txt"


def sol001_source() -> Path:
    spec = importlib_util.find_spec("tacker")
    if spec is None or not spec.submodule_search_locations:
        raise UserError("tacker is not installed: the SOL001 type files are taken from its wheel")
    root = Path(next(iter(spec.submodule_search_locations)))
    return root / "tests" / "unit" / "vnfm" / "infra_drivers" / "openstack" / "data" / "etsi_nfv"


def read_entry(entry_dir: Path) -> dict[str, Any]:
    """The vnfd entry's metadata (entry.yaml through the one loader); other kinds are not packaged."""
    entry = entries.load(entry_dir)
    if entry.kind != "vnfd":
        raise UserError(f"{entry_dir}: only kind: vnfd entries are packaged as CSARs")
    entry.template  # noqa: B018 (raises a one-line error when the entry names no main file)
    return entry.meta


def members(entry_dir: Path, entry: dict[str, Any]) -> dict[str, bytes]:
    """Every file of the package except TOSCA.meta and the manifest, by member name."""
    files: dict[str, bytes] = {}
    for top in PACKAGE_DIRS:
        root = entry_dir / top
        for path in sorted(root.rglob("*")) if root.is_dir() else []:
            if path.is_symlink():
                raise UserError(f"{path}: symbolic links are not packaged")
            if path.is_file() and "__pycache__" not in path.parts and not path.name.endswith(".pyc"):
                files[path.relative_to(entry_dir).as_posix()] = path.read_bytes()
    generated = basehot.basehot_files(entry_dir, entry)
    if generated and any(name.startswith("BaseHOT/") for name in files):
        raise UserError(f"{entry_dir}: BaseHOT/ is generated from {basehot.MAPPING_FILE}; remove BaseHOT/")
    files.update(generated)
    template = entry["template"]
    if template not in files:
        raise UserError(f"{entry_dir}: the entry's template {template} is not under Definitions/")
    definitions = os.path.dirname(template)
    for name in SOL001_FILES:  # imported by name, as Tacker's own packages do: Tacker must find them inside
        member = f"{definitions}/{name}"
        if member not in files:
            files[member] = (sol001_source() / name).read_bytes()
    if USER_DATA not in files:  # one LCM user data for every package, unless an entry brings its own
        files[USER_DATA] = resources.files("nfvcat").joinpath("data", "tacker", USER_DATA).read_bytes()
    changelog = entry_dir / "CHANGELOG.md"
    if changelog.is_file():
        files[CHANGELOG_MEMBER] = changelog.read_bytes()
    return files


def release_date(entry_dir: Path, version: str, releasing: str | None = None) -> str:
    """The manifest's vnf_release_date_time of the entry at ``version``: the day the release record
    (RELEASES.yaml) says it was released; for a version the record does not hold, ``releasing`` (the day of the
    release being made, from ``nfvcat release``), else the date of its CHANGELOG heading (``## 1.0.0 -
    2026-11-22``). None of them is an error, never a made-up date."""
    root = refs.catalog_root_of(entry_dir / "entry.yaml")  # the catalog the entry is in, whatever the cwd
    rel = entry_dir.resolve().relative_to(root).as_posix() if root else None
    day = releases.release_date(root, rel, version) if root and rel else None
    if day is None and releasing:
        day = releasing
    if day is None:
        changelog = entry_dir / "CHANGELOG.md"
        text = changelog.read_text(encoding="utf-8") if changelog.is_file() else ""
        match = re.search(rf"^##\s*\[?{re.escape(version)}\]?\s*[-(]\s*(\d{{4}}-\d{{2}}-\d{{2}})", text, re.M)
        day = match.group(1) if match else None
    if day is None:
        raise UserError(f"{entry_dir}: no release date for version {version}: it is not in the release record "
                        f"(RELEASES.yaml) and CHANGELOG.md has no dated heading '## {version} - YYYY-MM-DD' (record "
                        "it with `nfvcat release`)")
    return f"{day}T00:00:00+00:00"


def vnf_properties(entry_dir: Path, template: str) -> dict[str, Any]:
    data = yaml.safe_load((entry_dir / template).read_text(encoding="utf-8")) or {}
    nodes = ((data.get("topology_template") or {}).get("node_templates") or {})
    for node in nodes.values():
        props = node.get("properties") if isinstance(node, dict) else None
        if isinstance(props, dict) and "descriptor_id" in props:
            return props
    raise UserError(f"{entry_dir / template}: no VNF node template with a descriptor_id "
                    f"(Tacker leaves such a package in CREATED)")


def manifest(entry_dir: Path, entry: dict[str, Any], files: dict[str, bytes],
             releasing: str | None = None) -> bytes:
    props = vnf_properties(entry_dir, entry["template"])
    lines = [
        "metadata:",
        f"vnf_provider_id: {props.get('provider', '')}",
        f"vnf_product_name: {props.get('product_name', '')}",
        f"vnf_release_date_time: {release_date(entry_dir, str(entry['version']), releasing)}",
        f"vnf_package_version: {entry['version']}",
        "",
    ]
    for name in sorted(files):
        digest = hashlib.sha256(files[name]).hexdigest()
        lines += [f"Source: {name}", "Algorithm: SHA-256", f"Hash: {digest}", ""]
    return "\n".join(lines).encode()


def tosca_meta(entry: dict[str, Any], manifest_name: str, files: dict[str, bytes]) -> bytes:
    lines = [
        "TOSCA-Meta-File-Version: 1.0",
        "CSAR-Version: 1.1",
        "Created-By: nfvcat",
        f"Entry-Definitions: {entry['template']}",
        f"ETSI-Entry-Manifest: {manifest_name}",
    ]
    if CHANGELOG_MEMBER in files:
        lines.append(f"ETSI-Entry-Change-Log: {CHANGELOG_MEMBER}")
    if signing.CERT_MEMBER in files:
        lines.append(f"ETSI-Entry-Certificate: {signing.CERT_MEMBER}")
    return ("\n".join(lines) + "\n").encode()


def write_zip(path: Path, files: dict[str, bytes]) -> None:
    tmp = path.with_name(path.name + ".part")
    with zipfile.ZipFile(tmp, "w") as zf:
        for name in sorted(files):
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            # images are compressed qcow2 already: stored, so Tacker and Glance read them without inflating
            stored = name.startswith(images.IMAGES_DIR + "/")
            info.compress_type = zipfile.ZIP_STORED if stored else zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            info.create_system = 3  # unix, so the permissions above are read back the same everywhere
            zf.writestr(info, files[name], compresslevel=9)
    os.replace(tmp, path)


def build(entry_dir: Path, output: Path, with_image: bool = False,
          signer: tuple[Any, Any] | None = None, releasing: str | None = None) -> Path:
    """Build DIR/NAME-VERSION.zip from the vnfd entry; return its path. ``with_image``: the entry's images
    inside (packaging.package_images); ``signer`` (key, certificate): the manifest signed with CMS
    (nfvcat.packaging.signing); ``releasing``: the day of the release being made (``release_date``)."""
    if not entry_dir.is_dir():
        raise UserError(f"{entry_dir}: not a directory")
    entry = read_entry(entry_dir)
    files = members(entry_dir, entry)
    if with_image:
        files.update(images.image_members(entry_dir, entry, files))
    manifest_name = f"{entry['name']}.mf"
    if signer is not None:  # the certificate is a file of the package: the manifest hashes it too
        files[signing.CERT_MEMBER] = signing.cert_pem(signer[1])
    files[manifest_name] = manifest(entry_dir, entry, files, releasing)
    if signer is not None:
        files[manifest_name] = signing.sign_manifest(files[manifest_name], *signer)
    files["TOSCA-Metadata/TOSCA.meta"] = tosca_meta(entry, manifest_name, files)
    output.mkdir(parents=True, exist_ok=True)
    path = output / f"{entry['name']}-{entry['version']}.zip"
    write_zip(path, files)
    return path
