"""``InputValues``: resolving an entry's inputs from what the user gave, collecting every problem.

The order for one input: the value the user gave, else the entry's ``value`` (a template
whose ``{name}`` parts are filled from the user's arguments or the variable's default),
else its ``default``. A required input left without a value is a problem, as is a value
outside ``choices``; all problems are raised together, so one attempt names them all.
Secret values leave here sealed (``seal``), unless they are only ``${VAR}`` references.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping

from mcp_aggregator.errors import InstallInputError, MissingInput
from mcp_aggregator.installs.server_json import Input
from mcp_aggregator.settings.env_expansion import only_references

_TEMPLATE_VAR = re.compile(r"\{([A-Za-z_][A-Za-z0-9_.-]*)\}")


class InputValues:
    def __init__(self, arguments: Mapping[str, str], seal: Callable[[str], str]) -> None:
        self._arguments = arguments
        self._seal = seal
        self._problems: list[str] = []
        self._missing: list[MissingInput] = []
        self.secret_keys: set[str] = set()
        """Argument keys whose values went into a secret: never to be stored in the clear."""

    @property
    def arguments(self) -> Mapping[str, str]:
        return self._arguments

    def given(self, key: str) -> str | None:
        return self._arguments.get(key)

    def problem(self, text: str) -> None:
        self._problems.append(text)

    def raise_problems(self) -> None:
        """Raise ``InstallInputError`` listing every problem found so far, if any."""
        if self._problems:
            raise InstallInputError(self._problems, self._missing)

    def resolve(self, item: Input, given: str | None, *, label: str, field: str, key: str) -> str | None:
        """The value for ``item`` (sealed if secret), or None when it is optional and unset;
        a required one left unset is missing as ``key`` of the request's ``field``."""
        if given is not None:
            value: str | None = given
            secret = item.is_secret
        elif item.value is not None:
            return self.template(item.value, item.variables, label=label, secret=item.is_secret)
        else:
            value, secret = item.default, item.is_secret
        if value is None:
            if item.is_required:
                self.problem(f"{label} is required" + _about(item))
                self._missing.append(_missing(field, key, item, secret=item.is_secret))
            return None
        if item.choices and value not in item.choices:
            self.problem(f"{label} must be one of {', '.join(item.choices)}")
            return None
        return self._sealed(value) if secret else value

    def template(self, text: str, variables: Mapping[str, Input], *, label: str, secret: bool) -> str:
        """``text`` with each ``{name}`` filled; a secret variable makes the whole value secret."""
        secret = secret or bool(secret_variables(text, variables))

        def fill(match: re.Match[str]) -> str:
            name = match.group(1)
            variable = variables.get(name, Input(is_required=True))
            given = self._arguments.get(name)
            if given is not None and secret:
                self.secret_keys.add(name)
            value = given if given is not None else variable.default
            if value is None:
                if variable.is_required or name not in variables:
                    self.problem(f"{label}: variable {name!r} is required" + _about(variable))
                    self._missing.append(_missing("arguments", name, variable, secret=secret))
                return ""
            if variable.choices and value not in variable.choices:
                self.problem(f"{label}: variable {name!r} must be one of {', '.join(variable.choices)}")
            return value

        filled = _TEMPLATE_VAR.sub(fill, text)
        return self._sealed(filled) if secret else filled

    def _sealed(self, value: str) -> str:
        if only_references(value):
            return value
        return self._seal(value)


def secret_variables(text: str, variables: Mapping[str, Input]) -> list[str]:
    """The secret variables the template ``text`` uses."""
    return [name for name in _TEMPLATE_VAR.findall(text) if name in variables and variables[name].is_secret]


def _missing(field: str, key: str, item: Input, *, secret: bool) -> MissingInput:
    return MissingInput(field, key, item.description, secret, tuple(item.choices or ()))


def _about(variable: Input) -> str:
    return f" ({variable.description})" if variable.description else ""
