from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tests.productvenv import ProductVenv

ROOT = Path(__file__).resolve().parents[1]
NFVCAT = [sys.executable, "-m", "nfvcat"]


@pytest.fixture(scope="session", autouse=True)
def _private_cache(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Engine results are cached by content; tests start from an empty cache of their own."""
    os.environ["NFVCAT_CACHE_DIR"] = str(tmp_path_factory.mktemp("nfvcat-cache"))
    # In-process engines unless a test starts the engine server itself (and stops it): no test leaves one behind.
    os.environ["NFVCAT_NO_SERVER"] = "1"


def nfvcat(*args: str, cwd: Path | str = ROOT, env: dict[str, str] | None = None,
           timeout: float = 600, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real command line, as a user or a CI script would (``stdin``: its standard input)."""
    return subprocess.run([*NFVCAT, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, **(env or {})}, input=stdin)


def findings_of(*args: str, **kw: object) -> tuple[int, list[dict[str, object]]]:
    proc = nfvcat("validate", "--format", "json", *args, **kw)  # type: ignore[arg-type]
    assert "Traceback" not in proc.stderr, proc.stderr
    return proc.returncode, json.loads(proc.stdout)["findings"]


def tracked_entries() -> list[Path]:
    """The catalog's entry.yaml files as git tracks them (the tests' own fixtures left out): not the copies a
    product-alone venv's cache (.cache/product-venv) or the dev cloud's state holds under the checkout."""
    out = subprocess.run(["git", "ls-files", "*entry.yaml"], cwd=ROOT, capture_output=True, text=True, check=True)
    return [ROOT / f for f in out.stdout.split() if not f.startswith("tests/")]


@pytest.fixture(scope="session")
def product_venv() -> ProductVenv:
    """The product distribution alone in a fresh venv (tests/productvenv.py), built once per run: the first tier
    that needs it (hook or integration, which `tox p` runs side by side) builds it into .cache/product-venv/ under
    the checkout, under a lock (keyed by the source it installs and the constraints; .ci/run empties the directory
    first), and the other finds it there."""
    from tests.productvenv import ProductVenv, build, source_key

    key = source_key()
    (ROOT / ".cache" / "product-venv").mkdir(parents=True, exist_ok=True)
    home = ROOT / ".cache" / "product-venv" / key
    done = home / "install-seconds"  # written last: a build cut short is built again
    with open(ROOT / ".cache" / "product-venv" / f"{key}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # the other tier's build of the same key finishes first
        if done.is_file():
            product = ProductVenv(home / "venv", float(done.read_text()))
        else:
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir(parents=True)
            product = build(home)
            done.write_text(f"{product.install_seconds:.0f}\n")
    sys.stderr.write(f"\n[product-alone] pip install of the product: {product.install_seconds:.0f} s\n")
    return product
