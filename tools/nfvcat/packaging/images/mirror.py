"""What Debian's mirror serves now, against an image lock: does it still serve every locked package version, and
which packages have newer versions (a security update from the ``-security`` suite, a stable update from
``-updates``, or a point release of the suite itself).

The recipe's ``deb URL SUITE COMPONENT...`` lines are read as apt reads them: each suite's ``Packages.xz``
index (amd64), under a deadline. Debian keeps one version of a package per suite, so once an update is
published the version it replaces is gone from the mirror and a build installs the new one. Versions are
compared by ``dpkg --compare-versions``, Debian's own rule.
"""

from __future__ import annotations

import lzma
import subprocess
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import Any

from nfvcat.core.errors import EXIT_ENGINE, UserError
from nfvcat.packaging.images.recipe import Lock, Recipe

TIMEOUT = (10, 120)  # connect, read: every mirror request has a deadline
MAX_INDEX = 64 << 20  # bytes of one Packages.xz: an answer larger than any Debian index is refused
ARCH = "amd64"
KINDS = {"security": "security update", "stable-update": "stable update", "point-release": "point release"}


class MirrorError(UserError):
    def __init__(self, message: str) -> None:
        super().__init__(message, EXIT_ENGINE)


@dataclass(frozen=True)
class Suite:
    url: str
    suite: str
    components: tuple[str, ...]

    @property
    def kind(self) -> str:
        """What a newer version from this suite is: a security update, a stable update or a point release."""
        if self.suite.endswith("-security"):
            return "security"
        if self.suite.endswith(("-updates", "-proposed-updates")):
            return "stable-update"
        return "point-release"


@dataclass
class Newer:
    package: str
    locked: str
    newest: str
    suite: str
    kind: str  # security, stable-update, point-release

    def as_dict(self) -> dict[str, str]:
        return {"package": self.package, "locked": self.locked, "newest": self.newest, "suite": self.suite,
                "kind": self.kind}

    def text(self) -> str:
        return f"{self.package} {self.locked} -> {self.newest} ({KINDS[self.kind]}, {self.suite})"


@dataclass
class Status:
    """The mirror against one lock. ``serves_lock``: a build from the mirror installs exactly the lock's versions
    (so it reproduces the lock's sha256); ``missing``: locked versions no suite serves any more; ``newer``:
    packages of which a suite serves a newer version than the lock's (apt installs the newest, so a build
    does too)."""
    serves_lock: bool
    missing: list[tuple[str, str]] = field(default_factory=list)
    newer: list[Newer] = field(default_factory=list)
    newest: dict[str, str] = field(default_factory=dict)  # package -> the version a build installs now

    def as_dict(self) -> dict[str, Any]:
        return {"serves_lock": self.serves_lock,
                "missing": [{"package": p, "locked": v} for p, v in self.missing],
                "newer": [n.as_dict() for n in self.newer]}


def suites(recipe: Recipe) -> list[Suite]:
    out = []
    for line in recipe.mirrors:
        words = line.split()
        if len(words) < 4 or words[0] != "deb" or words[2].startswith("["):
            raise MirrorError(f"images/{recipe.name}: mirror line {line!r} is not 'deb URL SUITE COMPONENT...'")
        out.append(Suite(words[1].rstrip("/"), words[2], tuple(words[3:])))
    return out


def parse_index(text: str, wanted: set[str] | None = None) -> dict[str, str]:
    """``Packages`` index text -> {package (``name:arch`` unless amd64/all, as a lock names it): version}."""
    out: dict[str, str] = {}
    for stanza in text.split("\n\n"):
        name = version = arch = ""
        for line in stanza.splitlines():
            if line.startswith("Package: "):
                name = line[9:].strip()
            elif line.startswith("Version: "):
                version = line[9:].strip()
            elif line.startswith("Architecture: "):
                arch = line[14:].strip()
        if not name or not version:
            continue
        key = name if arch in (ARCH, "all", "") else f"{name}:{arch}"
        if wanted is not None and key not in wanted:
            continue
        if key not in out or compare(version, out[key]) > 0:
            out[key] = version
    return out


def _fetch(url: str) -> bytes:
    import requests

    try:
        with requests.get(url, timeout=TIMEOUT, stream=True) as resp:
            if resp.status_code != 200:
                raise MirrorError(f"{url}: HTTP {resp.status_code}")
            data = bytearray()
            for chunk in resp.iter_content(1 << 20):
                data += chunk
                if len(data) > MAX_INDEX:
                    raise MirrorError(f"{url}: larger than {MAX_INDEX} bytes, not a Packages index")
            return bytes(data)
    except requests.RequestException as exc:
        raise MirrorError(f"{url}: {exc.__class__.__name__}: the mirror could not be read") from None


_SERVED: dict[tuple[Suite, frozenset[str]], dict[str, str]] = {}


def served(recipe: Recipe, wanted: set[str]) -> dict[Suite, dict[str, str]]:
    """Per suite of the recipe, the version it serves of each package in ``wanted`` (read once per process)."""
    out: dict[Suite, dict[str, str]] = {}
    for s in suites(recipe):
        key = (s, frozenset(wanted))
        if key not in _SERVED:
            versions: dict[str, str] = {}
            for comp in s.components:
                url = f"{s.url}/dists/{s.suite}/{comp}/binary-{ARCH}/Packages.xz"
                try:
                    text = lzma.decompress(_fetch(url)).decode("utf-8", errors="replace")
                except lzma.LZMAError:
                    raise MirrorError(f"{url}: not an xz-compressed Packages index") from None
                for p, v in parse_index(text, wanted).items():
                    if p not in versions or compare(v, versions[p]) > 0:
                        versions[p] = v
            _SERVED[key] = versions
        out[s] = _SERVED[key]
    return out


def compare(a: str, b: str) -> int:
    """Debian's version order (dpkg --compare-versions): <0, 0, >0."""
    if a == b:
        return 0
    try:
        gt = subprocess.run(["dpkg", "--compare-versions", a, "gt", b], capture_output=True, timeout=30,
                            check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        raise MirrorError("dpkg --compare-versions could not be run (Debian's version order)") from None
    return 1 if gt else -1


def _by_version(x: tuple[str, Suite], y: tuple[str, Suite]) -> int:
    return compare(x[0], y[0])


def status(recipe: Recipe, lock: Lock) -> Status:
    """The mirror against ``lock``: which locked versions it no longer serves, which it serves newer."""
    if not lock.packages:
        return Status(True)
    by_suite = served(recipe, set(lock.packages))
    missing, newer, newest = [], [], {}
    for pkg, locked in sorted(lock.packages.items()):
        offers: list[tuple[str, Suite]] = [(v, s) for s, versions in by_suite.items()
                                           if (v := versions.get(pkg)) is not None]
        if not offers:
            missing.append((pkg, locked))
            continue
        offers.sort(key=cmp_to_key(_by_version), reverse=True)
        top, suite = offers[0]
        newest[pkg] = top
        if all(v != locked for v, _ in offers):
            missing.append((pkg, locked))
        if compare(top, locked) > 0:
            newer.append(Newer(pkg, locked, top, suite.suite, suite.kind))
    return Status(not missing and not newer, missing, newer, newest)
