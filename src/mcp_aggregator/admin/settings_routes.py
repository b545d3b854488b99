"""``GET /api/v1/aggregator/settings``: the effective configuration, value by value, with
where each came from; secrets shown as such, never their values."""

from __future__ import annotations

import re
from collections.abc import Iterator
from enum import Enum
from pathlib import Path
from typing import Any, Final, Literal

from fastapi import APIRouter
from pydantic import BaseModel, Field

from mcp_aggregator.admin.admin_gateway import GatewayDep
from mcp_aggregator.settings import Settings

router = APIRouter(prefix="/api/v1/aggregator", tags=["settings"])

SECRET_SHOWN: Final = "(secret)"
_SECRET_NAME = re.compile(r"token|secret|password|passphrase|api_?key|private|credential|authorization|keys$", re.I)
_SECRET_MAPS: Final = frozenset({"env", "headers", "security"})
_ENV_REFERENCE = re.compile(r"\$\{[A-Za-z_][A-Za-z0-9_]*(?::-[^}]*)?\}")
_LEFT_OUT: Final = frozenset({"servers"})
"""Each server has a view of its own (``GET /servers/{id}``); fifty of them would drown the rest."""

Source = Literal["file", "environment", "default"]


class SettingOut(BaseModel):
    path: str = Field(description="Dotted, lists indexed: serve.port, profiles[0].name")
    value: Any = Field(description=f"The value in effect; {SECRET_SHOWN!r} for a secret")
    source: Source = Field(
        description="file: the configuration file (or a command-line flag) set it; environment: "
        "the file names a ${VAR} filled from the environment; default: nobody set it"
    )
    secret: bool = False


class SettingsOut(BaseModel):
    file: str | None = Field(description="The configuration file read at start, if any")
    servers: int = Field(description="Servers configured in the file (each in its own view)")
    settings: list[SettingOut]


def _is_secret(name: str) -> bool:
    return bool(_SECRET_NAME.search(name))


def _leaves(value: Any, path: str, source: Source, secret: bool) -> Iterator[SettingOut]:
    """Pure: the leaves under ``value`` (a model, mapping, sequence or scalar)."""
    if isinstance(value, BaseModel):
        given = value.model_fields_set
        for name in type(value).model_fields:
            child_source: Source = "file" if source == "file" and name in given else "default"
            child = getattr(value, name)
            yield from _leaves(child, f"{path}.{name}" if path else name, child_source, secret or _is_secret(name))
        return
    if isinstance(value, dict) and value:
        for key, child in value.items():
            name = str(key)
            hide = secret or _is_secret(name) or path.rsplit(".", 1)[-1] in _SECRET_MAPS
            yield from _leaves(child, f"{path}.{name}", source, hide)
        return
    if isinstance(value, list | tuple) and value and any(isinstance(v, BaseModel | dict) for v in value):
        for index, child in enumerate(value):
            yield from _leaves(child, f"{path}[{index}]", source, secret)
        return
    yield _leaf(value, path, source, secret)


def _leaf(value: Any, path: str, source: Source, secret: bool) -> SettingOut:
    shown = _plain(value)
    if source == "file" and _ENV_REFERENCE.search(str(shown)):
        source = "environment"
    if secret and value not in (None, "", (), [], {}):
        return SettingOut(path=path, value=SECRET_SHOWN, source=source, secret=True)
    return SettingOut(path=path, value=shown, source=source, secret=secret)


def _plain(value: Any) -> Any:
    if isinstance(value, Enum):
        return value.value
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if value is None or isinstance(value, bool | int | float | str):
        return value
    return str(value)


def settings_view(settings: Settings) -> SettingsOut:
    """Pure: every effective setting but the servers', secrets as ``SECRET_SHOWN``."""
    given = settings.model_fields_set
    rows: list[SettingOut] = []
    for name in type(settings).model_fields:
        if name in _LEFT_OUT:
            continue
        source: Source = "file" if name in given else "default"
        rows.extend(_leaves(getattr(settings, name), name, source, _is_secret(name)))
    path = settings.source_path
    return SettingsOut(file=None if path is None else str(path), servers=len(settings.servers), settings=rows)


@router.get("/settings")
async def get_settings(gateway: GatewayDep) -> SettingsOut:
    """The effective configuration (servers aside), each value with its source: ``file``,
    ``environment`` (a ``${VAR}`` the file names) or ``default``. Tokens, keys, passwords
    and every ``env``/``headers`` value read ``(secret)``."""
    return settings_view(gateway.settings)
