"""Onboarding: each step compares the catalog with the cloud and returns the actions it takes (or would take)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nfvcat.catalog import entries
from nfvcat.catalog import flavors as catalog_flavors
from nfvcat.cloud import tacker_lcm
from nfvcat.cloud.connect import call, cloud_errors
from nfvcat.cloud.stacks import Stacks, bundle
from nfvcat.core.errors import EXIT_ENGINE, EXIT_FINDINGS, UserError
from nfvcat.core.waiting import TimedOut, until

FLAVOR_MICROVERSION = "2.86"  # Nova validates extra specs from 2.86 on
NETWORK_STACK = "nfvcat-provider-networks"
PACKAGES = "/vnfpkgm/v1/vnf_packages"  # Tacker's SOL005 VNF packages, on its endpoint (tacker_lcm.adapter)


@dataclass
class Action:
    kind: str  # image, flavor, networks, vnf-package
    name: str
    verb: str  # create, replace, update, build (dry run: not built yet), unchanged, skip
    detail: str = ""

    def as_dict(self) -> dict[str, str]:
        return {"kind": self.kind, "name": self.name, "action": self.verb, "detail": self.detail}


@dataclass
class Plan:
    actions: list[Action] = field(default_factory=list)

    def add(self, *a: Action) -> None:
        self.actions.extend(a)

    @property
    def changes(self) -> int:
        return sum(a.verb not in ("unchanged", "skip") for a in self.actions)


def file_hash(path: Path, algo: str = "sha256") -> str:
    h = hashlib.new(algo)
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


# ---- images -------------------------------------------------------------------------------------------------

class GlanceHash:
    """The file's hash as Glance computes os_hash_value, by the image's os_hash_algo (sha512 by default)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cache: dict[str, str] = {}

    def __call__(self, image: dict[str, Any]) -> str:
        algo = str(image.get("os_hash_algo") or "sha512")
        if algo not in self.cache:
            self.cache[algo] = file_hash(self.path, algo)
        return self.cache[algo]


@dataclass
class ImageFile:
    """The file onboarding uploads for one catalog image, and where it came from."""
    path: Path
    origin: str  # --image, --image-dir, catalog (the committed lock's build), rebuild (a local rebuild)
    built: Any = None  # nfvcat.packaging.images.build.Built, for a build

    @property
    def source(self) -> str:
        return "rebuild" if self.origin == "rebuild" else "catalog"


def image_file(img: dict[str, Any], root: Path, image_dir: Path | None, overrides: dict[str, Path],
               say: Any = None) -> ImageFile | None:
    """The file to upload for a catalog image: ``--image NAME=FILE`` (NAME the Glance name or the image
    entry), else ``--image-dir``/NAME-VERSION.qcow2, else the image by the one rule of the lab and the cloud
    (``nfvcat.packaging.images.obtain``: the build of its lock, or a local rebuild when Debian's mirror moved),
    built now (minutes) when the cache has none and ``say`` is given (None: look only, as a dry run does)."""
    for key in (str(img["name"]), str(img.get("image"))):
        if key in overrides:
            return ImageFile(overrides[key], "--image")
    if image_dir is not None:
        cand = image_dir / str(img.get("file") or f"{img['name']}.qcow2")
        return ImageFile(cand, "--image-dir") if cand.is_file() else None
    if not img.get("image"):
        return None
    from nfvcat.packaging.images import build, obtain, recipe

    hit = build.cached(recipe.load(str(img["image"]), root))
    if hit is not None or say is None or not locked_sha256(img):  # no lock: nothing to match
        return ImageFile(hit.disk, "catalog", hit) if hit is not None else None
    say(f"image {img['name']}: no cached build of images/{img['image']} {img.get('version')}")
    built = obtain.image(str(img["image"]), say, root)
    return ImageFile(built.disk, built.source, built)


