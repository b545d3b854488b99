"""``${VAR}`` expansion, done only when a connection is opened so secrets never get stored."""

from __future__ import annotations

import re
from collections.abc import Mapping

from mcp_aggregator.errors import EnvVarError

_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def expand_value(value: str, env: Mapping[str, str], *, server: str, field: str) -> str:
    """Replace each ``${VAR}``; an unset variable raises ``EnvVarError`` naming server and field."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise EnvVarError(server, field, name)
        return env[name]

    return _VAR.sub(replace, value)


def expand_mapping(
    values: Mapping[str, str], env: Mapping[str, str], *, server: str, field: str
) -> dict[str, str]:
    return {key: expand_value(val, env, server=server, field=f"{field}.{key}") for key, val in values.items()}
