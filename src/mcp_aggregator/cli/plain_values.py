"""``PlainValues``: option values converted without pydantic when they are plain.

Typer 0.29 converts every option value, even an unset one, through a pydantic
``TypeAdapter``; importing pydantic for that is a fifth of a short command's run. The CLI's
options are strings, paths, numbers and lists of strings, so a value that is plainly one
of those (``"1.5"`` for a float, any text for a string) is converted here, and anything
else goes to Typer's own conversion, which also words every error. So a value converts to
what Typer would give it, and a bad one fails with Typer's message.

This reaches into Typer's internals (``_TyperParameter._runtime_param``); with a Typer
that lacks them, ``use_plain_values`` changes nothing and Typer converts as it always did.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args, get_origin

import typer
from typer.models import ParameterInfo

try:
    from typer._param_types import coerce_cli_path
    from typer.core import _TyperParameter
except ImportError:  # pragma: no cover - a Typer without pydantic conversion needs none of this
    _TyperParameter = None  # type: ignore[assignment,misc]

_INT = re.compile(r"[+-]?\d+")
_FLOAT = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")
_UNCONVERTED = object()
_PATH_FLAGS_OFF = {
    "exists": False,
    "writable": False,
    "resolve_path": False,
    "allow_dash": False,
    "path_type": None,
    "parser": None,
}
_NUMBER_LIMITS_OFF = {"min": None, "max": None, "clamp": False, "parser": None}

Leaf = Callable[[Any, Any, Any], Any]
"""Converts one value for a parameter in a context, or returns ``_UNCONVERTED``."""


def _flag(value: Any, param: Any, ctx: Any) -> Any:
    return value if isinstance(value, bool) else _UNCONVERTED


def _text(value: Any, param: Any, ctx: Any) -> Any:
    return value if isinstance(value, str) else _UNCONVERTED


def _integer(value: Any, param: Any, ctx: Any) -> Any:
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return int(value) if isinstance(value, str) and _INT.fullmatch(value) else _UNCONVERTED


def _real(value: Any, param: Any, ctx: Any) -> Any:
    if isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    return float(value) if isinstance(value, str) and _FLOAT.fullmatch(value) else _UNCONVERTED


def _path(value: Any, param: Any, ctx: Any) -> Any:
    if not isinstance(value, str) or not value:
        return _UNCONVERTED
    # Given a ``Path`` already, Typer's own path check runs without pydantic.
    return coerce_cli_path(Path(value), param.type_descriptor.parameter_info, path_type=Path, param=param, ctx=ctx)


def _unset(info: ParameterInfo, flags: dict[str, Any]) -> bool:
    return all(getattr(info, name, value) == value for name, value in flags.items())


def leaf_for(annotation: Any, info: ParameterInfo) -> Leaf | None:
    """The plain conversion of ``annotation`` under ``info``'s settings, or None (Typer's). Pure."""
    if annotation is bool and info.parser is None:
        return _flag
    if annotation is str and info.parser is None:
        return _text
    if annotation is int and _unset(info, _NUMBER_LIMITS_OFF):
        return _integer
    if annotation is float and _unset(info, _NUMBER_LIMITS_OFF):
        return _real
    if annotation is Path and _unset(info, _PATH_FLAGS_OFF):
        return _path
    return None


class PlainValues:
    """Stands in for Typer's runtime conversion of one parameter (its ``coerce``)."""

    def __init__(self, param: Any, leaf: Leaf, *, many: bool) -> None:
        self.param = param
        self.leaf = leaf
        self.many = many

    def coerce(self, value: Any, param: Any, ctx: Any) -> Any:
        if value is None:
            return () if param.multiple or param.nargs == -1 else None
        if self.many and isinstance(value, list | tuple):
            items = [self.leaf(item, param, ctx) for item in value]
            if all(item is not _UNCONVERTED for item in items):
                return items
        elif not self.many:
            converted = self.leaf(value, param, ctx)
            if converted is not _UNCONVERTED:
                return converted
        return self._typers().coerce(value, param=param, ctx=ctx)

    def _typers(self) -> Any:
        """Typer's own conversion, kept for this parameter from now on."""
        self.param._runtime_param = None
        return self.param.get_runtime_param()


def use_plain_values(command: Any) -> None:
    """Give ``command``'s parameters, and its subcommands', the plain conversion where it applies."""
    if _TyperParameter is None:
        return  # pragma: no cover
    # ``--help`` is made on first use and converted like any option (an unset one too).
    help_option = command.get_help_option(typer.Context(command))
    for param in [*command.params, *([help_option] if help_option is not None else [])]:
        if not isinstance(param, _TyperParameter) or getattr(param, "_runtime_param", _UNCONVERTED) is not None:
            continue
        annotation: Any = param.type_descriptor.annotation
        info = param.type_descriptor.parameter_info
        many = get_origin(annotation) is list and len(get_args(annotation)) == 1
        leaf = leaf_for(get_args(annotation)[0] if many else annotation, info)
        if leaf is not None:
            param._runtime_param = PlainValues(param, leaf, many=many)  # type: ignore[assignment]
    for sub in getattr(command, "commands", {}).values():
        use_plain_values(sub)
