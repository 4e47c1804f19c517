"""CI proves the fresh path: the tiers that use the VNF images build them into an image cache inside the run's own
directory (git-ignored) that .ci/run empties before the tiers, never the machine's ~/.cache."""

from __future__ import annotations

import configparser
import re

from tests.conftest import ROOT

IMAGE_TIERS = ("day0", "images", "integration")


def _tox() -> configparser.ConfigParser:
    cfg = configparser.ConfigParser(interpolation=None)
    cfg.read(ROOT / "tox.ini")
    return cfg


def _setenv(cfg: configparser.ConfigParser, env: str) -> dict[str, str]:
    text = cfg[f"testenv:{env}"].get("setenv", cfg["testenv"].get("setenv", ""))
    text = re.sub(r"\{\[(\w+)\]setenv\}", lambda m: cfg[m.group(1)]["setenv"], text)
    return {k.strip(): v.strip() for k, _, v in (line.partition("=") for line in text.splitlines() if "=" in line)}


def test_the_image_tiers_use_a_cache_inside_the_run_that_ci_empties_first() -> None:
    cfg = _tox()
    caches = {env: _setenv(cfg, env).get("NFVCAT_IMAGE_CACHE") for env in IMAGE_TIERS}
    assert set(caches.values()) == {"{toxinidir}/.cache/images"}, caches  # one cache: the tiers share the builds
    rel = ".cache/images"
    assert ".cache/" in (ROOT / ".gitignore").read_text().splitlines()
    run = (ROOT / ".ci" / "run").read_text()
    assert run.index(f"rm -rf {rel}") < run.index(".venv/bin/tox")


def test_no_other_tier_sees_the_image_cache() -> None:
    cfg = _tox()
    for env in (s.removeprefix("testenv:") for s in cfg.sections() if s.startswith("testenv:")):
        if env not in IMAGE_TIERS:
            assert "NFVCAT_IMAGE_CACHE" not in _setenv(cfg, env), env
