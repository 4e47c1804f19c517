"""The images a released version names, on the cloud before its stack: ``instantiate NAME@VERSION`` and
``upgrade --to VERSION`` deploy that release's templates, whose image defaults are that release's Glance names
(``nfvcat-vrouter-1.1.0``), which ``onboard`` (today's versions only) never uploads.

Each image reference of the release's entry is resolved to that release of the image entry (``images/NAME`` at
that version from git, checked against the release record), and its file obtained as onboarding does: the
build of that release's lock, or a local rebuild when Debian's mirror moved on (the one rule of
``nfvcat.packaging.images.obtain``), or ``--image-dir``/``--image``; verified, uploaded with its provenance.
An image already in Glance under that name whose provenance names that lock's sha256 is used as it is.
The user is told which image is needed and where it came from before Heat or Tacker is called.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from nfvcat.cloud import onboarding
from nfvcat.cloud.connect import call


@dataclass
class Needed:
    name: str  # Glance name
    image: str  # image entry
    version: str
    source: str  # what the user is told: where the image came from
    action: str  # present, create, replace, build (dry run)


def _present(conn: Any, name: str, lock_sha: str) -> dict[str, Any] | None:
    """The active Glance image of that name that is this lock's image (or a rebuild verified against it)."""
    for i in call(conn.image, "GET", f"/images?name={name}", f"image {name}")["images"]:
        if i.get("status") == "active" and lock_sha and i.get("nfvcat_lock_sha256") == lock_sha:
            return dict(i)
    return None


def unused(b: Any, given: dict[str, Any], meta: dict[str, Any] | None) -> dict[str, str]:
    """Glance name -> why, of the images ``meta`` (an entry.yaml) names that no resource of bundle ``b`` can boot
    when the deployment gives the parameters ``given``: a name that is only the default of top-level parameters
    given another value, and of nested templates' parameters that every resource nesting them passes. A name found
    anywhere else (a resource, an output, another file) is needed."""
    docs = b.templates()
    others = [text for key, text in b.files.items() if isinstance(text, str) and key not in dict(docs)]
    passed: dict[str, set[str]] = {}  # nested template file -> the properties every resource nesting it passes
    for _, data in docs:
        for res in (data.get("resources") or {}).values():
            if isinstance(res, dict) and isinstance(res.get("type"), str) and res["type"] in b.files:
                props = set((res.get("properties") or {}) if isinstance(res.get("properties"), dict) else {})
                passed[res["type"]] = passed[res["type"]] & props if res["type"] in passed else props
    # each template but its parameters, as text: a name found there is used (dumped once, searched per image)
    others += [yaml.safe_dump({k: v for k, v in data.items() if k != "parameters"}) for _, data in docs]
    out = {}
    for name in [str(i.get("name")) for i in (meta or {}).get("images") or [] if isinstance(i, dict)]:
        overridden, elsewhere = [], False
        for key, data in docs:
            params = data.get("parameters") if isinstance(data.get("parameters"), dict) else {}
            for pname, spec in params.items():
                if isinstance(spec, dict) and spec.get("default") == name:
                    gone = (given.get(pname) not in (None, name)) if not key else pname in passed.get(key, set())
                    if gone:
                        overridden.append(pname)
                    elsewhere = elsewhere or not gone
        elsewhere = elsewhere or any(name in text for text in others)
        if overridden and not elsewhere:
            out[name] = f"not needed: the stack gives {', '.join(sorted(set(overridden)))} another value"
    return out


def ensure(conn: Any, root: Path, meta: dict[str, Any] | None, image_dir: Path | None,
           overrides: dict[str, Path], say: Any, dry_run: bool = False,
           skip: dict[str, str] | None = None) -> list[Needed]:
    """Every image ``meta`` (a released entry's entry.yaml) references, on the cloud (see the module doc), but
    those ``skip`` names (Glance name -> why: ``unused``)."""
    from nfvcat.catalog import history
    from nfvcat.packaging.images import refs

    out = []
    for ref in (meta or {}).get("images") or []:
        if not isinstance(ref, dict) or not ref.get("image") or not ref.get("name"):
            continue
        if str(ref["name"]) in (skip or {}):
            say(f"image {ref['name']}: {(skip or {})[str(ref['name'])]}")
            continue
        image, version = str(ref["image"]), str(ref.get("version"))
        tree = history.checkout(root, image, "image", version)
        where = "the working tree" if tree == root.resolve() else f"the release record's git tree ({tree.name[:12]})"
        img = refs.glance_image(tree, ref)
        lock_sha = onboarding.locked_sha256(img)
        have = _present(conn, str(ref["name"]), lock_sha)
        if have is not None:
            source = (f"in Glance already ({have.get('nfvcat_source')}, sha256 {have.get('nfvcat_sha256')}; "
                      f"the lock's {lock_sha})")
            out.append(Needed(str(ref["name"]), image, version, source, "present"))
            say(f"image {ref['name']}: images/{image} {version}, {source}")
            continue
        say(f"image {ref['name']}: images/{image} {version} (from {where}) is not in Glance: obtaining it")
        got = onboarding.prepare(img, tree, image_dir, overrides, dry_run, say)
        if isinstance(got, onboarding.Action):
            out.append(Needed(str(ref["name"]), image, version, got.detail, got.verb))
            continue
        _, f, digest = got
        source = {"--image": f"--image {f.path}", "--image-dir": f"--image-dir {f.path}",
                  "catalog": f"the build of its lock ({f.path})",
                  "rebuild": f"a local rebuild from Debian's mirror of today ({f.path}, its record verified)"}[f.origin]
        actions = onboarding.upload(conn, [got], dry_run, say)
        out.append(Needed(str(ref["name"]), image, version, f"{source}, sha256 {digest}", actions[0].verb))
        say(f"image {ref['name']}: images/{image} {version} from {source}, sha256 {digest}: {actions[0].verb}")
    return out


def ensure_vnf(conn: Any, root: Path, entry: Any, vnfd_id: str, image_dir: Path | None, overrides: dict[str, Path],
               say: Any) -> onboarding.Action:
    """A vnfd entry version (``entry``, e.g. a release's) ready for Tacker: the images it names (``ensure``, the
    Glance names its VNFD's sw_image_data gives), then its VNF package beside the others
    (``onboarding.ensure_package``). ``instantiate --via tacker NAME@VERSION`` and ``upgrade --via tacker``."""
    ensure(conn, root, entry.meta, image_dir, overrides, say)
    done = onboarding.ensure_package(conn, entry.dir, vnfd_id, say)
    say(f"VNF package {entry.name} {entry.meta['version']}: {done.verb} ({done.detail})")
    return done
