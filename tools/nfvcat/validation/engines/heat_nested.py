"""Nested stacks validated strictly, like the top level: Heat validates them lax, so a wrong value in a nested
template would only fail at create time. A parameter of a nested stack whose value is not known offline (it
comes from a resource not created yet, or from a value nfvcat invented) gets an invented value too."""

from __future__ import annotations

from typing import Any

from nfvcat.validation.engines import heat_values
from nfvcat.validation.engines.heat_state import STATE


def _values_of_uncreated(res: Any) -> set[str]:
    """Properties of a template resource whose value depends on resources not created yet (Heat's own
    test, Properties._find_deps_any_in_init): Heat skips validating such values at the top level."""
    from heat.engine import function

    data = getattr(res.properties, "data", {}) or {}
    return {name for name, value in data.items()
            if any(dep.action == dep.INIT for dep in function.dependencies(value))}


def _values_of_invented(res: Any) -> set[str]:
    """Properties of a template resource whose value reads a parameter of its stack that nfvcat gave
    an invented value: the child's parameter has no real value either, so it is invented for the child
    (its own constraints and uses), and findings that depend on it say so."""
    invented = STATE["invented_by_stack"].get(res.stack.name) or {}
    data = getattr(res.properties, "data", {}) or {}
    if not invented or not isinstance(data, dict):
        return set()
    return {name for name, value in data.items() if heat_values.get_params(value) & set(invented)}


def validate_nested_strictly(self: Any) -> None:
    """Heat's StackResource.validate_nested_stack, but strict like the top level: Heat validates nested
    stacks lax, so a wrong value in a nested template would only fail at create time. Values that come
    from parent resources not yet created are given placeholders, as the top level skips them."""
    from heat.common import exception
    from heat.engine import template

    try:
        params = self.child_params()
        child_tpl = self.child_template()  # a dict for a template resource, a Template for a group
        unknown = _values_of_uncreated(self) | _values_of_invented(self)
        nested_name = f"{self.stack.name}-{self.name}"
        if unknown and isinstance(params, dict):  # '' until the parent's resources exist: a real value
            child = child_tpl if isinstance(child_tpl, template.Template) else template.Template(
                child_tpl, files=self.stack.t.files)
            schemata = child.param_schemata()
            invented = STATE["invented_by_stack"].setdefault(nested_name, {})
            avoid = STATE.get("avoid", {}).get(nested_name, {})  # a second round tries other values
            for name in unknown & set(schemata):
                value, fits = heat_values.invent_judged(
                    name, schemata[name], child.t, heat_values.classes(self.stack.env, self.stack.t.files),
                    self.context, avoid.get(name, heat_values.NOTHING))
                invented[name] = params[name] = value
                STATE["nested_invented"].setdefault(str(self.template_url), {})[name] = params[name]
                if not fits:
                    STATE["unfit"].add((str(self.template_url), name))
        nested = self._parse_nested_stack(nested_name, child_tpl, params)
        # A group builds its members' template from its own resolved properties: values from resources
        # not created yet are '' there and invented values are no user's, so such members are checked as
        # Heat checks nested stacks (lax: properties known and required, not their values).
        nested.strict_validate = self.stack.strict_validate and not (
            unknown and isinstance(child_tpl, template.Template))
        nested.validate()
    except AssertionError:
        raise
    except Exception as ex:
        raise exception.StackValidationFailed(
            error=ex, path=[self.stack.t.RESOURCES, f"{self.name}<{self.template_url}>"]) from None
