"""YAML loading that keeps the line and column of every key and value.

Parses the way Heat does (timestamps such as ``heat_template_version: 2021-04-16`` stay strings), and
refuses inputs that would exhaust memory or time: files over a size limit, alias bombs, deep nesting.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import yaml

from nfvcat.core.problems import INVALID_YAML, TOO_COMPLEX, TOO_LARGE

MAX_BYTES = 8 * 1024 * 1024
MAX_EXPANDED_NODES = 500_000
MAX_DEPTH = 200

Path = tuple[Any, ...]


class DocumentError(Exception):
    """The text cannot be turned into data; ``line``/``column`` are 1-based."""

    def __init__(self, rule_id: str, message: str, line: int = 1, column: int = 1):
        super().__init__(message)
        self.rule_id = rule_id
        self.message = message
        self.line = line
        self.column = column


class _Loader(yaml.SafeLoader):
    """PyYAML's own parser: its error messages are the ones E0001 shows."""


class _FastLoader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):  # type: ignore[misc]
    """The same grammar parsed by libyaml (PyYAML's C binding): some ten times faster, with the same nodes
    and marks (``load`` falls back to ``_Loader`` for a document it rejects, so the message is PyYAML's)."""


def _timestamp_as_string(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    return loader.construct_scalar(node)  # type: ignore[arg-type]


# Where libyaml and PyYAML part ways, PyYAML alone parses: characters PyYAML refuses before parsing (libyaml
# not all of them), tabs (libyaml accepts some in plain scalars that PyYAML refuses), a byte order mark
# (libyaml does not count it in the first line's columns).
_NON_PRINTABLE = yaml.reader.Reader.NON_PRINTABLE


def _fast_reads(text: str) -> bool:
    """libyaml reads this text as PyYAML does (none of the cases where they part ways)."""
    return (_FastLoader is not _Loader and "\t" not in text and not text.startswith("\ufeff")
            and not _NON_PRINTABLE.search(text))


for _cls in (_Loader, _FastLoader):
    _cls.add_constructor("tag:yaml.org,2002:timestamp", _timestamp_as_string)


@dataclass
class Positions:
    """Maps a key path to (line, column) of the key (for mappings) or of the item (for sequences)."""

    marks: dict[Path, tuple[int, int]] = field(default_factory=dict)
    duplicates: list[tuple[Path, int, int]] = field(default_factory=list)
    libyaml: bool = False  # libyaml parsed the document (not PyYAML's own parser)

    def locate(self, path: Path) -> tuple[int, int]:
        """The position of the longest prefix of ``path`` that exists in the document."""
        path = tuple(path)
        while path:
            if path in self.marks:
                return self.marks[path]
            path = path[:-1]
        return self.marks.get((), (1, 1))


def _mark(node: yaml.Node) -> tuple[int, int]:
    return node.start_mark.line + 1, node.start_mark.column + 1


def _expanded_size(node: yaml.Node, memo: dict[int, int], depth: int = 0) -> int:
    if depth > MAX_DEPTH:
        raise DocumentError(TOO_COMPLEX.id, f"YAML nesting deeper than {MAX_DEPTH} levels", *_mark(node))
    key = id(node)
    if key in memo:
        return memo[key]
    memo[key] = 1  # breaks recursive aliases
    size = 1
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            size += _expanded_size(k, memo, depth + 1) + _expanded_size(v, memo, depth + 1)
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            size += _expanded_size(item, memo, depth + 1)
    memo[key] = size
    if size > MAX_EXPANDED_NODES:
        raise DocumentError(
            TOO_COMPLEX.id, f"YAML expands to more than {MAX_EXPANDED_NODES} nodes (alias bomb?)", *_mark(node)
        )
    return size


def _record(node: yaml.Node, path: Path, pos: Positions, seen: set[int]) -> None:
    if id(node) in seen:  # an alias already recorded: do not walk it again
        return
    seen.add(id(node))
    if isinstance(node, yaml.MappingNode):
        keys: set[Any] = set()
        for k, v in node.value:
            key = k.value if isinstance(k, yaml.ScalarNode) else None
            if key is None:
                continue
            if key in keys:
                pos.duplicates.append((path + (key,), *_mark(k)))
            keys.add(key)
            pos.marks[path + (key,)] = _mark(k)
            _record(v, path + (key,), pos, seen)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            pos.marks[path + (i,)] = _mark(item)
            _record(item, path + (i,), pos, seen)


def load(text: str) -> tuple[Any, Positions]:
    """Parse one YAML (or JSON) document; return the data and the positions of its keys.

    libyaml parses it; a document libyaml rejects (or that our limits refuse) is parsed again by PyYAML's
    pure-Python parser, whose messages (and acceptance) are the reference: the outcome is the same either
    way, only faster for the valid documents that are nearly all of them."""
    from nfvcat.core import confine

    limit = confine.current().max_bytes
    if len(text.encode("utf-8", "surrogatepass")) > limit:
        raise DocumentError(TOO_LARGE.id, f"file larger than the {limit} byte limit")
    if _fast_reads(text):
        try:
            return _load(text, _FastLoader)
        except (DocumentError, yaml.YAMLError, ValueError, TypeError, RecursionError):
            pass  # PyYAML's parser says why, in its words
    return _load(text, _Loader)


class _Unusual(Exception):
    """A node the single walk leaves to PyYAML's constructor (or a limit it leaves to the full checks)."""


_MAP, _SEQ, _STR = "tag:yaml.org,2002:map", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:str"
_SCALARS = frozenset({"tag:yaml.org,2002:null", "tag:yaml.org,2002:bool", "tag:yaml.org,2002:int",
                      "tag:yaml.org,2002:float", "tag:yaml.org,2002:timestamp"})


class _Walk:
    """One walk over the composed nodes that builds the data, records the key positions and counts the
    expanded size: what ``_expanded_size``, ``_record`` and PyYAML's ``construct_document`` do in three.
    Only plain mappings, sequences and the standard scalars (each scalar built by the loader's own
    constructor for its tag, a string taken as is); anything else (a merge key, another tag, a recursive
    alias, a collection as a key, a limit reached) raises _Unusual and the three run instead."""

    def __init__(self, loader: Any, pos: Positions):
        self.construct = loader.yaml_constructors
        self.loader = loader
        self.marks = pos.marks
        self.duplicates = pos.duplicates
        self.built: dict[int, tuple[Any, int]] = {}  # an alias is the object its anchor built, as in PyYAML
        self.open: set[int] = set()

    def scalar(self, node: yaml.ScalarNode) -> Any:
        if node.tag == _STR:
            return node.value
        if node.tag in _SCALARS:
            return self.construct[node.tag](self.loader, node)
        raise _Unusual

    def node(self, node: yaml.Node, path: Path, depth: int) -> tuple[Any, int]:
        if isinstance(node, yaml.ScalarNode):
            return self.scalar(node), 1
        key = id(node)
        if key in self.built:
            if depth > MAX_DEPTH:
                raise _Unusual
            return self.built[key]
        if key in self.open or depth >= MAX_DEPTH:
            raise _Unusual  # a recursive alias, or deep enough for the full checks to decide
        self.open.add(key)
        size = 1
        data: Any
        if isinstance(node, yaml.MappingNode) and node.tag == _MAP:
            data = {}
            seen: set[str] = set()
            for k, v in node.value:
                if not isinstance(k, yaml.ScalarNode):
                    raise _Unusual
                name = self.scalar(k)  # a merge key (<<) or another tag raises
                here = (*path, k.value)
                if k.value in seen:
                    self.duplicates.append((here, *_mark(k)))
                seen.add(k.value)
                self.marks[here] = _mark(k)
                data[name], n = self.node(v, here, depth + 1)
                size += 1 + n
        elif isinstance(node, yaml.SequenceNode) and node.tag == _SEQ:
            data = []
            for i, item in enumerate(node.value):
                here = (*path, i)
                self.marks[here] = _mark(item)
                value, n = self.node(item, here, depth + 1)
                data.append(value)
                size += n
        else:
            raise _Unusual
        if size > MAX_EXPANDED_NODES:
            raise _Unusual
        self.open.discard(key)
        self.built[key] = (data, size)
        return data, size


def _load(text: str, cls: type[Any]) -> tuple[Any, Positions]:
    try:
        loader = cls(text)
        try:
            node = loader.get_single_node()
            pos = Positions()
            if node is None:
                return None, pos
            if cls is _FastLoader:
                try:
                    pos.marks[()] = _mark(node)
                    pos.libyaml = True
                    return _Walk(loader, pos).node(node, (), 0)[0], pos
                except (_Unusual, yaml.YAMLError, ValueError, TypeError):
                    pos = Positions()  # the three below give PyYAML's data, or its error
            _expanded_size(node, {})
            pos.marks[()] = _mark(node)
            _record(node, (), pos, set())
            data = loader.construct_document(node)
            pos.libyaml = cls is _FastLoader
        finally:
            loader.dispose()
    except DocumentError:
        raise
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line, col = (mark.line + 1, mark.column + 1) if mark else (1, 1)
        problem = " ".join(str(p) for p in (exc.context, exc.problem) if p)
        raise DocumentError(INVALID_YAML.id, f"invalid YAML: {problem}", line, col) from None
    except RecursionError:
        raise DocumentError(TOO_COMPLEX.id, "YAML nesting too deep") from None
    except (yaml.YAMLError, ValueError, TypeError) as exc:
        raise DocumentError(INVALID_YAML.id, f"invalid YAML: {exc}".splitlines()[0]) from None
    return data, pos


def read_file(path: Any, shown: str | None = None, what: str = "") -> tuple[Any, Positions]:
    """A YAML file of nfvcat's own (an entry, a flavor, a site profile, a project file, a test description,
    an inventory, a placement request; ``what`` names it in messages): its data and key positions, or a
    one-line UserError naming ``path:line:col`` (exit 1)."""
    from nfvcat.core.errors import UserError

    name = shown or str(path)
    from nfvcat.core import confine

    try:
        text = confine.read_bytes(str(path), policy=confine.Policy(max_bytes=confine.current().max_bytes)).decode()
    except confine.Refused as exc:
        raise UserError(f"{name}: cannot read{' ' + what if what else ''}: {exc.why}") from None
    except (OSError, UnicodeDecodeError) as exc:
        why = getattr(exc, "strerror", None) or exc
        raise UserError(f"{name}: cannot read{' ' + what if what else ''}: {why}") from None
    try:
        return load(text)
    except DocumentError as exc:
        raise UserError(f"{name}:{exc.line}:{exc.column}: {exc.message}") from None
