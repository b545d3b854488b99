"""``${VAR}`` expansion, done only when a connection is opened so secrets never get stored."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final

from mcp_aggregator.errors import ConfigError, EnvVarError
from mcp_aggregator.registry.redaction import arg_secrets, is_plain_path, url_secrets

SEALED_PREFIX = "sealed:"
_NAME: Final = r"[A-Za-z_][A-Za-z0-9_]*"
_VAR: Final = re.compile(rf"\$\{{({_NAME}|sealed:[A-Za-z0-9_=-]+)\}}")
"""``${NAME}``, or ``${sealed:TOKEN}``: a secret kept encrypted with the gateway's key
(``installs.SealedEnv`` opens it; plain environments never hold such a name)."""
_PLAIN_VAR: Final = re.compile(rf"\$\{{({_NAME})\}}")
_ONLY_REFERENCES: Final = re.compile(rf"(?:\$\{{(?:{_NAME}|sealed:[A-Za-z0-9_=-]+)\}})+")


def expanded(text: str, env: Mapping[str, str], missing: Callable[[str], Exception], *, sealed: bool = True) -> str:
    """``text`` with each ``${NAME}`` replaced by its value in ``env`` (and each
    ``${sealed:TOKEN}`` too when ``sealed``; else such a reference stays as written). Raises
    ``missing(name)`` for the first one ``env`` does not hold. The one expansion of the
    gateway: every caller words its own error."""

    def replace(match: re.Match[str]) -> str:
        name = match.group(1)
        if name not in env:
            raise missing(name)
        return env[name]

    return (_VAR if sealed else _PLAIN_VAR).sub(replace, text)


def expand_value(value: str, env: Mapping[str, str], *, server: str, field: str) -> str:
    """Replace each ``${VAR}``; an unset variable raises ``EnvVarError`` naming server and field."""

    def missing(name: str) -> EnvVarError:
        shown = f"{SEALED_PREFIX}... (a sealed secret this gateway's key does not open)"
        return EnvVarError(server, field, shown if name.startswith(SEALED_PREFIX) else name)

    return expanded(value, env, missing)


def expand_mapping(values: Mapping[str, str], env: Mapping[str, str], *, server: str, field: str) -> dict[str, str]:
    return {key: expand_value(val, env, server=server, field=f"{field}.{key}") for key, val in values.items()}


def expand_setting(text: str, env: Mapping[str, str], where: str) -> str:
    """A gateway setting (a session key, a client's token) with each ``${NAME}`` taken from
    the environment; raises ``ConfigError`` at ``where`` for one not set."""

    def missing(name: str) -> ConfigError:
        return ConfigError(f"${{{name}}} is not set in the environment", path=where)

    return expanded(text, env, missing, sealed=False)


def only_references(text: str) -> bool:
    """Whether ``text`` is nothing but ``${...}`` references (a value that holds no secret itself)."""
    return _ONLY_REFERENCES.fullmatch(text) is not None


MIN_SECRET_LENGTH = 6
"""Shorter values are not scrubbed from text: hiding every ``on`` or ``1`` would garble
messages and protect nothing a guess would not find."""


def secret_values(connection_config: Mapping[str, Any], env: Mapping[str, str]) -> set[str]:
    """Every value of a server's connection config that must not appear in text.

    That is what redaction hides (env values but plain paths, header values, the secret
    parts of args: see ``redact_args``; a path is not a secret), both as written
    and with their ``${VAR}`` references expanded, and the value of every ``${VAR}``
    referenced anywhere in the config (URLs included). ``connection_config`` is the stored
    form (``ServerConfig.connection_config()`` or a registry record's).
    """
    found: set[str] = set()

    def walk(value: Any, secret: bool) -> None:
        if isinstance(value, str):
            for name in _VAR.findall(value):
                if name in env:
                    found.add(env[name])
            if "://" in value:
                found.update(url_secrets(_VAR.sub(lambda m: env.get(m.group(1), m.group(0)), value)))
            if secret:
                found.add(value)
                found.add(_VAR.sub(lambda m: env.get(m.group(1), m.group(0)), value))
        elif isinstance(value, Mapping):
            for key, item in value.items():
                walk(item, secret or key in ("env", "headers", "security", "client_secret"))
        elif isinstance(value, list | tuple):
            for item in value:
                walk(item, secret)

    for key, value in connection_config.items():
        if key == "args" and isinstance(value, list | tuple):
            for hidden in arg_secrets(value):
                walk(hidden, True)
            walk(value, False)
        elif key == "env" and isinstance(value, Mapping):
            for item in value.values():
                walk(item, not is_plain_path(item))
        else:
            walk(value, key in ("env", "headers", "security"))
    return {value for value in found if len(value) >= MIN_SECRET_LENGTH}


class SecretScrubber:
    """Replaces known secret values in text with ``***`` (longest first, so a value that
    contains another is hidden whole)."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        unique = {v for v in values if len(v) >= MIN_SECRET_LENGTH}
        self._values = sorted(unique, key=len, reverse=True)
        self._pattern = re.compile("|".join(re.escape(v) for v in self._values)) if self._values else None

    def __bool__(self) -> bool:
        return self._pattern is not None

    def __call__(self, text: str) -> str:
        if self._pattern is None or not text:
            return text
        return self._pattern.sub("***", text)
