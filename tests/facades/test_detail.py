import pytest

from mcp_aggregator.errors import FacadeError
from mcp_aggregator.facades import Detail, ScoredTool, ServerRecord, ServerStatus, ToolRecord
from mcp_aggregator.facades.detail import (
    excerpt,
    project_hit,
    project_script_tool,
    project_server,
    project_status,
    project_tool,
    stub_line,
)

TOOL = ToolRecord(
    "docs__search",
    "docs",
    "Search the docs. " + "Very long explanation. " * 20,
    {
        "type": "object",
        "properties": {"query": {"type": "string"}, "k": {"type": "integer"}},
        "required": ["query"],
    },
    original_name="search",
    annotations={"readOnlyHint": True},
)


@pytest.mark.parametrize(
    ("value", "detail"),
    [
        (None, Detail.STANDARD),
        ("minimal", Detail.MINIMAL),
        (" Full ", Detail.FULL),
        ("STANDARD", Detail.STANDARD),
    ],
)
def test_detail_parses_case_insensitively_with_standard_as_default(value: object, detail: Detail) -> None:
    assert Detail.parse(value) is detail


@pytest.mark.parametrize("value", ["max", "", 3, ["full"]])
def test_bad_detail_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(FacadeError, match=r"^detail: must be one of minimal, standard, full"):
        Detail.parse(value)


@pytest.mark.parametrize(
    ("text", "limit", "expected"),
    [
        (None, 50, ""),
        ("Short.", 50, "Short."),
        ("One.  Two   words.\n\nSecond paragraph.", 50, "One. Two words."),
        ("First sentence here. Second sentence is long.", 25, "First sentence here."),
        ("averyveryverylongwordwithoutspaces", 10, "averyvery…"),
        ("words without any sentence end at all here", 20, "words without any…"),
        ("第一句。第二句很长很长很长。", 8, "第一句。"),
    ],
)
def test_excerpt_keeps_whole_sentences_or_words_within_the_limit(text: str | None, limit: int, expected: str) -> None:
    assert excerpt(text, limit) == expected


def test_tool_projection_grows_with_the_detail_level() -> None:
    assert project_tool(TOOL, Detail.MINIMAL) == {"name": "docs__search", "server": "docs"}
    standard = project_tool(TOOL, Detail.STANDARD)
    assert standard["args"] == "query, k?"
    assert len(standard["description"]) <= 160
    assert "inputSchema" not in standard
    full = project_tool(TOOL, Detail.FULL)
    assert full["inputSchema"] == TOOL.input_schema
    assert full["description"] == TOOL.description
    assert full["originalName"] == "search"
    assert full["annotations"] == {"readOnlyHint": True}
    assert "outputSchema" not in full


def test_search_hits_carry_a_rounded_score_except_at_minimal() -> None:
    hit = ScoredTool(TOOL, 0.123456)
    assert project_hit(hit, Detail.MINIMAL) == {"name": "docs__search", "server": "docs"}
    assert project_hit(hit, Detail.STANDARD)["score"] == 0.123


def test_server_projection_grows_with_the_detail_level() -> None:
    server = ServerRecord("git", "CONNECTED", "stdio", 0, "Git.", ("git_log",), None, {"pid": 42})
    assert project_server(server, Detail.MINIMAL) == {"name": "git"}
    assert project_server(server, Detail.STANDARD) == {
        "name": "git",
        "status": "CONNECTED",
        "transport": "stdio",
        "toolCount": 0,
        "description": "Git.",
    }
    assert project_server(server, Detail.FULL)["tools"] == ["git_log"]
    assert project_server(server, Detail.FULL)["details"] == {"pid": 42}


def test_status_projection() -> None:
    status = ServerStatus("git", "ERROR", "2026-01-01T00:00:00Z", "boom", {"failures": 3})
    assert project_status(status, Detail.MINIMAL) == {"name": "git", "state": "ERROR"}
    assert project_status(status, Detail.STANDARD) == {
        "name": "git",
        "state": "ERROR",
        "since": "2026-01-01T00:00:00Z",
        "lastError": "boom",
    }
    assert project_status(status, Detail.FULL)["details"] == {"failures": 3}


def test_for_a_script_standard_is_one_stub_line_and_full_gives_docs_instead_of_schemas() -> None:
    tool = ToolRecord(
        "srv.find",
        "srv",
        "Find things.\n\n    Example:\n        find(q='x')   \n",
        {"type": "object", "properties": {"q": {"type": "string", "description": " what  to find "}, "n": {}}},
        original_name="find",
        output_schema={"type": "object"},
    )

    def signature(record: ToolRecord) -> str:
        return f"{record.name}(q: str = ...) -> dict"

    assert project_script_tool(tool, Detail.STANDARD, signature) == "srv.find(q: str = ...) -> dict  # Find things."
    full = project_script_tool(tool, Detail.FULL, signature)
    assert full == {
        "signature": "srv.find(q: str = ...) -> dict",
        "description": "Find things.\n\nExample:\n    find(q='x')",
        "argDocs": {"q": "what to find"},
    }
    assert project_script_tool(tool, Detail.MINIMAL, signature) == {"name": "srv.find", "server": "srv"}
    assert project_tool(tool, Detail.FULL)["inputSchema"] == tool.input_schema


def test_a_stub_line_names_the_skill_and_stands_alone_without_a_description() -> None:
    skilled = ToolRecord("srv.a", "srv", "Do a.", {"type": "object"}, skill="ops")
    bare = ToolRecord("srv.b", "srv", "", {"type": "object"})
    assert stub_line("srv.a() -> str", skilled) == "srv.a() -> str  # Do a. [skill: ops]"
    assert stub_line("srv.b() -> str", bare) == "srv.b() -> str"
