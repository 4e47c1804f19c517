"""Connecting to a cloud (clouds.yaml / OS_CLOUD or an openrc's OS_* variables, through openstacksdk's config
loader) and turning its failures into one-line errors."""

from __future__ import annotations

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


NO_CLOUD = ("no cloud: pass --os-cloud NAME, set OS_CLOUD (a clouds.yaml entry) or source an openrc file "
            "(OS_AUTH_URL, OS_USERNAME, OS_PROJECT_NAME, ...)")


def cloud_config(name: str | None) -> Any:
    """The cloud openstacksdk's config loader picks, in its own order: ``name`` (--os-cloud), else $OS_CLOUD (a
    clouds.yaml entry), else the OS_* variables of a sourced openrc (its ``envvars`` cloud), else the only cloud
    of clouds.yaml. A CloudRegion; a one-line error when none is configured, or clouds.yaml has several."""
    from openstack import config

    with cloud_errors(f"cloud {name}" if name else "cloud configuration"):
        loader = config.OpenStackConfig()
        if not name and loader.config_filename is None and loader.envvar_key not in loader.get_cloud_names():
            raise UserError(NO_CLOUD)  # no clouds.yaml, no OS_* variables: openstacksdk's empty 'defaults' cloud
        if not name and loader.default_cloud is None:
            raise UserError(f"{NO_CLOUD}; clouds.yaml has several: {', '.join(loader.get_cloud_names())}")
        return loader.get_one(cloud=name)


def describe(region: Any) -> str:
    """How errors name the cloud: its clouds.yaml name, or the openrc's OS_AUTH_URL."""
    if region.name == "envvars":
        return f"cloud of the OS_* variables ({region.config.get('auth', {}).get('auth_url') or 'no OS_AUTH_URL'})"
    return f"cloud {region.name}"


def connect(name: str | None) -> Any:
    """A connection, authorised, to the cloud ``cloud_config`` picks."""
    import openstack

    region = cloud_config(name)
    with cloud_errors(describe(region)):
        conn = openstack.connection.Connection(config=region)
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
