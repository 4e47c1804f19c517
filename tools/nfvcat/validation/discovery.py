"""Which files ``nfvcat validate`` reads, and which of them it reports on when they are none of its kinds.

A file the user names one by one is theirs to have validated: if it is none of nfvcat's kinds, that is
E0007. Files nfvcat finds itself (a directory walk, a glob) or is handed as a list by a pre-commit hook
(``--skip-unknown``) are only looked at when they are one of its kinds, as cfn-lint's hook does: the
others (``.pre-commit-config.yaml``, a CI workflow, docker-compose, an Ansible playbook) are skipped and
counted. ``.nfvcat.yaml``'s ``exclude`` globs are never read.
"""

from __future__ import annotations

import glob
import os
import re
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

from nfvcat import catalog
from nfvcat.core.documents import ZIP_ERRORS, Document
from nfvcat.core.problems import UNREADABLE
from nfvcat.validation.project import Project

GLOB_CHARS = re.compile(r"[*?\[]")
# What one of nfvcat's kinds says about itself, readable even when the YAML does not parse.
OWN_MARKERS = re.compile(r"^[\s{]*\"?(heat_template_version|AWSTemplateFormatVersion|HeatTemplateFormatVersion|"
                         r"tosca_definitions_version)\"?\s*:|\A\ufeff?#cloud-config", re.MULTILINE)


@dataclass
class Discovered:
    paths: list[str] = field(default_factory=list)  # to read, in order
    explicit: set[str] = field(default_factory=set)  # absolute paths named one by one
    excluded: list[str] = field(default_factory=list)  # left out by .nfvcat.yaml


def expand(paths: list[str], project: Project, skip_unknown: bool = False) -> Discovered:
    """The files behind ``paths``: directories walked, globs expanded, ``exclude`` applied."""
    out = Discovered()

    def add(path: str, explicit: bool) -> None:
        if project.excluded(path):
            out.excluded.append(path)
            return
        out.paths.append(path)
        if explicit:
            out.explicit.add(os.path.abspath(path))

    for p in paths:
        if os.path.isdir(p):
            found = catalog.walk(Path(p))
            for f in found:
                add(str(f), False)
            if not found:
                add(p, True)  # E0002: a directory with no catalog files
        elif not os.path.exists(p) and GLOB_CHARS.search(p):
            found_glob = sorted(f for f in glob.glob(p, recursive=True) if os.path.isfile(f))
            for name in found_glob:
                add(name, False)
            if not found_glob:
                add(p, True)  # E0002: nothing matches
        else:
            add(p, not skip_unknown)
    return out


def skipped(doc: Document, explicit: set[str]) -> bool:
    """True when ``doc`` is none of nfvcat's kinds and was not named one by one: it is not reported.

    A file that does not parse, or has duplicate keys, is still reported when its text says it is a Heat
    template (HOT or CloudFormation format), a TOSCA template or a cloud-config: a broken template must not
    pass as "unrelated"."""
    if doc.abspath in explicit:
        return False
    if doc.kind == "csar":
        return not _csar_like(doc.abspath)  # a ZIP of something else (a build artefact, say)
    if doc.kind != "unknown":
        return False
    if any(p.rule_id == UNREADABLE.id for p in doc.problems):
        return False  # a named path that does not exist is an error even in a list
    return not OWN_MARKERS.search(doc.text)


def _csar_like(path: str) -> bool:
    """A ZIP that SOL004 would take for a CSAR: TOSCA-Metadata/TOSCA.meta, or a YAML file at its root."""
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except ZIP_ERRORS:
        return True  # unreadable: the CSAR checks say so
    return "TOSCA-Metadata/TOSCA.meta" in names or any(
        "/" not in n and n.endswith((".yaml", ".yml")) for n in names)
