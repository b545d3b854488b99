import json
from datetime import UTC, datetime
from typing import Any

import mcp_types
import pytest

from mcp_aggregator.aggregate.result_extraction import error_text, extract_results, parse_timestamp

NOW = datetime(2026, 11, 21, 12, 0, tzinfo=UTC)


def text_result(*texts: str, structured: Any = None) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text) for text in texts],
        structured_content=structured,
    )


def contents(result: mcp_types.CallToolResult, max_chars: int = 10_000) -> list[str]:
    return [raw.content for raw in extract_results(result, server="s", retrieved_at=NOW, max_chars=max_chars)]


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (text_result("first", "second"), ["first", "second"]),
        (text_result("  padded \n"), ["padded"]),
        (text_result("", "   "), []),
        (text_result('["a", {"b": 1}]'), ["a", '{"b":1}']),
        (text_result('{"results": [{"title": "T", "body": "B"}], "total": 1}'), ['{"title":"T","body":"B"}']),
        (text_result('{"hits": ["x", "y"]}'), ["x", "y"]),
        (text_result('{"items": [], "results": ["r"]}'), ["r"]),
        (text_result('{"name": "single object"}'), ['{"name":"single object"}']),
        (text_result("[not json"), ["[not json"]),
        (text_result("[]"), []),
        (text_result("[1, 2.5, true, null]"), ["1", "2.5", "true"]),
        # Structured content wins; the text is its serialisation and would double everything.
        (
            text_result('{"entities": [1]}', structured={"entities": [{"name": "React"}], "relations": []}),
            ['{"name":"React"}'],
        ),
        (text_result("ignored", structured={"result": ["a", "b"]}), ["a", "b"]),
        (text_result("ignored", structured={"result": "plain text"}), ["plain text"]),
        (text_result("ignored", structured={"result": {"documents": ["d"]}}), ["d"]),
        (text_result("ignored", structured=["direct", "list"]), ["direct", "list"]),
        (text_result("ignored", structured={"answer": 42}), ['{"answer":42}']),
        (text_result("ignored", structured={"text": "ünïcode"}), ['{"text":"ünïcode"}']),
    ],
)
def test_results_are_split_from_text_and_json(result: mcp_types.CallToolResult, expected: list[str]) -> None:
    assert contents(result) == expected


def test_text_resources_are_results_and_images_are_not() -> None:
    result = mcp_types.CallToolResult(
        content=[
            mcp_types.ImageContent(type="image", data="AAAA", mime_type="image/png"),
            mcp_types.EmbeddedResource(
                type="resource",
                resource=mcp_types.TextResourceContents(uri="file:///a.md", text="# Readme", mime_type="text/markdown"),
            ),
        ]
    )
    assert contents(result) == ["# Readme"]


def test_each_result_carries_server_retrieval_time_and_found_timestamp() -> None:
    payload = json.dumps({"results": [{"t": "a", "updated_at": "2026-11-01T00:00:00Z"}, {"t": "b"}]})
    first, second = extract_results(text_result(payload), server="docs", retrieved_at=NOW, max_chars=10_000)
    assert (first.server, first.retrieved_at) == ("docs", NOW)
    assert first.source_time == datetime(2026, 11, 1, tzinfo=UTC)
    assert second.source_time is None


def test_huge_results_are_truncated_but_keep_their_original_length() -> None:
    [raw] = extract_results(text_result("x" * 50_000), server="s", retrieved_at=NOW, max_chars=1_000)
    assert len(raw.content) == 1_000
    assert raw.content.endswith(" … [truncated 49000 chars]")
    assert raw.original_length == 50_000


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-01T10:00:00Z", datetime(2026, 11, 1, 10, tzinfo=UTC)),
        ("2026-11-01T12:00:00+02:00", datetime(2026, 11, 1, 10, tzinfo=UTC)),
        ("2026-11-01", datetime(2026, 11, 1, tzinfo=UTC)),
        ("2026-11-01 10:00:00", datetime(2026, 11, 1, 10, tzinfo=UTC)),
        (1_793_527_200, datetime(2026, 11, 1, 10, tzinfo=UTC)),
        (1_793_527_200_000, datetime(2026, 11, 1, 10, tzinfo=UTC)),
        ("yesterday", None),
        (float("nan"), None),
        (1e300, None),
        (True, None),
        (None, None),
        ({"nested": 1}, None),
    ],
)
def test_timestamps_parse_from_iso_text_and_epoch_numbers(value: object, expected: datetime | None) -> None:
    assert parse_timestamp(value) == expected


def test_first_parseable_timestamp_key_wins() -> None:
    payload = json.dumps([{"timestamp": "garbage", "date": "2026-01-02"}])
    [raw] = extract_results(text_result(payload), server="s", retrieved_at=NOW, max_chars=10_000)
    assert raw.source_time == datetime(2026, 1, 2, tzinfo=UTC)


def test_error_text_joins_text_blocks_and_collapses_whitespace() -> None:
    assert error_text(text_result("index", "offline\n now")) == "index offline now"
    assert error_text(text_result()) == "tool returned an error"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("/srv/notes/a.md\n/srv/notes/b.md\n", ["/srv/notes/a.md", "/srv/notes/b.md"]),
        ("https://x.org/a\nhttps://x.org/b", ["https://x.org/a", "https://x.org/b"]),
        ("No matches found", []),
        ("No results.", []),
        ("no issues found", []),
        ("/srv/notes/a.md", ["/srv/notes/a.md"]),
        # Prose that merely has a path in it stays one result.
        ("Saved to /srv/a.md\nand /srv/b.md", ["Saved to /srv/a.md\nand /srv/b.md"]),
        ("No matches found in the first pass, but see below", ["No matches found in the first pass, but see below"]),
    ],
)
def test_path_lists_split_per_line_and_nothing_found_is_no_result(text: str, expected: list[str]) -> None:
    assert contents(text_result(text)) == expected
    # server-filesystem's structured output wraps the same text as {"content": ...}.
    assert contents(text_result(text, structured={"content": text})) == expected