def locked_sha256(img: dict[str, Any]) -> str:
    """The sha256 of a catalog image reference, generated from its image's lock ("" when never built)."""
    return str((img.get("checksum") or {}).get("value") or "").lower()


def verified(img: dict[str, Any], path: Path | ImageFile) -> str:
    """The file's sha256 when it is the catalog image's: its lock's sha256, or, for a local rebuild (Debian's
    mirror moved on), the sha256 its own build record holds; anything else is refused before a byte is
    uploaded. There is no way around it: an image that was never built has no checksum to trust."""
    f = path if isinstance(path, ImageFile) else ImageFile(path, "--image")
    name = str(img["name"])
    want = locked_sha256(img)
    where = f"images/{img.get('image')} {img.get('version')}"
    if not want:
        raise UserError(f"image {name}: {where} has no lock, so no sha256 to verify {f.path} against: run "
                        f"`nfvcat image build {img.get('image')}`", EXIT_FINDINGS)
    digest = file_hash(f.path, "sha256")
    if digest == want:
        return digest
    if f.built is not None and f.origin == "rebuild":
        from nfvcat.packaging.images import obtain

        why = obtain.verify(f.built, f.path, digest)
        if why is None:
            return digest
        raise UserError(f"image {name}: {f.path} has sha256 {digest}, {where} is {want}, and as a local rebuild: "
                        f"{why}: not uploaded", EXIT_FINDINGS)
    raise UserError(f"image {name}: {f.path} has sha256 {digest}, {where} is {want}: not uploaded", EXIT_FINDINGS)


GLANCE_VALUE = 255  # Glance keeps a property value of at most 255 characters


def provenance(img: dict[str, Any], f: ImageFile, digest: str) -> dict[str, str]:
    """The Glance properties that say what an uploaded image is: its entry and version, the committed lock's
    sha256, the sha256 uploaded, whether it is the catalog's image or a local rebuild, and which packages
    differ from the lock (``none`` for the catalog's)."""
    changes = list(f.built.changes) if f.source == "rebuild" and f.built is not None else []
    differs = "none"
    if changes:
        differs = ""
        for n, c in enumerate(changes):
            more = f"; and {len(changes) - n} more"
            if len(differs) + len(c) + 2 + len(more) > GLANCE_VALUE:
                differs += more
                break
            differs += ("; " if differs else "") + c
    return {"nfvcat_entry": f"images/{img.get('image')}", "nfvcat_version": str(img.get("version")),
            "nfvcat_lock_sha256": locked_sha256(img), "nfvcat_sha256": digest, "nfvcat_source": f.source,
            "nfvcat_from": f.origin, "nfvcat_differs": differs}


def images(conn: Any, root: Path, image_dir: Path | None, overrides: dict[str, Path], dry_run: bool,
           say: Any) -> list[Action]:
    from nfvcat.packaging.images import refs

    out = []
    known = refs.glance_images(root)
    names = {str(i["name"]) for i in known} | {str(i.get("image")) for i in known}
    unknown = sorted(set(overrides) - names)
    if unknown:
        raise UserError(f"--image {unknown[0]}=...: no catalog image of that name (known: {', '.join(sorted(names))})")
    files: list[tuple[dict[str, Any], ImageFile, str]] = []
    for img in known:  # every file is found (or built) and verified before anything is uploaded
        got = prepare(img, root, image_dir, overrides, dry_run, say)
        if isinstance(got, Action):
            out.append(got)
        else:
            files.append(got)
    return out + upload(conn, files, dry_run, say)


