from __future__ import annotations

import re

from mcp_aggregator.search.implicit_needs import NeedMatcher
from mcp_aggregator.settings import load_settings, parse_settings
from tests.conftest import REPO


def test_the_readme_minimal_configuration_is_valid() -> None:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    match = re.search(r"## A minimal configuration.*?```yaml\n(.*?)```", text, re.S)
    assert match is not None
    settings = parse_settings(match.group(1))
    assert [(s.name, s.transport.value) for s in settings.servers] == [("memory", "stdio"), ("docs", "http")]


def test_the_configuration_reference_example_is_valid() -> None:
    text = (REPO / "docs" / "configuration.md").read_text(encoding="utf-8")
    match = re.search(r"## Every field.*?```yaml\n(.*?)```", text, re.S)
    assert match is not None
    settings = parse_settings(match.group(1))
    assert [s.name for s in settings.servers] == ["memory", "docs", "events", "books", "travel"]
    assert settings.aggregator.servers["memory"].query_tool == "search_nodes"
    needs = NeedMatcher(settings.search.implicit_needs or [])
    assert needs.needs_of("Book a table for tomorrow and save it to /tmp/plan.md") == [
        "get the current date and time",
        "write the content to a file on disk",
    ]


def test_the_demo_configuration_is_valid() -> None:
    settings = load_settings(REPO / "demo" / "aggregator.yaml")
    assert [s.name for s in settings.servers] == ["time", "git", "memory", "everything"]
