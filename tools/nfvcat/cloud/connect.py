"""Connecting to a cloud (clouds.yaml / OS_CLOUD, openstacksdk) and turning its failures into one-line errors."""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from nfvcat.core.errors import EXIT_ENGINE, EXIT_USAGE, UserError


def request_id(exc: Exception) -> str:
    rid = getattr(exc, "request_id", None)
    resp = getattr(exc, "response", None)
    if not rid and resp is not None:
        rid = resp.headers.get("x-openstack-request-id") or resp.headers.get("x-compute-request-id")
    return f" (request {rid})" if rid else ""


@contextmanager
def cloud_errors(what: str) -> Iterator[None]:
    """Unreachable cloud or auth failure -> exit 3; other API errors -> exit 3 with the API's message."""
    from keystoneauth1 import exceptions as ksa
    from openstack import exceptions as sdk

    try:
        yield
    except UserError:
        raise
    except (ksa.ConnectFailure, ksa.DiscoveryFailure, ksa.EndpointNotFound, ksa.connection.ConnectTimeout) as exc:
        raise UserError(f"{what}: cloud unreachable: {exc}", EXIT_ENGINE) from None
    except ksa.Unauthorized as exc:
        raise UserError(f"{what}: authentication failed: {exc}", EXIT_ENGINE) from None
    except sdk.ConfigException as exc:
        raise UserError(f"{what}: {exc}", EXIT_USAGE) from None
    except sdk.HttpException as exc:
        raise UserError(f"{what}: {exc.details or exc}{request_id(exc)}", EXIT_ENGINE) from None
    except sdk.SDKException as exc:
        raise UserError(f"{what}: {exc}", EXIT_ENGINE) from None


def connect(name: str | None) -> Any:
    import openstack

    cloud = name or os.environ.get("OS_CLOUD")
    if not cloud:
        raise UserError("no cloud: pass --os-cloud NAME or set OS_CLOUD (a clouds.yaml entry)")
    with cloud_errors(f"cloud {cloud}"):
        conn = openstack.connect(cloud=cloud)
        conn.authorize()
    return conn


def call(adapter: Any, method: str, path: str, what: str, ok: tuple[int, ...] = (200, 201, 202, 204),
         **kwargs: Any) -> Any:
    """A raw REST call through an openstacksdk proxy; raises a one-line UserError (exit 3) on other codes."""
    with cloud_errors(what):
        resp = adapter.request(path, method, raise_exc=False, **kwargs)
    if resp.status_code == 404 and 404 in ok:
        return None
    if resp.status_code not in ok:
        rid = resp.headers.get("x-openstack-request-id") or resp.headers.get("x-compute-request-id")
        try:
            body = resp.json()
            msg = _message(body)
        except ValueError:
            msg = resp.text[:300]
        # 400: the request (template, parameters, flavor) is wrong -> usage; anything else: the cloud's problem
        raise UserError(f"{what}: HTTP {resp.status_code}: {msg}" + (f" (request {rid})" if rid else ""),
                        EXIT_USAGE if resp.status_code == 400 else EXIT_ENGINE)
    try:
        return resp.json() if resp.status_code != 204 and resp.content else {}
    except ValueError:  # e.g. Heat's 202 to a stack update has no JSON body
        return {}


def _message(body: Any) -> str:
    if isinstance(body, dict):
        for key in ("error", "NeutronError", "badRequest", "itemNotFound", "conflictingRequest", "forbidden",
                    "message", "faultstring", "explanation"):
            if key in body:
                value = body[key]
                if isinstance(value, dict):
                    return str(value.get("message") or value.get("explanation") or value)
                return str(value)
    return str(body)[:300]
