"""Which errors mean "the cloud said no" or "there is no cloud", as opposed to a template error: a resource
whose validation raises one is checked template-only and reported as not validated offline (E0009)."""

from __future__ import annotations

from typing import Any

from nfvcat.validation.engines.heat_state import STATE

# Heat's own exceptions that mean "the cloud said no" or "there is no cloud", as opposed to a template error.
_HEAT_CLOUD_ERRORS = ("AuthorizationFailure", "MissingCredentialError", "NotAuthenticated", "Forbidden",
                      "ClientNotAvailable", "KeystoneServiceNameConflict", "ResourceTypeUnavailable")


def client_plugins() -> list[Any]:
    from heat.engine import clients

    mgr = clients._mgr
    return [mgr[name].plugin for name in mgr.names()] if mgr else []


def cloud_error_types() -> tuple[type[BaseException], ...]:
    """The exceptions a cloud look-up raises: those of every client Heat's client plugins declare
    (novaclient, neutronclient, keystoneauth...), Heat's own authentication errors, connection errors
    and RPC failures. Nothing else is taken for "needs a cloud"."""
    import inspect

    import oslo_messaging
    import requests
    from heat.common import exception

    found: list[type[BaseException]] = [getattr(exception, name) for name in _HEAT_CLOUD_ERRORS]
    found += [requests.exceptions.ConnectionError, oslo_messaging.MessagingException, ConnectionError]
    for plugin in client_plugins():
        modules = getattr(plugin, "exceptions_module", None)
        for module in modules if isinstance(modules, list) else [modules] if modules else []:
            if module is exception:  # Heat's own: template errors among them
                continue
            found += [c for c in vars(module).values()
                      if inspect.isclass(c) and issubclass(c, Exception) and not issubclass(c, exception.HeatException)]
    return tuple(dict.fromkeys(found))


def cloud_cause(exc: BaseException) -> BaseException | None:
    """The cloud error behind ``exc``, if any: Heat wraps them (``StackValidationFailed`` naming the
    original type, or raised while handling it, as OS::Heat::Stack does for a remote region)."""
    errors = STATE["cloud_errors"]
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, errors):
            return current
        wrapped = getattr(current, "error", None)
        if isinstance(wrapped, str) and wrapped in {t.__name__ for t in errors if t.__module__.startswith(
                ("heat.common.exception", "keystoneauth1"))}:
            return current
        current = current.__cause__ or current.__context__
    return None
