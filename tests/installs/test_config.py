"""The ``registries:`` section: its default, replacing it, and the errors a user sees."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.settings.loader import settings_from_mapping


@pytest.mark.parametrize(
    ("registries", "message"),
    [
        ([{"name": "Acme", "url": "https://r.example"}], "registries[0].name: must match"),
        (
            [{"name": "acme", "url": "ftp://r.example"}],
            "registries[0].url: must be an absolute http(s) URL",
        ),
        (
            [{"name": "acme", "url": "https://a.example"}, {"name": "acme", "url": "https://b.example"}],
            "duplicate registry name 'acme'",
        ),
        ([{"name": "acme", "url": "https://a.example", "colour": "red"}], "registries[0].colour"),
    ],
)
def test_a_bad_registries_section_is_refused_naming_the_field(registries: list[dict[str, Any]], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_mapping({"registries": registries})
    assert message in str(caught.value)


def test_registries_default_to_the_official_one_and_can_be_replaced() -> None:
    assert [(r.name, r.url) for r in settings_from_mapping({}).registries] == [
        ("official", "https://registry.modelcontextprotocol.io")
    ]
    own = settings_from_mapping({"registries": [{"name": "corp", "url": "https://mcp.corp.example/"}]})
    assert [(r.name, r.url) for r in own.registries] == [("corp", "https://mcp.corp.example")]
