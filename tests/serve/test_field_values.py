from __future__ import annotations

from typing import Any

import orjson
import pytest

from mcp_aggregator.serve.fast_call import http_status
from mcp_aggregator.serve.field_values import FieldValues, field_values
from mcp_aggregator.serve.request_head import Routing, read_head


def test_optional_whitespace_around_a_header_value_is_not_part_of_it() -> None:
    headers = [(b"mcp-name", b"  get_time \t"), (b"mcp-method", b"\ttools/call"), (b"accept", b"a, b")]
    assert field_values(headers) == [(b"mcp-name", b"get_time"), (b"mcp-method", b"tools/call"), (b"accept", b"a, b")]
    head = read_head([*headers, (b"mcp-protocol-version", b" 2026-07-28")])
    assert head is not None
    assert head.routing == Routing(b"2026-07-28", b"tools/call", b"get_time")


async def test_the_middleware_hands_the_app_header_values_without_their_whitespace() -> None:
    seen: list[Any] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        seen.append(scope["headers"])

    async def nothing() -> Any:
        return {}

    async def ignore(message: Any) -> None:
        pass

    plain = [(b"mcp-name", b"t")]
    await FieldValues(app)({"type": "http", "headers": plain}, nothing, ignore)
    await FieldValues(app)({"type": "http", "headers": [(b"mcp-name", b" t ")]}, nothing, ignore)
    assert seen[0] is plain, "a request with nothing to drop is left as it came"
    assert seen[1] == [(b"mcp-name", b"t")]


@pytest.mark.parametrize(
    ("answer", "status"),
    [
        ({"jsonrpc": "2.0", "id": 1, "result": {"content": []}}, 200),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32021, "message": "needs sampling"}}, 400),
        ({"jsonrpc": "2.0", "id": "x", "error": {"code": -32601, "message": "no such method"}}, 404),
        ({"jsonrpc": "2.0", "id": 1, "error": {"code": -32603, "message": "internal"}}, 200),
        ({"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "text", "text": '"error":{'}]}}, 200),
    ],
)
def test_a_fast_answer_gets_the_http_status_the_sdk_gives_its_error_code(answer: dict[str, Any], status: int) -> None:
    assert http_status(orjson.dumps(answer)) == status