def prepare(img: dict[str, Any], root: Path, image_dir: Path | None, overrides: dict[str, Path], dry_run: bool,
            say: Any) -> tuple[dict[str, Any], ImageFile, str] | Action:
    """The verified file of one catalog image (found, or built: ``image_file``), or the dry run's "build"."""
    f = image_file(img, root, image_dir, overrides, None if dry_run else say)
    if f is None and dry_run and image_dir is None and locked_sha256(img):
        return Action("image", str(img["name"]), "build", f"images/{img.get('image')} {img.get('version')} is not "
                      "built here: it is built (minutes; from what Debian's mirror serves when it no longer serves "
                      "the lock), verified and uploaded")
    if f is None:
        hint = f"no {img.get('file')} in {image_dir}" if image_dir else "not built"
        raise UserError(f"image {img['name']}: {hint}: run `nfvcat image build {img.get('image')}` or pass "
                        f"--image {img['name']}=FILE", EXIT_FINDINGS)
    digest = verified(img, f)
    if f.origin in ("--image", "--image-dir"):
        say(f"image {img['name']}: {f.path} ({f.origin}) is the released file of images/{img.get('image')} "
            f"{img.get('version')} (sha256 {digest}, the lock's)")
    return img, f, digest


def upload(conn: Any, files: list[tuple[dict[str, Any], ImageFile, str]], dry_run: bool, say: Any) -> list[Action]:
    """Each verified file into Glance under its catalog name, with its provenance; idempotent."""
    out = []
    for img, f, file_sha in files:
        path = f.path
        name = str(img["name"])
        note = " (verified)" if f.source == "catalog" else (
            f" (local rebuild, verified against its build record; the lock's sha256 is {locked_sha256(img)[:12]}: "
            + "; ".join(f.built.changes) + ")")
        glance_hash = GlanceHash(path)
        props = {k: str(v) for k, v in (img.get("properties") or {}).items()} | provenance(img, f, file_sha)
        existing = call(conn.image, "GET", f"/images?name={name}", f"image {name}")["images"]
        same = [i for i in existing if i["status"] == "active" and i.get("os_hash_value") == glance_hash(i)]
        if same:
            cur = same[0]
            diff = {k: v for k, v in props.items() if str(cur.get(k, "")).lower() != v.lower()}
            if diff:
                out.append(Action("image", name, "update", f"properties {sorted(diff)}"))
                if not dry_run:
                    call(conn.image, "PATCH", f"/images/{cur['id']}", f"image {name} update",
                         json=[{"op": "add", "path": f"/{k}", "value": v} for k, v in diff.items()],
                         headers={"Content-Type": "application/openstack-images-v2.1-json-patch"})
            else:
                out.append(Action("image", name, "unchanged", f"sha256 {file_sha[:12]}"))
            continue
        verb = "replace" if existing else "create"
        out.append(Action("image", name, verb, f"upload {path.name} sha256 {file_sha[:12]}{note}"))
        if dry_run:
            continue
        say(f"uploading image {name} ({path.stat().st_size} bytes)")
        before = {i["id"] for i in existing}
        try:
            new = conn.image.create_image(
                name=name, filename=str(path), disk_format=img.get("disk_format", "qcow2"),
                container_format=img.get("container_format", "bare"), min_disk=int(img.get("min_disk") or 0),
                min_ram=int(img.get("min_ram") or 0), visibility="public", wait=True, allow_duplicates=True,
                **props)
        except Exception:  # nothing half-made is left: the image record of a refused upload goes too
            for i in conn.image.images(name=name):
                if i.id not in before:
                    conn.image.delete_image(i, ignore_missing=True)
            raise
        if new.hash_value and new.hash_value != glance_hash({"os_hash_algo": new.hash_algo}):
            conn.image.delete_image(new, ignore_missing=True)
            raise UserError(f"image {name}: Glance computed {new.hash_algo} {new.hash_value}, which is not the "
                            f"file's", EXIT_FINDINGS)
        for old in existing:
            call(conn.image, "DELETE", f"/images/{old['id']}", f"image {name} delete", ok=(204, 404))
    return out


# ---- flavors ------------------------------------------------------------------------------------------------

