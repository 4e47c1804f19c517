"""The catalog: where it is and which files belong to it (here), and its model, one module per kind of data:
``entries`` (entry.yaml, the one loader), ``flavors``, ``site`` (the site profile), ``specs`` (extra-spec
values as Nova stores them) and ``units`` (TOSCA sizes, Nova page sizes)."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

CATALOG_DIRS = ("flavors", "templates", "vnfd", "hooks", "images")
SUFFIXES = (".yaml", ".yml", ".json", ".zip", ".csar", ".cfg")
SITE_PROFILE = Path("templates") / "site-profile.yaml"


def find_root(start: str | None = None) -> Path | None:
    """$NFVCAT_CATALOG_DIR if set; else the nearest directory at or above ``start`` (default: cwd) holding
    the catalog directories; else the repository this package is installed from."""
    env = os.environ.get("NFVCAT_CATALOG_DIR")
    if env:
        return Path(env).resolve()
    here = Path(start or os.getcwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "templates").is_dir() and (candidate / "flavors").is_dir():
            return candidate
    repo = Path(__file__).resolve().parents[2]
    if (repo / "templates").is_dir() and (repo / "flavors").is_dir():
        return repo
    return None


def require_root(start: str | None = None) -> Path:
    """The catalog root, or a one-line error for the commands that cannot work without one."""
    root = find_root(start)
    if root is None:
        from nfvcat.core.errors import UserError

        raise UserError("no catalog here (no templates/ and flavors/ at or above the current directory); "
                        "set NFVCAT_CATALOG_DIR")
    return root


def walk(directory: Path) -> list[Path]:
    """Files below ``directory`` that may be documents, in a stable order; hidden ones are skipped."""
    out = []
    for dirpath, dirnames, filenames in os.walk(directory):
        dirnames[:] = sorted(d for d in dirnames if not d.startswith(".") and d != "__pycache__")
        for name in sorted(filenames):
            if not name.startswith(".") and name.endswith(SUFFIXES):
                out.append(Path(dirpath) / name)
    return out


def catalog_files(root: Path) -> list[Path]:
    files: list[Path] = []
    for d in CATALOG_DIRS:
        if (root / d).is_dir():
            files.extend(walk(root / d))
    return files


def entry_of(path: Path) -> Path | None:
    """The entry directory (the nearest one with an entry.yaml) a file belongs to."""
    here = os.path.realpath(path)  # Path.resolve(), without a Path object per parent (validate asks per document)
    while True:
        parent = os.path.dirname(here)
        if parent == here:
            return None
        if os.path.isfile(os.path.join(parent, "entry.yaml")):
            return Path(parent)
        if os.path.basename(parent) in CATALOG_DIRS:
            return None
        here = parent


def examples_of(entry_dir: Path) -> list[Path]:
    ex = entry_dir / "examples"
    return sorted(p for p in ex.iterdir() if p.suffix in (".yaml", ".yml")) if ex.is_dir() else []


def main_template(entry_dir: Path, entry: Any) -> Path | None:
    name = entry.get("template") if isinstance(entry, dict) else None
    return (entry_dir / name).resolve() if isinstance(name, str) else None


def provider_networks(root: Path | None, read: Callable[[Path], Any]) -> dict[str, dict[str, Any]]:
    """The provider networks the catalog's HOT templates create, by name (net-provider's, say), so a
    template that takes a network by name can be traced to its physnet. ``read`` gives a file's data."""
    from nfvcat.core import hot

    out: dict[str, dict[str, Any]] = {}
    if root is None or not (root / "templates" / "heat").is_dir():
        return out
    for path in walk(root / "templates" / "heat"):
        data = read(path)
        if isinstance(data, dict) and "heat_template_version" in data:
            out.update(hot.provider_networks(data))
    return out
