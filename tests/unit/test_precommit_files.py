"""The pre-commit hook's file pattern, as pre-commit itself applies it (its manifest loader and its include/exclude
filter): names in any case, HOT's ``.template`` files and extension-less ``user-data`` files are handed over;
what is not nfvcat's is left to ``--skip-unknown``."""

from __future__ import annotations

from pre_commit.clientlib import load_manifest
from pre_commit.commands.run import filter_by_include_exclude

from tests.conftest import ROOT


def _handed_over(names: list[str]) -> list[str]:
    (hook,) = load_manifest(str(ROOT / ".pre-commit-hooks.yaml"))
    return list(filter_by_include_exclude(names, hook["files"], hook["exclude"]))


def test_the_hook_takes_the_names_peers_give_heat_templates_and_user_data() -> None:
    taken = ["chain.yaml", "Chain.YAML", "vnf.YML", "params.JSON", "pkg.CSAR", "net.template", "stack.Template",
             "user-data", "vnf/user-data", "cloud/user_data", "hooks/vrouter/vrouter.cfg", "pkg.zip"]
    assert _handed_over(taken) == taken


def test_the_hook_leaves_other_files_alone() -> None:
    others = ["README.md", "setup.py", "user-data.sh", "my-user-data", "templates/chain.yaml.orig", "Makefile"]
    assert _handed_over(others) == []
