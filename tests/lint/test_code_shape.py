"""The shape of the code of both packages (nfvcat, nfvcat_testbeds): no function is longer than MAX_FUNCTION_LINES
(from its ``def`` line to its last, docstring included), and every module says what it is for (a module
docstring; a package's is its ``__init__.py``'s). The files under ``nfvcat/data`` are shipped to other
programs (Tacker's LCM user data), not nfvcat's code, and are not read.

Each check also runs on a copy with a planted breach, so a check that could not fail fails here."""

from __future__ import annotations

import ast
import shutil
from pathlib import Path

import pytest

from tests.conftest import ROOT

PACKAGES = (ROOT / "tools" / "nfvcat", ROOT / "tools" / "testbeds" / "nfvcat_testbeds")
MAX_FUNCTION_LINES = 80


def sources(package: Path) -> list[Path]:
    return sorted(p for p in package.rglob("*.py") if "data" not in p.relative_to(package).parts[:1])


def long_functions(package: Path) -> list[str]:
    """``path:line name (N lines)`` of every function (methods and nested functions too) over the limit."""
    found = []
    for path in sources(package):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                assert node.end_lineno is not None
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    found.append(f"{path.relative_to(package.parent)}:{node.lineno} {node.name} ({lines} lines)")
    return found


def undocumented_modules(package: Path) -> list[str]:
    return [str(p.relative_to(package.parent)) for p in sources(package)
            if not (ast.get_docstring(ast.parse(p.read_text(), str(p))) or "").strip()]


@pytest.fixture(scope="module")
def breached(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the product with a function of 81 lines in core and a module without a docstring in plan."""
    copy = tmp_path_factory.mktemp("shape") / "nfvcat"
    shutil.copytree(PACKAGES[0], copy, ignore=shutil.ignore_patterns("__pycache__"))
    body = "".join(f"    x{i} = {i}\n" for i in range(79))
    errors = copy / "core" / "errors.py"
    errors.write_text(errors.read_text() + f"\n\ndef _long() -> int:\n{body}    return 0\n")
    (copy / "plan" / "silent.py").write_text("from __future__ import annotations\n\nX = 1\n")
    return copy


def test_no_function_is_over_the_limit() -> None:
    assert [f for p in PACKAGES for f in long_functions(p)] == []


def test_a_function_over_the_limit_is_found(breached: Path) -> None:
    errors = (breached / "core" / "errors.py").read_text().splitlines()
    line = errors.index("def _long() -> int:") + 1
    assert long_functions(breached) == [f"nfvcat/core/errors.py:{line} _long (81 lines)"]


def test_every_module_says_what_it_is_for() -> None:
    assert [m for p in PACKAGES for m in undocumented_modules(p)] == []


def test_a_module_without_a_docstring_is_found(breached: Path) -> None:
    assert undocumented_modules(breached) == ["nfvcat/plan/silent.py"]
