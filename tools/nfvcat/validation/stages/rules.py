"""Stage 3, rules: the in-process rules of a document (those for its kind, with each of its entry's examples),
and the rules that follow nesting over the templates it nests, with what the parent passes them. Rules that
can keep a document from the engines run first (``blocking``), the others while the engines work."""

from __future__ import annotations

import os
from dataclasses import dataclass, replace

from nfvcat.catalog.entries import release_rules
from nfvcat.core import hot
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.emitted import ENGINE_FAILURE
from nfvcat.validation.model import Options
from nfvcat.validation.rules import all_rules
from nfvcat.validation.rules.base import Context, Rule
from nfvcat.validation.stages.context import Examples, env_parameters
from nfvcat.validation.stages.read import Library

MAX_NESTING = 5

Found = list[tuple[Document, RawFinding]]  # raw findings with the document they are in


@dataclass
class RuleSet:
    blocking: list[Rule]  # a finding of one of these keeps the document from the engines
    other: list[Rule]
    nesting: list[Rule]  # also checked over nested templates

    @classmethod
    def every(cls) -> RuleSet:
        rules = all_rules()
        return cls([r for r in rules if r.blocks_engines], [r for r in rules if not r.blocks_engines],
                   [r for r in rules if r.follows_nesting])


def safe(rule: Rule, doc: Document, ctx: Context) -> list[RawFinding]:
    try:
        return list(rule.check(doc, ctx))
    except Exception as exc:  # a rule bug must not hide the others' findings
        return [RawFinding(ENGINE_FAILURE.id, (), f"rule {rule.id} failed: {type(exc).__name__}: {exc}")]


def with_examples(doc: Document, ctx: Context, library: Library, examples: Examples,
                  options: Options) -> list[Context]:
    """The contexts a document is checked in: one per example environment of its entry (its parameters, then
    -P), else ``ctx`` alone."""
    return [replace(ctx, parameters={**env_parameters(library.doc(ex)), **options.parameters})
            for ex in examples.of(doc)] or [ctx]


def check(doc: Document, ctx: Context, rules: list[Rule], library: Library, examples: Examples,
          options: Options) -> Found:
    """``rules`` over the document (an entry's template with each of its examples)."""
    found: Found = []
    contexts = with_examples(doc, ctx, library, examples, options)
    era = release_rules(doc.abspath)
    for rule in rules:
        if doc.kind in rule.kinds and (era is None or rule.id in era):
            for each in contexts:
                found.extend((doc, raw) for raw in safe(rule, doc, each))
    return found


def blocked(found: Found, rules: list[Rule]) -> bool:
    """Whether a finding of these blocking rules keeps its document from the engines."""
    ids = {r.id for r in rules}
    return any(raw.rule_id in ids for _, raw in found)


def check_nested(parent: Document, ctx: Context, rules: list[Rule], library: Library, examples: Examples,
                 options: Options) -> Found:
    """The nesting rules over each template a HOT template nests, with what the parent passes it (a chain's
    networks and flavor reach the VNF template's ports and server), once per example of the parent."""
    if parent.kind != "hot":
        return []
    found: Found = []
    for each in with_examples(parent, ctx, library, examples, options):
        found.extend(nested(parent, each, rules, library, via=[]))
    return found


def nested(parent: Document, ctx: Context, rules: list[Rule], library: Library, via: list[str]) -> Found:
    if len(via) >= MAX_NESTING:
        return []
    found: Found = []
    for name, path, properties in hot.reached_templates(parent.data, os.path.dirname(parent.abspath)):
        child = library.doc(path)
        if child.kind != "hot" or child.problems:
            continue  # Heat's bundling (E1002) reports a nested template that cannot be read
        era = release_rules(child.abspath)
        here = [*via, f"{parent.path} resource '{name}'"]
        child_ctx = replace(ctx, parameters=hot.child_parameters(parent.data, properties, ctx.parameters),
                            outer=(parent.data, *ctx.outer))
        for rule in rules:
            if era is not None and rule.id not in era:
                continue
            for raw in safe(rule, child, child_ctx):
                found.append((child, replace(raw, message=f"{raw.message} (as used by {' via '.join(here)})")))
        found.extend(nested(child, child_ctx, rules, library, here))
    return found
