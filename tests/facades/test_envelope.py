import json

import mcp_types as types
import pytest

from mcp_aggregator.errors import FacadeError
from mcp_aggregator.facades import Counted, Envelope, Listing, paginate, to_call_tool_result
from mcp_aggregator.facades.envelope import render_call_result


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({"a": 1}, {"ok": True, "cmd": "c", "data": {"a": 1}}),
        (None, {"ok": True, "cmd": "c", "data": None}),
        ((1, 2), {"ok": True, "cmd": "c", "data": [1, 2], "count": 2}),
        (Listing([1]), {"ok": True, "cmd": "c", "data": {"items": [1]}, "count": 1}),
        (Counted({"results": [1, 2]}, 2), {"ok": True, "cmd": "c", "data": {"results": [1, 2]}, "count": 2}),
    ],
)
def test_success_envelopes_omit_what_does_not_apply(data: object, expected: dict[str, object]) -> None:
    assert Envelope.success("c", data).to_dict() == expected


def test_failure_envelope_has_error_and_no_data() -> None:
    assert Envelope.failure("x", "nope").to_dict() == {"ok": False, "cmd": "x", "error": "nope"}


def test_call_tool_result_is_compact_utf8_json_and_flags_failures() -> None:
    result = to_call_tool_result({"ok": False, "cmd": "x", "error": "无"})
    assert result.is_error is True
    assert isinstance(result.content[0], types.TextContent)
    assert result.content[0].text == '{"ok":false,"cmd":"x","error":"无"}'
    assert json.loads(result.content[0].text)["error"] == "无"
    assert to_call_tool_result({"ok": True, "cmd": "x", "data": 1}).is_error is False


def test_rendering_prefers_structured_content_then_plain_text() -> None:
    text = types.TextContent(text="hi")
    image = types.ImageContent(data="AA==", mime_type="image/png")
    assert render_call_result(types.CallToolResult(content=[text]), full=False) == "hi"
    structured = types.CallToolResult(content=[text], structured_content={"v": 1})
    assert render_call_result(structured, full=False) == {"v": 1}
    assert render_call_result(types.CallToolResult(content=[text, image]), full=False) == [
        {"type": "text", "text": "hi"},
        {"type": "image", "data": "AA==", "mimeType": "image/png"},
    ]
    assert render_call_result(structured, full=True) == {
        "content": [{"type": "text", "text": "hi"}],
        "structuredContent": {"v": 1},
        "isError": False,
    }


@pytest.mark.parametrize(
    ("cursor", "limit", "page", "next_cursor"),
    [(None, 2, [0, 1], "2"), ("2", 2, [2, 3], "4"), ("4", 2, [4], None), ("5", 2, [], None)],
)
def test_paginate_walks_an_ordered_sequence(
    cursor: str | None, limit: int, page: list[int], next_cursor: str | None
) -> None:
    items, after = paginate(list(range(5)), cursor, limit)
    assert (list(items), after) == (page, next_cursor)


@pytest.mark.parametrize("cursor", ["x", "-1", "6"])
def test_paginate_refuses_cursors_it_never_gave(cursor: str) -> None:
    with pytest.raises(FacadeError, match=r"^params.cursor: invalid cursor"):
        paginate(list(range(5)), cursor, 2)
