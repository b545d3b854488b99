"""``server.json`` validation: what parses, and the field an invalid document is refused for."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from mcp_aggregator.errors import EntryInvalidError
from mcp_aggregator.installs.server_json import EntryStatus, parse_item, parse_server_json
from tests.installs.local_registry import item, npm_memory, pypi_time, remote, with_secrets


def test_real_entries_parse_with_their_packages_and_inputs() -> None:
    memory = parse_server_json(npm_memory())
    assert memory.packages[0].registry_type == "npm"
    assert memory.packages[0].environment_variables[0].name == "MEMORY_FILE_PATH"
    keys = parse_server_json(with_secrets()).packages[0].environment_variables
    assert [(v.name, v.is_required, v.is_secret) for v in keys] == [
        ("WEATHER_API_KEY", True, True),
        ("REGION", True, False),
        ("UNITS", False, False),
    ]
    assert parse_server_json(pypi_time()).packages[0].package_arguments[0].key == "local-timezone"
    header = parse_server_json(remote("http://127.0.0.1:1/mcp")).remotes[0].headers[0]
    assert header.variables["api_key"].is_secret


def test_an_item_carries_the_official_status() -> None:
    parsed = parse_item(item(npm_memory(), status="deprecated", latest=False))
    assert parsed.official.status is EntryStatus.DEPRECATED
    assert parsed.official.is_latest is False


def _with(change: dict[str, Any]) -> dict[str, Any]:
    doc = npm_memory()
    doc["packages"][0].update(change)
    return doc


@pytest.mark.parametrize(
    ("document", "field"),
    [
        ({**npm_memory(), "name": "no-namespace"}, "name"),
        ({k: v for k, v in npm_memory().items() if k != "version"}, "version"),
        ({**npm_memory(), "packages": []}, "packages"),
        (_with({"identifier": ""}), "packages[0].identifier"),
        (_with({"registryType": None}), "packages[0].registryType"),
        (_with({"transport": {"type": "carrier-pigeon"}}), "packages[0].transport.type"),
        (_with({"environmentVariables": [{"description": "no name"}]}), "packages[0].environmentVariables[0].name"),
        (_with({"packageArguments": [{"type": "named"}]}), "packages[0].packageArguments[0].name"),
        (_with({"packageArguments": [{"type": "positional"}]}), "packages[0].packageArguments[0].valueHint"),
        ({**npm_memory(), "remotes": [{"type": "sse"}]}, "remotes[0].url"),
        ("not an object", "(document)"),
    ],
)
def test_an_invalid_server_json_is_refused_naming_the_field(document: Any, field: str) -> None:
    with pytest.raises(EntryInvalidError) as caught:
        parse_server_json(document)
    assert caught.value.field == field
    assert f"invalid server.json: {field}: " in str(caught.value)


def test_an_invalid_item_names_the_field_inside_the_server() -> None:
    broken = item({**npm_memory(), "version": ""})
    with pytest.raises(EntryInvalidError) as caught:
        parse_item(broken)
    assert caught.value.field == "version"


def test_a_time_without_an_offset_is_taken_as_utc() -> None:
    raw = item(npm_memory())
    raw["_meta"]["io.modelcontextprotocol.registry/official"]["updatedAt"] = "2026-11-01T10:00:00"
    updated = parse_item(raw).official.updated_at
    assert updated is not None and updated.utcoffset() == timedelta(0)
