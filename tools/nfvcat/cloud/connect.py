"""Connecting to a cloud (clouds.yaml / OS_CLOUD or an openrc's OS_* variables, through openstacksdk's config
loader) and turning its failures into one-line errors."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
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
    except ksa.connection.ConnectTimeout as exc:  # keystoneauth's message names the URL that did not answer
        raise UserError(f"{what}: no answer in time (--api-timeout, --timeout): {exc}", EXIT_ENGINE) from None
    except (ksa.ConnectFailure, ksa.DiscoveryFailure, ksa.EndpointNotFound) as exc:
        raise UserError(f"{what}: cloud unreachable: {exc}", EXIT_ENGINE) from None
    except ksa.Unauthorized as exc:
        raise UserError(f"{what}: authentication failed: {exc}", EXIT_ENGINE) from None
    except sdk.ConfigException as exc:
        raise UserError(f"{what}: {exc}", EXIT_USAGE) from None
    except sdk.HttpException as exc:
        raise UserError(f"{what}: {exc.details or exc}{request_id(exc)}", EXIT_ENGINE) from None
    except sdk.SDKException as exc:
        if _timed_out(exc, ksa.connection.ConnectTimeout):  # openstacksdk wraps keystoneauth's timeout
            raise UserError(f"{what}: no answer in time (--api-timeout, --timeout): {exc}", EXIT_ENGINE) from None
        raise UserError(f"{what}: {exc}", EXIT_ENGINE) from None


def _timed_out(exc: BaseException | None, timeout: type[BaseException]) -> bool:
    seen = 0
    while exc is not None and seen < 10:
        if isinstance(exc, timeout):
            return True
        exc, seen = exc.__cause__ or exc.__context__, seen + 1
    return False


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


DEFAULT_API_TIMEOUT = 60.0  # seconds, when neither --api-timeout nor openstacksdk's api_timeout says


def request_timeout(region: Any, api_timeout: float | None = None, limit: float | None = None) -> float:
    """How long one request to the cloud may take: ``api_timeout`` (--api-timeout), else openstacksdk's own
    ``api_timeout`` of the cloud (clouds.yaml, OS_API_TIMEOUT), else 60 s; never more than ``limit`` (the
    command's --timeout)."""
    configured = region.config.get("api_timeout")
    try:
        seconds = float(api_timeout or configured or DEFAULT_API_TIMEOUT)
    except (TypeError, ValueError):
        raise UserError(f"{describe(region)}: api_timeout {configured!r} is not a number of seconds") from None
    return min(seconds, limit) if limit else seconds


def endpoint(region: Any) -> str:
    """The identity endpoint a connection starts with (OS_AUTH_URL, clouds.yaml auth.auth_url)."""
    return str((region.config.get("auth") or {}).get("auth_url") or "no auth_url")


PASSWORD_AUTH = ("password", "v3password", "v2password")


def connect(name: str | None, api_timeout: float | None = None, limit: float | None = None,
            say: Callable[[str], None] | None = None) -> Any:
    """A connection, authorised, to the cloud ``cloud_config`` picks, each of its requests bounded by
    ``request_timeout``; ``say`` is told what it waits for. A request past its timeout is a one-line error
    naming the endpoint (exit 3)."""
    import openstack

    region = cloud_config(name)
    seconds = request_timeout(region, api_timeout, limit)
    region.config["api_timeout"] = seconds  # the keystoneauth session's timeout, for every request it makes
    auth = region.config.get("auth") or {}
    if region.config.get("auth_type", "password") in PASSWORD_AUTH and not auth.get("password"):
        raise UserError(f"{describe(region)}: no password: set OS_PASSWORD (source the openrc) or auth.password "
                        "in clouds.yaml (secure.yaml)")
    if say:
        say(f"waiting for {describe(region)}: authenticating at {endpoint(region)} "
            f"(each request gives up after {seconds:g} s)")
    with cloud_errors(describe(region)):
        conn = openstack.connection.Connection(config=region)
        _within(limit, conn.authorize, f"{describe(region)}: no answer from {endpoint(region)} within --timeout "
                                       f"{limit or 0:g} s")
    return conn


def _within(limit: float | None, work: Callable[[], Any], late: str) -> None:
    """``work()`` (its exceptions raised here), given at most ``limit`` seconds in all: keystoneauth's timeout
    is per request, and authorising makes several (version discovery, then the token)."""
    if not limit:
        work()
        return
    outcome: list[BaseException | None] = []

    def run() -> None:
        try:
            work()
            outcome.append(None)
        except BaseException as exc:  # handed to the caller's thread
            outcome.append(exc)

    thread = threading.Thread(target=run, daemon=True)  # a request still waiting ends with the process
    thread.start()
    thread.join(limit)
    if not outcome:
        raise UserError(late, EXIT_ENGINE)
    if outcome[0] is not None:
        raise outcome[0]


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
