"""Reading a configuration file (YAML, or Claude Desktop's ``mcpServers`` JSON) into ``Settings``."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.settings.settings import Settings

_INVALID_NAME_CHARS = re.compile(r"[^a-z0-9_-]+")


def load_settings(path: Path) -> Settings:
    """Parse ``path``; any problem raises ``ConfigError`` with one message naming the field."""
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read configuration file: {exc.strerror}", path=str(path)) from exc
    settings = parse_settings(text, source=str(path))
    settings.source_path = path
    return settings


def parse_settings(text: str, *, source: str = "<config>") -> Settings:
    try:
        raw = yaml.safe_load(text) if text.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        raise ConfigError(f"not valid YAML/JSON{where}", path=source) from exc
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ConfigError(f"the top level must be a mapping, got {type(raw).__name__}", path=source)
    return settings_from_mapping(raw)


def settings_from_mapping(raw: Mapping[str, Any]) -> Settings:
    data = dict(raw)
    if "mcpServers" in data:
        if "servers" in data:
            raise ConfigError("give either 'servers' or 'mcpServers', not both", path="mcpServers")
        data["servers"] = _from_claude_desktop(data.pop("mcpServers"))
    try:
        return Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(format_validation_error(exc)) from exc


def _from_claude_desktop(servers: Any) -> list[dict[str, Any]]:
    """Claude Desktop keys servers by name and infers the transport from the fields present."""
    if not isinstance(servers, dict):
        raise ConfigError("must be an object mapping server names to definitions", path="mcpServers")
    out: list[dict[str, Any]] = []
    for key, spec in servers.items():
        if not isinstance(spec, dict):
            raise ConfigError("must be an object", path=f"mcpServers.{key}")
        entry = {k: v for k, v in spec.items() if k != "type"}
        entry["name"] = claude_name(str(key))
        kind = str(spec.get("type", "")).lower()
        if "command" in spec:
            entry["transport"] = "stdio"
        elif kind == "sse":
            entry["transport"] = "sse"
        else:
            entry["transport"] = "http"
            if "url" in entry:
                entry["base_url"] = entry.pop("url")
        out.append(entry)
    return out


def claude_name(key: str) -> str:
    """Claude Desktop allows names like ``GitHub Tools``; map them onto ``^[a-z][a-z0-9_-]*$``."""
    name = _INVALID_NAME_CHARS.sub("-", key.strip().lower()).strip("-")
    if not name or not name[0].isalpha():
        name = f"s-{name}" if name else "server"
    return name


def format_validation_error(exc: ValidationError) -> str:
    """One line per problem: ``servers[2].base_url: required for transport http``."""
    lines = []
    for error in exc.errors():
        path = _format_loc(error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        if ": " in message and message.split(": ", 1)[0].replace("_", "").replace("/", "").isalnum():
            # A model-level check names the field itself; append it to the location.
            field, message = message.split(": ", 1)
            path = field if field.startswith("servers[") or not path else f"{path}.{field}"
        if error["type"] == "extra_forbidden":
            message = "unknown field"
        lines.append(f"{path}: {message}" if path else message)
    return "\n".join(lines)


def _format_loc(loc: tuple[int | str, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += f".{part}" if out else str(part)
    return out
