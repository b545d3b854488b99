from __future__ import annotations

from typing import Any

import pytest

from mcp_aggregator.search.tool_doc import ToolDoc, is_latin

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "Search keywords"}, "maxResults": {"type": "number"}},
}


@pytest.mark.parametrize(
    ("schema", "params"),
    [
        (SCHEMA, {"query": "Search keywords", "maxResults": ""}),
        ({}, {}),
        ({"properties": "junk"}, {}),
        ({"properties": {"a": "not a dict", "b": {"description": 3}}}, {"a": "", "b": ""}),
    ],
)
def test_parameters_map_names_to_descriptions_and_tolerate_odd_schemas(
    schema: dict[str, Any], params: dict[str, str]
) -> None:
    assert ToolDoc("s.t", "s", "t", input_schema=schema).parameters() == params


@pytest.mark.parametrize(
    ("description", "server_description", "dense"),
    [
        ("Search the web.", "Bing search", "bing cn / bing search: Search the web."),
        ("使用必应搜索指定的关键词", "Bing search", "bing cn / bing search: query, max results. Bing search"),
        ("", "一个中文必应搜索工具", "bing cn / bing search: query, max results"),
    ],
)
def test_dense_text_falls_back_to_parameters_when_the_description_is_not_latin(
    description: str, server_description: str, dense: str
) -> None:
    doc = ToolDoc("bing.search", "bing_cn", "bing_search", description, server_description, SCHEMA)
    assert doc.dense_text() == dense


def test_lexical_text_carries_parameter_names_and_descriptions() -> None:
    text = ToolDoc("s.t", "s", "t", "Find.", "Server", SCHEMA).lexical_text()
    assert "maxResults" in text
    assert "Search keywords" in text


@pytest.mark.parametrize(
    ("server_description", "text"), [("Git tools", "my git: Git tools"), ("", "my git"), ("中文描述", "my git")]
)
def test_server_text_is_its_name_and_a_readable_description(server_description: str, text: str) -> None:
    assert ToolDoc("my-git.log", "my-git", "log", "", server_description).server_text() == text


@pytest.mark.parametrize(
    ("text", "latin"),
    [("Read a file", True), ("", False), ("  \n", False), ("获取 36 氪热榜", False), ("café menu", True)],
)
def test_is_latin_tells_text_an_english_model_can_read(text: str, latin: bool) -> None:
    assert is_latin(text) is latin
