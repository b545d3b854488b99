"""``facades:``: bad values are refused when the configuration is read, naming the field."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.facades.config import FacadeSettings
from mcp_aggregator.settings import settings_from_mapping

ALPHA = {"name": "alpha", "transport": "stdio", "command": "true"}


@pytest.mark.parametrize(
    ("facades", "extra", "message"),
    [
        ({"frequent": -1}, {}, "facades.frequent: Input should be greater than or equal to 0"),
        ({"frequent": "3"}, {}, "facades.frequent: Input should be a valid integer"),
        ({"frequent": 2.5}, {}, "facades.frequent: Input should be a valid integer"),
        ({"frequent": True}, {}, "facades.frequent: Input should be a valid integer"),
        ({"frequent": 3}, {"audit": {"enabled": False}}, "facades.frequent: counts the calls the audit trail"),
        ({"pinned": ["echo"]}, {}, "facades.pinned: [0]: must be a canonical server.tool name, got 'echo'"),
        ({"pinned": ["alpha.echo", "alpha.echo"]}, {}, "facades.pinned: [1]: 'alpha.echo' is pinned twice"),
        ({"pinned": ["alpha.echo", "beta.echo"]}, {}, "facades.pinned[1]: no server named 'beta' in servers"),
        ({"descriptions": {"search": "Find tools."}}, {}, "facades.descriptions: 'search' is not a facade"),
        ({"descriptions": {"tools": "  "}}, {}, "facades.descriptions.tools: a description must not be empty"),
        ({"refresh": 5}, {}, "facades.refresh: unknown field"),
        ({"frequent_refresh_secs": 0}, {}, "facades.frequent_refresh_secs: Input should be greater than 0"),
    ],
)
def test_a_bad_facades_section_is_refused_naming_its_field(
    facades: dict[str, Any], extra: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        settings_from_mapping({"servers": [ALPHA], "facades": facades, **extra})
    assert message in str(refused.value)


def test_a_good_facades_section_is_kept_as_written() -> None:
    settings = settings_from_mapping(
        {
            "servers": [ALPHA],
            "facades": {"pinned": ["alpha.echo"], "frequent": 3, "descriptions": {"tools": "Find any tool here."}},
        }
    )
    assert settings.facades == FacadeSettings(
        pinned=("alpha.echo",), frequent=3, descriptions={"tools": "Find any tool here."}
    )
    assert settings.facades.lists_tools


def test_by_default_no_tool_is_listed_beside_the_facades() -> None:
    assert not settings_from_mapping({}).facades.lists_tools
