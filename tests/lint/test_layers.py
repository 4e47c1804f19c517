"""The architecture as a test (docs/architecture.md): two distributions, the product (``nfvcat``) and its test beds
(``nfvcat_testbeds``, tools/testbeds), whose wings are layers (import-linter's contracts in pyproject.toml); the
product imports nothing of the test beds, at module level or inside a function, nor names them to importlib; every
directory of Python code is a regular package (a namespace package would hide its modules from the import graph);
there is no import cycle (imports inside functions count: grimp reads every import statement), no module uses
another's private names, modules stay small, and the doc's tables of wings are the contracts'.

Each check also runs on a copy of the packages with a deliberate breach, so a check that could not fail fails
here."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGE = ROOT / "tools" / "nfvcat"
TESTBEDS = ROOT / "tools" / "testbeds" / "nfvcat_testbeds"
MAX_LINES = 450
MAX_WINGS = 10  # top-level entries besides cli.py, __init__.py and __main__.py
CONTRACTS = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
LAYERS = next(c for c in CONTRACTS if c["id"] == "layers")["layers"]
TESTBED_LAYERS = next(c for c in CONTRACTS if c["id"] == "testbed-layers")["layers"]


def copy_packages(tools: Path) -> None:
    """Both packages side by side under ``tools`` (the layout the checks read)."""
    for package in (PACKAGE, TESTBEDS):
        shutil.copytree(package, tools / package.name, ignore=shutil.ignore_patterns("__pycache__"))


@pytest.fixture(scope="module")
def tools_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The packages as they are, side by side."""
    tools = tmp_path_factory.mktemp("tools")
    copy_packages(tools)
    return tools


def lint_imports(tools: Path) -> subprocess.CompletedProcess[str]:
    """import-linter's command on the packages under ``tools``, with the project's contracts."""
    env = {**os.environ, "PYTHONPATH": str(tools)}
    return subprocess.run([str(Path(sys.executable).with_name("lint-imports")), "--config",
                           str(ROOT / "pyproject.toml"), "--no-cache"],
                          capture_output=True, text=True, env=env, cwd=tools, timeout=300, check=False)


def imports_of(tools: Path) -> dict[str, list[str]]:
    """Each module of the package under ``tools`` and the modules of it that it imports (grimp's graph, every
    import statement, those inside functions too). In a process of its own: grimp finds the package by
    importing, and this process may have imported the real one already."""
    code = ("import grimp, json\n"
            "g = grimp.build_graph('nfvcat', 'nfvcat_testbeds', cache_dir=None)\n"
            "print(json.dumps({m: sorted(g.find_modules_directly_imported_by(m)) for m in sorted(g.modules)}))\n")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True,
                         env={**os.environ, "PYTHONPATH": str(tools)}, cwd=tools)
    return dict(json.loads(res.stdout))


def cycles(adj: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for root in adj:
        if root in index:
            continue
        work = [(root, 0)]
        while work:
            v, i = work.pop()
            if i == 0:
                index[v] = low[v] = len(index)
                stack.append(v)
                on.add(v)
            if i < len(adj[v]):
                work.append((v, i + 1))
                w = adj[v][i]
                if w not in index:
                    work.append((w, 0))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            for w in adj[v]:
                if w in on:
                    low[v] = min(low[v], low[w])
            if low[v] == index[v]:
                component = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    component.append(w)
                    if w == v:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


ROOTS = ("nfvcat", "nfvcat_testbeds")


def imports_of_testbeds(package: Path) -> list[str]:
    """Every place in ``package`` (each ``*.py`` under it, in a regular package or not) that imports the test beds
    or names them as a string (importlib, entry points resolved by hand)."""
    bad = []
    for py in sorted(package.rglob("*.py")):
        tree = ast.parse(py.read_text(), str(py))
        for node in ast.walk(tree):
            names: list[str] = []
            if isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.Constant) and isinstance(node.value, str):
                names = re.findall(r"\bnfvcat_testbeds\b[\w.]*", node.value)
                names = [n for n in names if not _in_docstring(tree, node)]
            bad += [f"{py.relative_to(package.parent)}:{node.lineno}: {n}" for n in names
                    if n.split(".")[0] == "nfvcat_testbeds"]
    return bad