def _flavor_fields(f: dict[str, Any]) -> dict[str, Any]:
    return {"vcpus": int(f["vcpus"]), "ram": int(f["ram"]), "disk": int(f.get("disk", 0)),
            "is_public": bool(f.get("is_public", True)), "description": f.get("description")}


def flavors(conn: Any, root: Path, dry_run: bool, only: set[str] | None = None) -> list[Action]:
    api = conn.compute
    existing = {f["name"]: f for f in call(api, "GET", "/flavors/detail?is_public=None", "flavor list",
                                           microversion=FLAVOR_MICROVERSION)["flavors"]}
    out = []
    for flavor in catalog_flavors.all_flavors(root):
        name = flavor.name
        if only is not None and name not in only:
            continue
        want = _flavor_fields(flavor.data)
        specs = flavor.specs()
        cur = existing.get(name)
        if cur is not None:
            have = {"vcpus": cur["vcpus"], "ram": cur["ram"], "disk": cur["disk"],
                    "is_public": cur["os-flavor-access:is_public"], "description": cur.get("description")}
            if have == want:
                have_specs = {str(k): str(v) for k, v in (cur.get("extra_specs") or {}).items()}
                add = {k: v for k, v in specs.items() if have_specs.get(k) != v}
                drop = sorted(set(have_specs) - set(specs))
                if not add and not drop:
                    out.append(Action("flavor", name, "unchanged"))
                    continue
                out.append(Action("flavor", name, "update", "extra specs: " + ", ".join(
                    [f"set {k}={v}" for k, v in sorted(add.items())] + [f"unset {k}" for k in drop])))
                if not dry_run:
                    if add:
                        call(api, "POST", f"/flavors/{cur['id']}/os-extra_specs", f"flavor {name} extra specs",
                             json={"extra_specs": add}, microversion=FLAVOR_MICROVERSION)
                    for k in drop:
                        call(api, "DELETE", f"/flavors/{cur['id']}/os-extra_specs/{k}", f"flavor {name}",
                             microversion=FLAVOR_MICROVERSION)
                continue
            changed = sorted(k for k in want if have.get(k) != want[k])
            out.append(Action("flavor", name, "replace", f"fields differ: {', '.join(changed)}"))
            if not dry_run:
                call(api, "DELETE", f"/flavors/{cur['id']}", f"flavor {name} delete")
        else:
            out.append(Action("flavor", name, "create", f"{want['vcpus']} vCPU, {want['ram']} MiB, "
                                                        f"{len(specs)} extra specs"))
        if dry_run:
            continue
        body = {"flavor": {"name": name, **{k: v for k, v in want.items() if k != "is_public"},
                           "os-flavor-access:is_public": want["is_public"]}}
        new = call(api, "POST", "/flavors", f"flavor {name} create", json=body,
                   microversion=FLAVOR_MICROVERSION)["flavor"]
        if specs:
            try:
                call(api, "POST", f"/flavors/{new['id']}/os-extra_specs", f"flavor {name} extra specs",
                     json={"extra_specs": specs}, microversion=FLAVOR_MICROVERSION)
            except UserError:
                call(api, "DELETE", f"/flavors/{new['id']}", f"flavor {name} delete")
                raise
    return out


# ---- provider networks (the net-provider entry as a stack) ----------------------------------------------------

