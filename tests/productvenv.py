"""The product distribution alone, installed as a user installs it: a fresh virtual environment, ``pip install``
of the repository root (not editable, pinned by constraints.txt) from a clone of this checkout with its
uncommitted changes (so no stale ``build/`` of the working tree can leak into the wheel), and nothing else:
not nfvcat-testbeds, not the test extras. cloud-init's schema comes through the product's own pinned download,
from a Debian mirror on 127.0.0.1 serving the package tools/setup.sh fetched.

The hook tier (tests/hook/test_product_alone.py) proves what the product does offline; the integration tier
(tests/integration/test_product_alone.py) proves ``list`` and ``check`` against the dev cloud."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from nfvcat.validation import cloudinit_schema as cs
from tests.conftest import ROOT
from tests.debmirror import Mirror

# The build tools setup.sh pins for the project's own venv.
BUILD_TOOLS = ("pip==26.3", "setuptools==80.9.0", "wheel==0.48.0")


def git(repo: Path, *args: str, stdin: bytes | None = None) -> str:
    return subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, input=stdin).stdout.decode()


def shadow_of_checkout(where: Path) -> tuple[Path, str]:
    """A clone of this checkout with its uncommitted changes to tracked files committed (try-repo's way)."""
    git(where.parent, "clone", "-q", str(ROOT), str(where))
    diff = subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=ROOT, check=True, capture_output=True).stdout
    if diff:
        git(where, "apply", "--whitespace=nowarn", "-", stdin=diff)
        git(where, "-c", "user.name=test", "-c", "user.email=test@invalid", "commit", "-qam", "uncommitted")
    return where, git(where, "rev-parse", "HEAD").strip()


@dataclass
class ProductVenv:
    """A venv holding the product alone: ``bin`` its scripts, ``install_seconds`` what ``pip install`` took."""

    path: Path
    install_seconds: float

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    @property
    def nfvcat_exe(self) -> Path:
        return self.path / "bin" / "nfvcat"

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        """The caller's environment less this project's venv and path: nothing of the checkout is importable."""
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "PYTHONHOME")}
        env["PATH"] = f"{self.path / 'bin'}:{env.get('PATH', '/usr/bin:/bin')}"
        return {**env, **(extra or {})}

    def run(self, *args: str, cwd: Path = ROOT, env: dict[str, str] | None = None,
            timeout: float = 900) -> subprocess.CompletedProcess[str]:
        """``nfvcat ARGS`` of this venv."""
        return subprocess.run([str(self.nfvcat_exe), *args], cwd=cwd, capture_output=True, text=True,
                              env=self.env(env), timeout=timeout, check=False)

    def python_c(self, code: str) -> subprocess.CompletedProcess[str]:
        """``python -c CODE`` of this venv, from a directory with nothing of the project in it."""
        return subprocess.run([str(self.python), "-c", code], cwd=self.path, capture_output=True, text=True,
                              env=self.env(), timeout=120, check=False)


def source_key() -> str:
    """What the product venv is built from: this checkout's commit, its uncommitted changes and the constraints."""
    import hashlib

    h = hashlib.sha256()
    h.update(git(ROOT, "rev-parse", "HEAD").encode())
    h.update(subprocess.run(["git", "diff", "HEAD", "--binary"], cwd=ROOT, check=True, capture_output=True).stdout)
    h.update((ROOT / "constraints.txt").read_bytes())
    return h.hexdigest()[:20]


def build(where: Path) -> ProductVenv:
    """The product alone in ``where``/venv (``where`` is an empty directory the caller owns)."""
    source, _ = shadow_of_checkout(where / "nfvcat")
    venv = where / "venv"
    subprocess.run([os.path.realpath(sys.executable), "-m", "venv", str(venv)], check=True, timeout=300)
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--disable-pip-version-check"]
    subprocess.run([*pip, *BUILD_TOOLS], check=True, timeout=600)
    t0 = time.monotonic()
    subprocess.run([*pip, "-c", str(ROOT / "constraints.txt"), str(source)], check=True, timeout=1800)
    seconds = time.monotonic() - t0
    product = ProductVenv(venv, seconds)
    deb = cs.venv_dir() / cs.FILENAME
    assert deb.is_file(), f"{deb} missing: run tools/setup.sh (it fetches the pinned cloud-init package)"
    with Mirror(deb.read_bytes()) as mirror:
        res = product.run("fetch-schema", "--into", str(venv / "share" / "nfvcat" / "cloud-init"),
                          env={"NFVCAT_DEBIAN_MIRROR": mirror.url})
    assert res.returncode == 0, res.stdout + res.stderr
    return product
