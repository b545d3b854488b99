"""``Profile``: what one profile selects from the catalogue and how it shows it. Pure.

An item is in the profile when its server matches a ``servers`` glob, or its canonical name
matches a glob of its own kind (``tools``: ``server.tool``; ``prompts``: ``server.prompt``;
``resources``: ``server:uri``). Overrides (the global ones, then the profile's own on top,
field by field) change a tool's shown name, description and schema, and its arguments.
"""

from __future__ import annotations

import copy
import fnmatch
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import mcp_types as types

from mcp_aggregator.identity.client_identity import DEFAULT_PROFILE
from mcp_aggregator.identity.config import ProfileSettings, ToolOverride
from mcp_aggregator.settings.serve_settings import Exposure


def _globs(patterns: Sequence[str]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{fnmatch.translate(p)})" for p in patterns))


@dataclass(frozen=True)
class Override:
    """One tool's override, global and profile fields merged."""

    name: str | None = None
    description: str | None = None
    hide: Mapping[str, Any] = field(default_factory=dict)
    defaults: Mapping[str, Any] = field(default_factory=dict)

    @property
    def changes_arguments(self) -> bool:
        return bool(self.hide or self.defaults)

    def arguments(self, given: Mapping[str, Any] | None) -> dict[str, Any]:
        """The arguments the upstream receives: defaults for what is missing, hidden values always."""
        return {**self.defaults, **(given or {}), **copy.deepcopy(dict(self.hide))}

    def tool(self, tool: types.Tool) -> types.Tool:
        """The definition clients see (its ``name`` stays the upstream's: routing uses it)."""
        update: dict[str, Any] = {}
        if self.description is not None:
            update["description"] = self.description
        if self.changes_arguments:
            update["input_schema"] = self._schema(dict(tool.input_schema or {"type": "object"}))
        return tool.model_copy(update=update) if update else tool

    def _schema(self, schema: dict[str, Any]) -> dict[str, Any]:
        properties = dict(schema.get("properties") or {})
        required = [name for name in schema.get("required") or () if name not in self.hide]
        for name in self.hide:
            properties.pop(name, None)
        for name, value in self.defaults.items():
            prop = properties.get(name)
            properties[name] = {**(prop if isinstance(prop, dict) else {}), "default": value}
            if name in required:
                required.remove(name)
        out = {**schema, "properties": properties}
        if required:
            out["required"] = required
        else:
            out.pop("required", None)
        return out


def merged_overrides(global_: Sequence[ToolOverride], own: Sequence[ToolOverride]) -> dict[str, Override]:
    """Per canonical tool name: the profile's override fields over the global ones."""
    out: dict[str, Override] = {}
    for layer in (global_, own):
        for spec in layer:
            base = out.get(spec.tool, Override())
            out[spec.tool] = Override(
                name=spec.name if spec.name is not None else base.name,
                description=spec.description if spec.description is not None else base.description,
                hide={**base.hide, **spec.hide},
                defaults={k: v for k, v in {**base.defaults, **spec.defaults}.items() if k not in spec.hide},
            )
    return out


@dataclass(frozen=True)
class Profile:
    """A profile as the serve face uses it; ``whole``: the default profile (every item)."""

    name: str
    exposure: Exposure | None = None
    servers: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    prompts: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    overrides: Mapping[str, Override] = field(default_factory=dict)
    whole: bool = False
    description: str = ""

    @classmethod
    def of(cls, settings: ProfileSettings, global_overrides: Sequence[ToolOverride] = ()) -> Profile:
        return cls(
            name=settings.name,
            exposure=settings.exposure,
            servers=settings.servers,
            tools=settings.tools,
            prompts=settings.prompts,
            resources=settings.resources,
            overrides=merged_overrides(global_overrides, settings.overrides),
            description=settings.description,
        )

    @classmethod
    def default(cls, global_overrides: Sequence[ToolOverride] = ()) -> Profile:
        return cls(name=DEFAULT_PROFILE, overrides=merged_overrides(global_overrides, ()), whole=True)

    @cached_property
    def _server_globs(self) -> re.Pattern[str] | None:
        return _globs(self.servers)

    @cached_property
    def _kind_globs(self) -> dict[str, re.Pattern[str] | None]:
        return {"tool": _globs(self.tools), "prompt": _globs(self.prompts), "resource": _globs(self.resources)}

    def takes_server(self, server: str) -> bool:
        """Whether every item of ``server`` is in the profile."""
        return self.whole or (self._server_globs is not None and self._server_globs.fullmatch(server) is not None)

    def takes(self, kind: str, server: str, name: str) -> bool:
        """Whether an item (``kind``: tool, prompt or resource) of ``server`` is in the profile."""
        if self.takes_server(server):
            return True
        globs = self._kind_globs[kind]
        key = f"{server}:{name}" if kind == "resource" else f"{server}.{name}"
        return globs is not None and globs.fullmatch(key) is not None