def _in_docstring(tree: ast.Module, const: ast.Constant) -> bool:
    """Whether ``const`` is a module's, class's or function's docstring (prose may name the test beds)."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and first.value is const:
                return True
    return False


def namespace_packages(package: Path) -> list[str]:
    """Directories under ``package`` holding Python files but no ``__init__.py``: import-linter's and grimp's
    graphs leave their modules out (data/ is shipped to other programs and holds no nfvcat module)."""
    return sorted(str(d.relative_to(package.parent)) for d in [package, *package.rglob("*")]
                  if d.is_dir() and d.name != "__pycache__" and "data" not in d.relative_to(package).parts
                  and any(d.glob("*.py")) and not (d / "__init__.py").is_file())


def private_uses(package: Path) -> list[str]:
    """Places where a module imports or reaches another module's private (``_x``, not dunder) name."""
    modules = {".".join(p.relative_to(package.parent).with_suffix("").parts).removesuffix(".__init__")
               for p in package.rglob("*.py")}
    bad = []
    for py in sorted(package.rglob("*.py")):
        if "data" in py.relative_to(package).parts:
            continue  # files shipped to other programs
        here = py.relative_to(package.parent)
        tree = ast.parse(py.read_text(), str(py))
        aliases: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] in ROOTS:
                for a in node.names:
                    if f"{node.module}.{a.name}" in modules:
                        aliases.add(a.asname or a.name)
                    elif a.name.startswith("_") and not a.name.startswith("__"):
                        bad.append(f"{here}:{node.lineno}: from {node.module} import {a.name}")
            elif isinstance(node, ast.Import):
                aliases |= {a.asname for a in node.names if a.asname and a.name.split(".")[0] in ROOTS}
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")):
                bad.append(f"{here}:{node.lineno}: {node.value.id}.{node.attr}")
    return bad