def networks(conn: Any, root: Path, dry_run: bool, say: Any, timeout: float) -> list[Action]:
    entry = entries.find(root, "net-provider", "heat")
    env = entry.example("default")
    b = bundle(entry.template, [env] if env else [])
    digest = hashlib.sha256(repr((b.template, b.files, b.environment)).encode()).hexdigest()[:16]
    tag = f"nfvcat-sha-{digest}"
    stacks = Stacks(conn, say)
    cur = stacks.find(NETWORK_STACK)
    version = entry.version
    if cur is not None:
        full = stacks.get(NETWORK_STACK, cur["id"])
        if tag in (full.get("tags") or []) and full["stack_status"] in ("CREATE_COMPLETE", "UPDATE_COMPLETE"):
            return [Action("networks", NETWORK_STACK, "unchanged", f"net-provider {version}")]
        verb = "replace" if full["stack_status"].endswith("FAILED") else "update"
        act = Action("networks", NETWORK_STACK, verb, f"net-provider {version} ({full['stack_status']})")
        if dry_run:
            return [act]
        if verb == "replace":
            stacks.delete(NETWORK_STACK, cur["id"])
            stacks.wait(NETWORK_STACK, cur["id"], "DELETE", timeout)
        else:
            stacks.update(NETWORK_STACK, cur["id"], b, {}, int(timeout // 60) + 1, tags=[tag])
            stacks.wait(NETWORK_STACK, cur["id"], "UPDATE", timeout)
            return [act]
    else:
        act = Action("networks", NETWORK_STACK, "create", f"net-provider {version}")
        if dry_run:
            return [act]
    sid = stacks.create(NETWORK_STACK, b, {}, int(timeout // 60) + 1, tags=[tag])
    stacks.wait(NETWORK_STACK, sid, "CREATE", timeout)
    return [act]


# ---- Tacker VNF packages --------------------------------------------------------------------------------------

def vnf_packages(conn: Any, root: Path, dry_run: bool, say: Any, timeout: float = 60) -> list[Action]:
    """Every vnfd/ entry as a Tacker VNF package (SOL005): built by `nfvcat package`, created, uploaded, waited
    for until ONBOARDED. A package whose userDefinedData carries the same CSAR hash is unchanged; an older one is
    replaced, unless a VNF instance uses it (``usageState`` IN_USE: Tacker refuses its deletion), then it stays
    beside the new one. A new build with the VNFD id of a package in use cannot be onboarded (Tacker takes a VNFD
    id once): that is refused before anything changes."""
    if not tacker_lcm.available(conn):
        return [Action("vnf-package", "*", "skip", "the cloud has no nfv-orchestration (Tacker) endpoint")]
    import tempfile

    from nfvcat.packaging.csar import build, vnf_properties

    existing = _tacker(conn, "GET", f"{PACKAGES}?all_fields", "VNF package list")  # userDefinedData is not default
    out = []
    with tempfile.TemporaryDirectory(prefix="nfvcat-csar-") as tmp:
        todo: list[tuple[str, Path, str, list[dict[str, Any]]]] = []
        for vnfd in entries.entries(root, "vnfd"):
            entry = vnfd.dir
            csar = build(entry, Path(tmp))
            digest = file_hash(csar)
            mine = [p for p in existing if (p.get("userDefinedData") or {}).get("nfvcat-entry") == entry.name]
            same = [p for p in mine if p["userDefinedData"].get("nfvcat-sha256") == digest and
                    p.get("onboardingState") == "ONBOARDED"]
            if same:
                out.append(Action("vnf-package", entry.name, "unchanged", f"{csar.name} sha256 {digest[:12]}"))
                continue
            in_use = [p for p in mine if p.get("usageState") == "IN_USE"]
            new_id = str(vnf_properties(entry, str(vnfd.meta.get("template"))).get("descriptor_id"))
            clash = [p for p in in_use if p.get("vnfdId") == new_id]
            if clash:
                raise UserError(
                    f"{entry.name}: VNF package {clash[0]['id']} (vnfdId {new_id}) is in use by a VNF instance, and "
                    f"the new build of {csar.name} has the same VNFD id, which Tacker takes once: upgrade the "
                    "instance to another version (`nfvcat upgrade --via tacker`) or terminate it first; nothing "
                    "was changed", EXIT_FINDINGS)
            kept = "".join(f"; package {p['id']} (vnfdId {p.get('vnfdId')}) kept: in use by a VNF instance"
                           for p in in_use)
            out.append(Action("vnf-package", entry.name, "replace" if len(mine) > len(in_use) else "create",
                              f"{csar.name} sha256 {digest[:12]}{kept}"))
            todo.append((entry.name, csar, digest, [p for p in mine if p not in in_use]))
        if not dry_run:
            for name, csar, digest, replaced in todo:
                for old in replaced:  # Tacker refuses a second package with the same VNFD id
                    _delete_package(conn, old["id"])
                _upload(conn, name, csar, digest, say, timeout)
    return out


def _upload(conn: Any, name: str, csar: Path, digest: str, say: Any, timeout: float) -> None:
    """Create the package, upload the CSAR, wait for ONBOARDED (else delete it and fail)."""
    pkg = _tacker(conn, "POST", PACKAGES, f"VNF package {name}",
                  json={"userDefinedData": {"nfvcat-entry": name, "nfvcat-sha256": digest}})
    _tacker(conn, "PUT", f"{PACKAGES}/{pkg['id']}/package_content", f"upload {csar.name}",
            data=csar.read_bytes(), headers={"Content-Type": "application/zip"})
    say(f"uploaded {csar.name}, waiting for ONBOARDED")
    url, what = f"{PACKAGES}/{pkg['id']}", f"VNF package {name}"
    try:
        state = until(lambda: _tacker(conn, "GET", url, what),
                      lambda s: s.get("onboardingState") in ("ONBOARDED", "ERROR"), timeout=timeout,
                      what=what, state=lambda s: s.get("onboardingState"), first=0.5, most=5.0)
    except TimedOut as exc:
        state = exc.last or {}
    if state.get("onboardingState") != "ONBOARDED":
        _delete_package(conn, pkg["id"])
        raise UserError(f"VNF package {name} not ONBOARDED after {timeout:.0f} s "
                        f"({state.get('onboardingState')}); see Tacker's conductor log", EXIT_FINDINGS)


def ensure_package(conn: Any, entry_dir: Path, vnfd_id: str, say: Any, timeout: float = 60) -> Action:
    """The package of one entry version (``entry_dir``, e.g. a release's) onboarded beside the others: created
    unless a package of its VNFD id is there already. Unlike ``vnf_packages`` no other package is replaced: a
    VNF instance still runs the old one (Tacker refuses to delete a package in use)."""
    import tempfile

    from nfvcat.packaging.csar import build

    found = _tacker(conn, "GET", f"{PACKAGES}?filter=(eq,vnfdId,{vnfd_id})", "VNF package list")
    if any(p.get("onboardingState") == "ONBOARDED" for p in found):
        return Action("vnf-package", entry_dir.name, "unchanged", f"vnfdId {vnfd_id} onboarded")
    for p in found:  # a package of that VNFD id a killed run left CREATED or in ERROR
        _delete_package(conn, p["id"])
    with tempfile.TemporaryDirectory(prefix="nfvcat-csar-") as tmp:
        csar = build(entry_dir, Path(tmp))
        _upload(conn, entry_dir.name, csar, file_hash(csar), say, timeout)
    return Action("vnf-package", entry_dir.name, "create", f"vnfdId {vnfd_id}")


def _tacker(conn: Any, method: str, url: str, what: str, **kwargs: Any) -> Any:
    with cloud_errors(what):
        resp = tacker_lcm.adapter(conn).request(url, method, raise_exc=False, **kwargs)
    if resp.status_code >= 400:
        raise UserError(f"{what}: HTTP {resp.status_code}: {resp.text[:300]}", EXIT_ENGINE)
    try:
        return resp.json() if resp.content else {}
    except ValueError:
        return {}


def _delete_package(conn: Any, pid: str) -> None:
    try:  # an ONBOARDED package must be disabled first; one that is not cannot be
        _tacker(conn, "PATCH", f"{PACKAGES}/{pid}", "VNF package disable", json={"operationalState": "DISABLED"})
    except UserError:
        pass
    _tacker(conn, "DELETE", f"{PACKAGES}/{pid}", "VNF package delete")
