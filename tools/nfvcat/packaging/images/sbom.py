"""The SBOM of an image, made from its lock: what a release ships beside the image and the catalog site links."""

from __future__ import annotations

import json
from typing import Any

from nfvcat.packaging.images import recipe


def sbom(r: recipe.Recipe, lock: recipe.Lock) -> str:
    """A CycloneDX 1.6 JSON SBOM of the image: the image as the subject, one component per Debian package of
    the lock (purl pkg:deb/debian/NAME@VERSION?arch=...&distro=debian-SUITE), the image's sha256."""
    from cyclonedx.model import HashAlgorithm, HashType
    from cyclonedx.model.bom import Bom
    from cyclonedx.model.component import Component, ComponentType
    from cyclonedx.output.json import JsonV1Dot6
    from packageurl import PackageURL

    subject = Component(type=ComponentType.OPERATING_SYSTEM, name=f"nfvcat-{r.name}", version=r.version,
                        bom_ref=f"image:{r.name}@{r.version}",
                        hashes=[HashType(alg=HashAlgorithm.SHA_256, content=lock.sha256)],
                        description=f"nfvcat VNF image images/{r.name} (Debian {r.suite}), qcow2")
    bom = Bom()
    bom.metadata.component = subject
    for name, version in sorted(lock.packages.items()):
        pkg, _, arch = name.partition(":")
        purl = PackageURL("deb", "debian", pkg, version, qualifiers={"arch": arch or "amd64",
                                                                     "distro": f"debian-{r.suite}"})
        comp = Component(type=ComponentType.LIBRARY, name=pkg, version=version, purl=purl,
                         bom_ref=f"deb:{name}@{version}")
        bom.components.add(comp)
        bom.register_dependency(subject, [comp])
    data: dict[str, Any] = json.loads(JsonV1Dot6(bom).output_as_string())
    data.pop("serialNumber", None)  # random per run: the SBOM of a lock is the same file every time
    data.get("metadata", {}).pop("timestamp", None)
    return json.dumps(data, indent=1, sort_keys=True) + "\n"
