"""Docs that cannot rot: every repository path, module, module attribute and ``nfvcat`` command that a doc names
in code (inline code spans and fenced blocks) must exist. The docs are README.md, docs/*.md and the catalog's
READMEs (every tracked README.md); changelogs are the record of what was, and are not read.

What counts as naming one, precisely:
- a path: a code span (or a token of a fenced shell block) with a ``/`` or a file name ending, no space and no
  URL, whose first part is an entry of the repository's root, of the doc's own directory, or of a package
  (``tools/nfvcat``, ``tools/testbeds/nfvcat_testbeds``: the docs name ``validation/engines/heat.py`` from
  there) and git tracks (or would: untracked, not ignored); ``<placeholder>``, ``{placeholder}``, ``NAME``
  and ``*`` match any name. A path whose first part is none of those (``build/``, ``~/.cache/...``,
  ``my-site.yaml``) names no file of the repository.
- a module: ``nfvcat.x.y`` or ``nfvcat_testbeds.x``, or a dotted name whose first part is a wing of either
  package (``cloud.stacks.converge``). The longest prefix that is a module of the tree must exist, and the rest
  is an attribute of it (a top-level name of its source, then a name in that class's body). A dotted name the
  project defines as data (a string constant of its code: an entry-point group, a flavor; a key or value of the
  catalog's YAML: a TOSCA node type) is a name, not a module. A dotted name ending with a file name ending is a path.
- a command: a code span that starts with ``nfvcat WORD``, or a line of a fenced shell block (```sh or
  unlabeled) that runs ``nfvcat WORD`` (at its start, after ``$``, ``&&``, ``||`` or ``|``, or as
  ``.venv/bin/nfvcat``): WORD is a command of ``nfvcat --help`` (with the plugins installed) and, for a command
  with sub-commands, the next bare word one of them.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import fnmatch
import functools
import re
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

PACKAGES = {"nfvcat": Path("tools/nfvcat"), "nfvcat_testbeds": Path("tools/testbeds/nfvcat_testbeds")}
FILE_ENDINGS = ("py", "yaml", "yml", "json", "md", "toml", "ini", "txt", "sh", "html", "cfg", "zip", "xml", "lock",
                "pem", "conf", "csv", "sarif")
CATALOG = ("templates", "vnfd", "flavors", "hooks", "images")
SHELL = ("", "sh", "bash", "shell", "console")
SPAN = re.compile(r"(?<!`)`([^`\n]+)`(?!`)")
FENCE = re.compile(r"^```(\w*)\s*$")
DOTTED = re.compile(r"(?<![\w./<>*-])([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+)(?![\w/-])")
COMMAND_AT = re.compile(r"(?:^\s*(?:\$\s+)?|&&\s*|\|\|\s*|\|\s*|\S*/bin/)nfvcat\s+([a-z][\w-]*)(?:\s+([a-z][\w-]*))?")
PLACEHOLDER = re.compile(r"[A-Z][A-Z_]+")  # a metavar, as argparse writes them: images/NAME
PATHLIKE = re.compile(r"^[\w.<>*{}~-]+(?:/[\w.<>*{}-]*)+$|^[\w<>*-]+(?:\.[\w<>*-]+)*\.(?:" +
                      "|".join(FILE_ENDINGS) + r")$")


def docs(root: Path = ROOT) -> list[Path]:
    listed = subprocess.run(["git", "ls-files", "*.md"], cwd=root, capture_output=True, text=True, check=True)
    return [root / p for p in listed.stdout.split() if not p.startswith("tests/") and not p.endswith("CHANGELOG.md")
            and (p == "README.md" or p.startswith("docs/") or p.endswith("/README.md"))]


def code_of(text: str) -> list[tuple[int, str, str | None]]:
    """(line, text, fence label or None for an inline span) of every piece of code in a Markdown text."""
    out: list[tuple[int, str, str | None]] = []
    fence: str | None = None
    for n, line in enumerate(text.splitlines(), 1):
        m = FENCE.match(line.strip())
        if m:
            fence = None if fence is not None else m.group(1)
            continue
        if fence is not None:
            out.append((n, line, fence))
        else:
            out += [(n, s.group(1), None) for s in SPAN.finditer(line)]
    return out


# -- what exists ------------------------------------------------------------------------------------------------

def wings(root: Path) -> dict[str, str]:
    """Wing name -> its package: each package's sub-packages and top-level modules (``cli``, ``command``)."""
    return {d.stem: pkg for pkg, rel in PACKAGES.items() for d in sorted((root / rel).iterdir())
            if (d / "__init__.py").is_file() or (d.suffix == ".py" and not d.stem.startswith("_"))}


