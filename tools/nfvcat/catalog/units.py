"""Sizes, parsed once: TOSCA's scalar-unit.size (SOL001 memory and disk sizes) and page sizes, Nova's and a
host's.

TOSCA (and tosca-parser, and tacker when it makes a flavor) reads ``4 GB`` as 4 x 10^9 bytes and ``4 GiB`` as
4 x 2^30; a unit in the wrong case is accepted, as tosca-parser does. Tacker turns a size into a flavor's
MiB/GiB by truncation (``int(...)``, tacker.common.utils.MemoryUnit), so ``4 GB`` is a 3814 MiB flavor.

Nova's ``hw:mem_page_size`` is its own language: ``small``, ``large``, ``any``, a number of KiB, or a size with
IEC meaning (``2MB`` = ``2MiB`` = 2048 KiB; oslo's string_to_bytes, which needs the trailing B). A host
inventory writes a host's page sizes more freely (``2M``, ``1g``, ``4KiB``, a number of KiB): the same sizes, its
own dialect.
"""

from __future__ import annotations

import re
from typing import Any, Literal, overload

TOSCA_UNITS = {"B": 1, "kB": 10**3, "KiB": 2**10, "MB": 10**6, "MiB": 2**20, "GB": 10**9, "GiB": 2**30,
               "TB": 10**12, "TiB": 2**40}
_BY_LOWER = {u.lower(): u for u in TOSCA_UNITS}
_SIZE = re.compile(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]+)\s*")
PAGE_KEYWORDS = ("small", "large", "any")
_NOVA_PAGE = re.compile(r"(\d*\.?\d+)([KMGTPE]i?)?(b|bit|B)")
_HOST_PAGE = re.compile(r"(\d+)\s*([KkMmGg]?)(?:[Ii]?[Bb])?")


class SizeError(ValueError):
    """Not a size in the expected language; the message names the value."""


def tosca_bytes(value: Any) -> float:
    """A scalar-unit.size (``512 MB``, ``8 GiB``) in bytes."""
    match = _SIZE.fullmatch(str(value)) if isinstance(value, (str, int, float)) else None
    unit = _BY_LOWER.get(match.group(2).lower()) if match else None
    if match is None or unit is None:
        raise SizeError(f"not a TOSCA size (a number and one of {', '.join(TOSCA_UNITS)}): {value!r}")
    return float(match.group(1)) * TOSCA_UNITS[unit]


def tosca_size(value: Any, unit: str) -> int:
    """A scalar-unit.size in whole ``unit`` (``MiB`` for a flavor's RAM, ``GiB`` for its disk), truncated as
    tacker does when it makes the flavor."""
    if unit not in TOSCA_UNITS:
        raise SizeError(f"unknown unit {unit!r}")
    return int(tosca_bytes(value) / TOSCA_UNITS[unit])


@overload
def page_size_kib(value: Any, *, host: Literal[True]) -> int: ...
@overload
def page_size_kib(value: Any, *, host: Literal[False] = ...) -> int | str: ...
def page_size_kib(value: Any, *, host: bool = False) -> int | str:
    """A page size in KiB, in one of its two dialects.

    Nova's (``hw:mem_page_size``, the default): one of PAGE_KEYWORDS, a number of KiB, or a size with IEC meaning
    and its trailing B (``2MB`` = ``2MiB`` = 2048; ``b``/``bit``: bits).
    A host's (``host``: a host inventory's pages, a site profile's ``page_sizes``): a whole number of KiB, or one
    with a unit letter K, M or G in either case and ``iB``/``B`` optional, never bits (``4K``, ``2m``, ``1GiB``);
    no keyword."""
    text = str(value).strip()
    if host:
        if isinstance(value, int):
            return value
        match = _HOST_PAGE.fullmatch(text)
        if match is None:
            raise SizeError(f"invalid page size '{value}'")
        return _kib(int(match.group(1)), match.group(2).upper() or "K")
    if text in PAGE_KEYWORDS:
        return text
    if text.isdigit():
        return int(text)
    match = _NOVA_PAGE.fullmatch(text)
    if match is None:
        raise SizeError(f"not a page size Nova reads: {value!r}")
    return _kib(float(match.group(1)), (match.group(2) or "")[:1], bits=match.group(3) in ("b", "bit"))


def _kib(number: float, prefix: str, bits: bool = False) -> int:
    """``number`` of ``prefix`` (K, M, G, T, P, E: powers of 1024; none: bytes) bytes, or bits, in whole KiB."""
    power = "KMGTPE".index(prefix) + 1 if prefix else 0
    return int(number * 1024**power / (8 if bits else 1) // 1024)