@pytest.fixture(scope="module")
def breached(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the packages with deliberate breaches: core imports the test beds (module level), cloud imports
    the dev cloud inside a function, a namespace package of the product imports the lab, a command names the
    test beds to importlib, core.errors closes a cycle with core.yamlpos inside a function, and a private name
    crosses modules."""
    tools = tmp_path_factory.mktemp("breached")
    copy_packages(tools)
    errors = tools / "nfvcat" / "core" / "errors.py"
    errors.write_text(errors.read_text() + "\n\nfrom nfvcat_testbeds.lab import netns  # noqa: E402\n\n\n"
                      "def _late() -> None:\n    from nfvcat.core import yamlpos  # noqa: F401\n")
    stacks = tools / "nfvcat" / "cloud" / "stacks.py"
    stacks.write_text(stacks.read_text() + "\n\ndef _devcloud() -> None:\n"
                      "    from nfvcat_testbeds.devcloud import state  # noqa: F401\n")
    hidden = tools / "nfvcat" / "plan" / "hidden"
    hidden.mkdir()
    (hidden / "helper.py").write_text("from nfvcat_testbeds.lab import chain  # noqa: F401\n")
    options = tools / "nfvcat" / "commands" / "options.py"
    options.write_text(options.read_text() + "\n\ndef _dynamic() -> None:\n    import importlib\n\n"
                       "    importlib.import_module('nfvcat_testbeds.devcloud.hostaccess')\n")
    dirs = tools / "nfvcat" / "core" / "dirs.py"
    dirs.write_text(dirs.read_text() + "\n\nfrom nfvcat.core.errors import _late  # noqa: E402,F401\n")
    return tools


def test_the_wings_are_layers_and_the_product_knows_no_testbeds(tools_dir: Path) -> None:
    res = lint_imports(tools_dir)
    assert res.returncode == 0, res.stdout + res.stderr
    assert f"Contracts: {len(CONTRACTS)} kept, 0 broken." in res.stdout


def test_an_import_against_the_layers_fails_the_contracts(breached: Path) -> None:
    res = lint_imports(breached)
    assert res.returncode != 0
    assert "nfvcat.core.errors -> nfvcat_testbeds.lab.netns" in res.stdout  # the product importing the test beds
    assert "nfvcat.cloud.stacks -> nfvcat_testbeds.devcloud.state" in res.stdout  # inside a function, counted


def test_the_product_names_no_testbed_module() -> None:
    assert imports_of_testbeds(PACKAGE) == []


def test_a_testbed_import_is_found_anywhere_in_the_product(breached: Path) -> None:
    found = "\n".join(imports_of_testbeds(breached / "nfvcat"))
    assert "nfvcat/core/errors.py" in found and "nfvcat/cloud/stacks.py" in found
    assert "nfvcat/plan/hidden/helper.py:1: nfvcat_testbeds.lab" in found  # in a namespace package too
    assert "nfvcat/commands/options.py" in found and "nfvcat_testbeds.devcloud.hostaccess" in found  # importlib


def test_every_directory_of_code_is_a_regular_package() -> None:
    assert namespace_packages(PACKAGE) + namespace_packages(TESTBEDS) == []


def test_a_namespace_package_is_found(breached: Path) -> None:
    assert namespace_packages(breached / "nfvcat") == ["nfvcat/plan/hidden"]


def test_there_is_no_import_cycle_counting_imports_inside_functions(tools_dir: Path) -> None:
    assert cycles(imports_of(tools_dir)) == []


def test_a_cycle_closed_inside_a_function_is_found(breached: Path) -> None:
    assert any({"nfvcat.core.errors", "nfvcat.core.yamlpos"} <= set(c) for c in cycles(imports_of(breached)))


def test_no_module_uses_another_modules_private_names() -> None:
    assert private_uses(PACKAGE) + private_uses(TESTBEDS) == []


def test_a_private_name_across_modules_is_found(breached: Path) -> None:
    assert any("from nfvcat.core.errors import _late" in b for b in private_uses(breached / "nfvcat"))


def test_no_module_is_over_the_limit() -> None:
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines())
             for p in [*PACKAGE.rglob("*.py"), *TESTBEDS.rglob("*.py")]}
    assert {p: n for p, n in sizes.items() if n > MAX_LINES} == {}


def test_the_package_has_few_wings() -> None:
    entries = {p.name for p in PACKAGE.iterdir() if p.name != "__pycache__"} - {"cli.py", "__init__.py", "__main__.py"}
    assert len(entries) <= MAX_WINGS, sorted(entries)
    assert {f"nfvcat.{e.removesuffix('.py')}" for e in entries} - {"nfvcat.data"} == set(LAYERS) - {"nfvcat.cli"}


def test_the_testbeds_wings_are_their_contracts_layers() -> None:
    entries = {p.name.removesuffix(".py") for p in TESTBEDS.iterdir() if p.name not in ("__pycache__", "__init__.py")}
    assert {f"nfvcat_testbeds.{e}" for e in entries} == set(TESTBED_LAYERS)


def doc_wings(marker: str) -> list[str]:
    doc = (ROOT / "docs" / "architecture.md").read_text()
    table = doc.split(f"<!-- {marker}:", 1)[1].split("\n\n", 1)[0]
    return re.findall(r"^\| `([a-z0-9_]+)` \|", table, re.M)


def test_the_architecture_doc_lists_the_contracts_layers_in_order() -> None:
    assert [f"nfvcat.{w}" for w in doc_wings("layers")] == LAYERS
    assert [f"nfvcat_testbeds.{w}" for w in doc_wings("testbed layers")] == TESTBED_LAYERS
