"""E1003: a parameter carrying a secret must be hidden and have no default.

What a parameter carries is decided by where its ``get_param`` lands: a property that holds a secret
(``admin_pass``, ``password``, ``psk``, a private key, a nested template's secret parameter, a Barbican
secret's ``payload``), or a line of user data or software config that writes a password, a PSK or a
private key (through ``str_replace`` or ``list_join``). Otherwise its name decides, unless it only feeds
properties that name or point at something (``*_ref``, ``*_name``, ``*_type``): a Barbican secret's
reference is not the secret.
A name is judged by its head word: ``vpn_psk`` and ``admin_password`` are secrets, ``secret_type``,
``secret_ref`` and ``key_name`` are not.

It is the catalog's policy, not Heat's or the cloud's: it holds for the templates of a catalog entry (the
files under an entry.yaml), not for a template outside any entry (someone else's, validated by path), which
Heat and the cloud take with a default password.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nfvcat import catalog
from nfvcat.core import hot
from nfvcat.core.documents import Document
from nfvcat.core.findings import RawFinding
from nfvcat.validation.rules.base import Context, Rule

SECRET_WORDS = frozenset({"password", "passwd", "pass", "pwd", "passphrase", "psk", "secret", "secrets",
                          "token"})
KEY_QUALIFIERS = frozenset({"private", "secret", "shared", "preshared", "psk", "api", "encryption"})
# Head words of properties that name or point at something (a secret's reference, a key pair's name, a
# secret's type): a parameter fed only into such properties carries no secret, whatever its name.
REFERENCE_WORDS = frozenset({"ref", "refs", "id", "ids", "name", "type", "url", "uri", "href", "uuid", "length",
                             "size", "ttl", "algorithm", "mode", "expiration"})
# Text around a value in user data or a script that says the value is a secret.
SECRET_TEXT = re.compile(r"passw(or)?d|passphrase|\bpsk\b|secrets?\b|private[ _-]?key|pre[_-]?shared|chpasswd"
                         r"|\btoken\b", re.I)


def _words(name: str) -> list[str]:
    return [w.lower() for w in re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", name) if w]


def secret_name(name: str) -> bool:
    """A name whose head word (the last one) names a secret: 'admin_pass', 'ipsecPsk', 'ssh_private_key'."""
    words = _words(name)
    if not words:
        return False
    if words[-1] in SECRET_WORDS:
        return True
    return words[-1] == "key" and bool(KEY_QUALIFIERS & set(words[:-1]))


def secret_property(resource_type: str, key: str) -> bool:
    return secret_name(key) or (key == "payload" and resource_type.startswith("OS::Barbican::"))


@dataclass(frozen=True)
class Sink:
    where: tuple[Any, ...]  # key path of the property the parameter lands in
    secret: bool
    reference: bool = False  # the property names or points at something: no secret lands there


def _param(value: Any) -> str | None:
    if isinstance(value, dict) and len(value) == 1 and "get_param" in value:
        ref = value["get_param"]
        ref = ref[0] if isinstance(ref, list) and ref else ref
        return ref if isinstance(ref, str) else None
    return None


_KEY_BEFORE = re.compile(r"([A-Za-z][A-Za-z0-9]*(?: [A-Za-z][A-Za-z0-9]*)?)[^A-Za-z0-9]*$")


def _key_before(text: str) -> str:
    """The word (or space-separated pair) just before a value: the key or option it is given to
    ('"password": "', '--os-password ', 'PRIVATE KEY-----' on the line above), not the words before that
    ('"passwordCredentials": {"username": "' gives 'username')."""
    lines = [ln for ln in text.splitlines() if ln.strip()] if text.endswith("\n") else text.splitlines()
    match = _KEY_BEFORE.search(lines[-1]) if lines else None
    return match.group(1) if match else ""


def _context(template: Any, token: str, others: list[str]) -> str:
    """What a str_replace template says about ``token``: the key before each of its occurrences, and the
    rest of the line when it is the only value substituted there ('echo "$TK" > /etc/ipsec.secrets')."""
    if not isinstance(template, str) or not token:
        return token
    out = [token]
    for line in template.splitlines():
        if token not in line:
            continue
        parts = line.split(token)
        out.extend(_key_before(part) for part in parts[:-1])
        if not any(o in line for o in others if o != token and token not in o):
            out.append(parts[-1])
    return "\n".join(out)


def _sinks(value: Any, where: tuple[Any, ...], rtype: str, key: str, text: str,
           out: dict[str, list[Sink]]) -> None:
    name = _param(value)
    if name is not None:
        secret = secret_property(rtype, key) or bool(SECRET_TEXT.search(text))
        reference = not secret and not text and bool(_words(key)) and _words(key)[-1] in REFERENCE_WORDS
        out.setdefault(name, []).append(Sink(where, secret, reference))
        return
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) in hot.STR_REPLACE:
        args = next(iter(value.values()))
        args = args if isinstance(args, dict) else {}
        template, params = args.get("template"), args.get("params")
        _sinks(template, where, rtype, key, text, out)
        tokens = [str(t) for t in params] if isinstance(params, dict) else []
        for token, sub in (params.items() if isinstance(params, dict) else ()):
            _sinks(sub, where, rtype, key, _context(template, str(token), tokens), out)
        return
    if isinstance(value, dict) and len(value) == 1 and next(iter(value)) == "list_join":
        args = value["list_join"]
        items = args[1] if isinstance(args, list) and len(args) > 1 and isinstance(args[1], list) else []
        for i, item in enumerate(items):
            before = items[i - 1] if i > 0 and isinstance(items[i - 1], str) else ""
            after = items[i + 1] if i + 1 < len(items) and isinstance(items[i + 1], str) else ""
            following = items[i + 2] if i + 2 < len(items) else None
            alone = "\n" in after or not (following is None or isinstance(following, str))
            around = _key_before(before) + ("\n" + after.split("\n", 1)[0] if alone else "")
            _sinks(item, where, rtype, key, around, out)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            inner = key if k in hot.FUNCTIONS else str(k)
            _sinks(v, where if k in hot.FUNCTIONS else (*where, k), rtype, inner, text, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _sinks(v, (*where, i), rtype, key, text, out)


def sinks(data: Any) -> dict[str, list[Sink]]:
    """Every parameter's landing places in the resources' properties."""
    out: dict[str, list[Sink]] = {}
    for name, body in hot.resources(data):
        rtype = str(body.get("type", ""))
        for key, value in hot.props(body).items():
            _sinks(value, ("resources", name, "properties", key), rtype, str(key), "", out)
    return out


class SecretParameter(Rule):
    id = "E1003"
    shortdesc = "A secret parameter is not hidden or has a default"
    description = ("A parameter of a catalog entry's template that carries a secret must be `hidden: true`, so "
                   "Heat masks it in stack show and events, and must have no default, so no shared secret ships "
                   "in the catalog. It is the catalog's policy, not Heat's: a template outside any entry (no "
                   "entry.yaml above it) is not held to it, as Heat and the cloud take such a parameter. What it "
                   "carries is decided by what it feeds: a secret property (admin_pass, password, psk, "
                   "private keys, a nested template's secret parameter, an OS::Barbican::Secret payload) or "
                   "a password, PSK or private-key line of user data or a script it is substituted into "
                   "(str_replace, list_join). Otherwise the name's head word decides (so `secret_type`, "
                   "`secret_ref` and `key_name` are not secrets), unless the parameter only feeds properties "
                   "that name or point at something (`*_ref`, `*_name`, `*_type`), as a Barbican reference "
                   "does.")
    source_url = "https://docs.openstack.org/heat/latest/template_guide/hot_spec.html#parameters-section"
    kinds = ("hot",)

    def check(self, doc: Document, ctx: Context) -> Iterator[RawFinding]:
        params = doc.data.get("parameters")
        if not isinstance(params, dict) or catalog.entry_of(Path(doc.abspath)) is None:
            return
        fed = sinks(doc.data)
        for name, spec in params.items():
            if not isinstance(spec, dict):
                continue
            landings = fed.get(str(name), [])
            secret = [s for s in landings if s.secret]
            if secret:
                what = f"parameter '{name}' feeds a secret ({'.'.join(map(str, secret[0].where))})"
            elif secret_name(str(name)) and not (landings and all(s.reference for s in landings)):
                what = f"secret parameter '{name}'"
            else:
                continue
            if spec.get("hidden") is not True:
                yield self.finding(("parameters", name), f"{what}: it must be 'hidden: true'")
            if "default" in spec:
                yield self.finding(("parameters", name, "default"), f"{what}: it must not have a default")
