"""``ServerJson``: one MCP Registry entry (``server.json``) and the v0.1 API's wrapping of it.

The fields follow the registry's schema (``docs/reference/server-json/server.schema.json``
of ``modelcontextprotocol/registry``); fields this gateway does not use (icons, repository,
``_meta`` of the publisher) are accepted and ignored, so a newer schema still parses.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic.alias_generators import to_camel

from mcp_aggregator.errors import EntryInvalidError

OFFICIAL_META = "io.modelcontextprotocol.registry/official"
NAME_PATTERN = re.compile(r"^[a-zA-Z0-9.-]+/[a-zA-Z0-9._-]+$")


class _Model(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="ignore", frozen=True)


class Input(_Model):
    """A value the user may (or must) give: an environment variable, header, argument or
    a ``{variable}`` of one of their templates."""

    description: str | None = None
    is_required: bool = False
    is_secret: bool = False
    format: str | None = None
    value: str | None = None
    """A fixed value or a template whose ``{name}`` parts come from ``variables``."""
    default: str | None = None
    choices: tuple[str, ...] | None = None
    variables: dict[str, Input] = Field(default_factory=dict)


class KeyValueInput(Input):
    """An environment variable or a header."""

    name: str = Field(min_length=1)


class Argument(Input):
    """A command-line argument: ``positional`` (named by its ``valueHint``) or ``named``
    (``--flag``, followed by its value if it has one)."""

    type: Literal["positional", "named"]
    name: str | None = None
    value_hint: str | None = None
    is_repeated: bool = False

    @model_validator(mode="after")
    def _named_has_name(self) -> Argument:
        if self.type == "named" and not self.name:
            raise ValueError("name: required for a named argument")
        if self.type == "positional" and self.value is None and not self.value_hint:
            raise ValueError("valueHint: required for a positional argument without a value")
        return self

    @property
    def key(self) -> str:
        """What the user calls it in ``--arg KEY=VALUE``: the flag without dashes, or the hint."""
        if self.type == "named":
            assert self.name is not None
            return self.name.lstrip("-")
        return self.value_hint or ""


class PackageTransport(_Model):
    type: Literal["stdio", "streamable-http", "sse"]
    url: str | None = None
    headers: tuple[KeyValueInput, ...] = ()


class Package(_Model):
    registry_type: str = Field(min_length=1)
    """npm, pypi, oci, nuget, mcpb (others are refused at install, the type named)."""
    registry_base_url: str | None = None
    identifier: str = Field(min_length=1)
    version: str | None = None
    file_sha256: str | None = None
    runtime_hint: str | None = None
    transport: PackageTransport = PackageTransport(type="stdio")
    runtime_arguments: tuple[Argument, ...] = ()
    package_arguments: tuple[Argument, ...] = ()
    environment_variables: tuple[KeyValueInput, ...] = ()


class Remote(_Model):
    type: Literal["streamable-http", "sse"]
    url: str = Field(min_length=1)
    headers: tuple[KeyValueInput, ...] = ()
    variables: dict[str, Input] = Field(default_factory=dict)


class ServerJson(_Model):
    name: str
    description: str | None = None
    title: str | None = None
    version: str = Field(min_length=1)
    website_url: str | None = None
    packages: tuple[Package, ...] = ()
    remotes: tuple[Remote, ...] = ()

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not NAME_PATTERN.fullmatch(value):
            raise ValueError(f"must be namespace/name (e.g. io.github.user/server), got {value!r}")
        return value

    @model_validator(mode="after")
    def _runs_somehow(self) -> ServerJson:
        if not self.packages and not self.remotes:
            raise ValueError("packages: an entry needs at least one package or remote")
        return self


class EntryStatus(StrEnum):
    ACTIVE = "active"
    DEPRECATED = "deprecated"
    DELETED = "deleted"


class OfficialMeta(_Model):
    """``_meta["io.modelcontextprotocol.registry/official"]`` of a v0.1 answer."""

    status: EntryStatus = EntryStatus.ACTIVE
    published_at: datetime | None = None
    updated_at: datetime | None = None
    is_latest: bool = True

    @field_validator("published_at", "updated_at")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        # A time without an offset is taken as UTC: the registry database wants aware times.
        return value.replace(tzinfo=UTC) if value is not None and value.tzinfo is None else value


class RegistryItem(_Model):
    """One item of a v0.1 answer: the ``server`` and what the registry says about it."""

    server: ServerJson
    official: OfficialMeta = OfficialMeta()

    @model_validator(mode="before")
    @classmethod
    def _unwrap_meta(cls, data: Any) -> Any:
        if isinstance(data, dict) and "_meta" in data:
            meta = data.get("_meta") or {}
            official = meta.get(OFFICIAL_META) if isinstance(meta, dict) else None
            data = {k: v for k, v in data.items() if k != "_meta"}
            if official is not None:
                data["official"] = official
        return data


def parse_server_json(data: Any) -> ServerJson:
    """A ``server.json`` document, validated; raises ``EntryInvalidError`` naming the field."""
    try:
        return ServerJson.model_validate(data)
    except ValidationError as exc:
        raise _invalid(exc) from exc


def parse_item(data: Any) -> RegistryItem:
    """One v0.1 item (``{"server": ..., "_meta": ...}``); raises ``EntryInvalidError``."""
    try:
        return RegistryItem.model_validate(data)
    except ValidationError as exc:
        raise _invalid(exc, strip="server") from exc


def _invalid(exc: ValidationError, *, strip: str | None = None) -> EntryInvalidError:
    err = exc.errors()[0]
    loc = list(err["loc"])
    if strip is not None and loc[:1] == [strip]:
        loc = loc[1:]
    msg = err["msg"].removeprefix("Value error, ")
    head, sep, rest = msg.partition(": ")
    if sep and " " not in head and head.isidentifier():
        loc, msg = [*loc, head], rest
    return EntryInvalidError(field_path(loc) or "(document)", msg)


def field_path(loc: list[int | str]) -> str:
    """``["packages", 0, "registryType"]`` -> ``packages[0].registryType``."""
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out