@functools.cache
def tracked(root: Path) -> frozenset[str]:
    """Every file git tracks (or would) below ``root`` and every directory holding one (relative, ``/``-separated)."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=root,
                            capture_output=True, text=True, check=True).stdout
    out = set()
    for path in listed.splitlines():
        parts = path.split("/")
        out.update("/".join(parts[:i]) for i in range(1, len(parts) + 1))
    return frozenset(out)


@functools.cache
def data_names(root: Path) -> frozenset[str]:
    """The dotted names the project defines as data, not modules: every dotted string constant of the packages'
    code (entry-point groups, the dev cloud's flavor) and every dotted key or value of the catalog's YAML (TOSCA
    node types)."""
    out: set[str] = set()
    for rel in PACKAGES.values():
        for source in (root / rel).rglob("*.py"):
            out.update(n.value for n in ast.walk(ast.parse(source.read_text()))
                       if isinstance(n, ast.Constant) and isinstance(n.value, str) and DOTTED.fullmatch(n.value))

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                walk(k)
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)
        elif isinstance(node, str) and DOTTED.fullmatch(node):
            out.add(node)

    for path in sorted(tracked(root)):
        if path.split("/")[0] in CATALOG and path.endswith((".yaml", ".yml")):
            with contextlib.suppress(yaml.YAMLError):
                for doc in yaml.safe_load_all((root / path).read_text()):
                    walk(doc)
    return frozenset(out)


def module_file(root: Path, parts: list[str]) -> Path | None:
    base = root / PACKAGES[parts[0]] / Path(*parts[1:]) if len(parts) > 1 else root / PACKAGES[parts[0]]
    for candidate in (base / "__init__.py", base.with_suffix(".py")):
        if candidate.is_file():
            return candidate
    return None


@functools.cache
def names_in(source: Path) -> dict[str, set[str] | None]:
    """A module's top-level names, each with the names in its body (a class's attributes and methods; none for
    a function), or None for a value or an import."""
    out: dict[str, set[str] | None] = {}

    def targets(node: ast.AST) -> list[str]:
        if isinstance(node, ast.Assign):
            return [n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)]
        if isinstance(node, ast.AnnAssign | ast.AugAssign) and isinstance(node.target, ast.Name):
            return [node.target.id]
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            return [node.name]
        if isinstance(node, ast.Import | ast.ImportFrom):
            return [(a.asname or a.name).split(".")[0] for a in node.names]
        if isinstance(node, ast.If | ast.Try):
            return [t for child in ast.iter_child_nodes(node) for t in targets(child)]
        return []

    for node in ast.parse(source.read_text()).body:
        for name in targets(node):
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                body = node.body if isinstance(node, ast.ClassDef) else []  # a function has no attribute
                out[name] = {t for child in body for t in targets(child)}
            else:
                out.setdefault(name, None)  # a value or an import: what it holds is not read here
    return out


def module_problem(root: Path, dotted: str) -> str | None:
    """Why ``dotted`` (``nfvcat.x.y.attr``) names nothing, or None when it does."""
    parts = dotted.split(".")
    known = 1
    while known < len(parts) and module_file(root, parts[:known + 1]) is not None:
        known += 1
    source = module_file(root, parts[:known])
    rest = parts[known:]
    if source is None:
        return f"module {dotted} does not exist"
    if not rest:
        return None
    names = names_in(source)
    if rest[0] not in names:
        return f"{'.'.join(parts[:known])} has no {rest[0]}"
    inner = names[rest[0]]
    if len(rest) > 1 and inner is not None and rest[1] not in inner:
        return f"{'.'.join(parts[:known + 1])} has no {rest[1]}"
    return None


def commands() -> dict[str, set[str]]:
    """Each command of ``nfvcat --help`` (plugins' too) -> its sub-commands."""
    from nfvcat.cli import build_parser

    def subs(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        return next((dict(a.choices) for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})

    return {name: set(subs(p)) for name, p in subs(build_parser()).items()}


# -- what a doc names -------------------------------------------------------------------------------------------

def path_problem(root: Path, doc: Path, path: str) -> str | None:
    path = path.rstrip("/.,:;)")
    if path.startswith(("/", "~", "$", "-", ".")) or "://" in path or not path:
        return None
    known = tracked(root)
    here = [doc.parent.relative_to(root).as_posix()] if doc.is_relative_to(root) and doc.parent != root else []
    first = path.split("/")[0]
    bases = [b for b in ("", *here, *(rel.as_posix() for rel in PACKAGES.values()))
             if f"{b}/{first}".lstrip("/") in known or "<" in first or "*" in first]
    if not bases:
        return None
    pattern = "/".join("*" if PLACEHOLDER.fullmatch(part) else re.sub(r"<[^>]*>|\{[^}]*\}", "*", part)
                       for part in path.split("/"))
    if any(fnmatch.filter(known, f"{b}/{pattern}".lstrip("/")) for b in bases):
        return None
    return f"path {path} does not exist"


def problems(root: Path, doc: Path, text: str, known_commands: dict[str, set[str]]) -> list[str]:
    found: list[str] = []
    rel = doc.relative_to(root) if doc.is_relative_to(root) else doc
    groups, wing_of = data_names(root), wings(root)

    def say(line: int, why: str | None) -> None:
        if why:
            found.append(f"{rel}:{line}: {why}")

    for line, code, fence in code_of(text):
        if fence is None or fence in SHELL:
            tokens = [code.strip()] if fence is None else code.split()
            for token in tokens:
                if " " not in token and PATHLIKE.match(token):
                    say(line, path_problem(root, doc, token))
            commanded = [m.groups() for m in COMMAND_AT.finditer(code)] if fence is not None else \
                [m.groups() for m in [COMMAND_AT.match(code)] if m]
            for command, sub in commanded:
                if command not in known_commands:
                    say(line, f"nfvcat {command} is no command")
                elif known_commands[command] and sub and sub not in known_commands[command]:
                    say(line, f"nfvcat {command} {sub} is no command")
        if fence not in (None, *SHELL):
            continue
        for m in DOTTED.finditer(code):
            dotted = m.group(1)
            parts = dotted.split(".")
            if parts[-1] in FILE_ENDINGS or dotted in groups:
                continue
            if parts[0] in PACKAGES:
                say(line, module_problem(root, dotted))
            elif parts[0] in wing_of:
                say(line, module_problem(root, f"{wing_of[parts[0]]}.{dotted}"))
    return found


@pytest.fixture(scope="module")
def known_commands() -> dict[str, set[str]]:
    return commands()


def test_every_doc_names_only_what_exists(known_commands: dict[str, set[str]]) -> None:
    read = docs()
    assert ROOT / "README.md" in read and ROOT / "docs/architecture.md" in read and len(read) > 10
    found = [p for doc in read for p in problems(ROOT, doc, doc.read_text(), known_commands)]
    assert found == []


PLANTED = """
The wrong things, one a line:
- `tools/nfvcat/lab/devcloud/up.py` and `lab/devcloud/inventory.yaml`
- `nfvcat.lab.devcloud` and `nfvcat_testbeds.devcloud.nowhere` and `cloud.stacks.no_such_call`
- `validation.pipeline.validate_paths.nope` names nothing; `cloud.verdicts.Verdict.no_field` neither
- run `nfvcat frobnicate --all` or `nfvcat image frobnicate`

```sh
nfvcat plan chain-vrouter && nfvcat nosuch
.venv/bin/nfvcat devcloud sideways
cat docs/nowhere.md
```

```
 cloud.stacks.converge ---- fine; cloud.stacks.vanished ---- not
```
"""
EXPECTED = [
    "path tools/nfvcat/lab/devcloud/up.py does not exist",
    "path lab/devcloud/inventory.yaml does not exist",
    "nfvcat has no lab",
    "nfvcat_testbeds.devcloud has no nowhere",
    "nfvcat.cloud.stacks has no no_such_call",
    "nfvcat.validation.pipeline.validate_paths has no nope",
    "nfvcat.cloud.verdicts.Verdict has no no_field",
    "nfvcat frobnicate is no command",
    "nfvcat image frobnicate is no command",
    "nfvcat nosuch is no command",
    "nfvcat devcloud sideways is no command",
    "path docs/nowhere.md does not exist",
    "nfvcat.cloud.stacks has no vanished",
]


def test_planted_breaches_in_a_copy_of_a_doc_are_each_found(tmp_path: Path,
                                                             known_commands: dict[str, set[str]]) -> None:
    """A copy of docs/architecture.md (clean: nothing found) with a line for each kind of breach appended."""
    original = (ROOT / "docs/architecture.md").read_text()
    copy = tmp_path / "architecture.md"
    copy.write_text(original + PLANTED)
    assert problems(ROOT, copy, original, known_commands) == []
    found = problems(ROOT, copy, copy.read_text(), known_commands)
    assert [f.split(": ", 1)[1] for f in found] == EXPECTED, found
    assert all(f.startswith(f"{copy}:") for f in found)
