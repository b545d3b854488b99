"""``prompts/get``, ``resources/read`` and ``completion/complete`` on the passthrough fast path
answer exactly what the full pipeline answers: over HTTP (2026-07-28 and handshake-era clients) and stdio, against SDK
upstreams on both transports and a hand-written handshake-era one. What the fast path cannot
route (an unknown prompt, a namespaced URI, arguments of the wrong shape) goes the full way
and gets that path's answer."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import mcp_types as types
import pytest
import pytest_asyncio
from mcp import Client
from mcp.shared.exceptions import MCPError

from mcp_aggregator import __version__
from mcp_aggregator.settings import ServerConfig
from tests.held import held
from tests.relay.test_mrtr_through_gateway import upstream
from tests.serve.conformance_runner import fixture_http_config, fixture_http_server, fixture_stdio_config
from tests.serve.shared_gateways import Gateways, both_paths
from tests.serve.test_fast_path import MODERN_HEADERS, MODERN_META, http_gateway
from tests.serve.test_stdio_face import own_stdio_face

pytestmark = pytest.mark.asyncio(loop_scope="module")
"""The module's tests share one event loop, and with it the ``param_header_server`` gateways."""

Op = tuple[str, str, dict[str, Any] | None]

CONFORMANCE_OPS: list[Op] = [
    ("prompt", "conformance__test_simple_prompt", None),
    ("prompt", "conformance__test_prompt_with_arguments", {"arg1": "a", "arg2": "b ✓"}),
    ("prompt", "conformance.test_prompt_with_embedded_resource", {"resourceUri": "test://x"}),
    ("prompt", "conformance__test_prompt_with_image", None),
    ("prompt", "conformance__test_prompt_with_arguments", {"arg1": "only one"}),  # the upstream's error
    ("prompt", "conformance__nope", None),  # unknown here: the full pipeline's error
    ("read", "test://static-text", None),
    ("read", "test://static-binary", None),
    ("read", "test://template/42/data", None),  # owned through its template
    ("read", "test://missing", None),  # the upstream's error
    ("complete-prompt", "conformance__test_prompt_with_arguments", {"arg1": "pa"}),
    ("complete-resource", "test://template/{id}/data", {"id": "12"}),
    ("complete-prompt", "conformance__nope", {"arg1": "pa"}),  # unknown here: the full pipeline's error
]
CONFORMANCE_FAST = len(CONFORMANCE_OPS) - 2

HANDSHAKE_ERA_OPS: list[Op] = [
    ("tool", "garbled__refuse", {}),  # a JSON-RPC error
    ("prompt", "garbled__greet", {"name": "Ada ✓"}),
    ("prompt", "greet", {"name": "by its own name"}),
    ("read", "note://hello", None),
    ("read", "note://other", None),  # the upstream's error
]


async def outcomes(client: Client, ops: list[Op]) -> list[Any]:
    seen: list[Any] = []
    for kind, target, arguments in ops:
        try:
            result: types.CallToolResult | types.GetPromptResult | types.ReadResourceResult | types.CompleteResult
            if kind.startswith("complete"):
                assert arguments is not None
                [(name, value)] = arguments.items()
                ref: types.PromptReference | types.ResourceTemplateReference
                if kind == "complete-prompt":
                    ref = types.PromptReference(type="ref/prompt", name=target)
                else:
                    ref = types.ResourceTemplateReference(type="ref/resource", uri=target)
                result = await client.complete(ref, {"name": name, "value": value})
            elif kind == "tool":
                result = await client.call_tool(target, arguments)
            elif kind == "prompt":
                result = await client.get_prompt(target, arguments)
            else:
                result = await client.read_resource(target)
        except MCPError as exc:
            seen.append(("error", exc.error.code, exc.error.message, exc.error.data))
            continue
        # _meta included: the serverInfo stamp must name the gateway on both paths.
        seen.append(result.model_dump(mode="json", by_alias=True, exclude_none=True))
    return seen


async def through(upstream_config: ServerConfig, ops: list[Op], *, mode: str, fast_path: bool) -> tuple[list[Any], int]:
    async with (
        http_gateway(upstream=upstream_config, fast_path=fast_path) as (fast, url),
        Client(url, mode=mode, cache=None) as client,  # type: ignore[arg-type]
    ):
        if mode == "legacy":
            await client.list_tools()  # the gateway's server knows the session from here on
        return await outcomes(client, ops), fast.forwarded


@asynccontextmanager
async def conformance_upstream(transport: str) -> AsyncIterator[ServerConfig]:
    if transport == "stdio":
        yield ServerConfig.model_validate(fixture_stdio_config())
        return
    async with fixture_http_server() as url:
        yield ServerConfig.model_validate(fixture_http_config(url))


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_prompts_and_reads_from_a_2026_client_answer_as_the_full_pipeline(transport: str) -> None:
    async with conformance_upstream(transport) as config:
        fast, forwarded = await through(config, CONFORMANCE_OPS, mode="auto", fast_path=True)
        full, not_forwarded = await through(config, CONFORMANCE_OPS, mode="auto", fast_path=False)
    assert fast == full
    assert (forwarded, not_forwarded) == (CONFORMANCE_FAST, 0)
    simple = fast[0]
    assert simple["messages"][0]["content"]["text"] == "This is a simple prompt for testing."
    assert simple["_meta"][types.SERVER_INFO_META_KEY]["name"] == "mcp-aggregator"
    assert "b ✓" in fast[1]["messages"][0]["content"]["text"]
    assert fast[4][:2] == ("error", types.INVALID_PARAMS) and "arg2" in fast[4][2]
    assert fast[5][0] == "error" and "nope" in fast[5][2]
    static = {"uri": "test://static-text", "mimeType": "text/plain"}
    assert fast[6]["contents"] == [{**static, "text": "This is the content of the static text resource."}]
    assert fast[8]["contents"][0]["uri"] == "test://template/42/data"
    assert fast[9][:2] == ("error", types.INVALID_PARAMS)
    assert fast[10]["completion"]["values"] == ["paris", "park", "party"]
    assert fast[11]["completion"]["values"] == ["123", "124"]
    assert fast[12][0] == "error" and "nope" in fast[12][2]


async def test_a_handshake_era_client_gets_prompts_and_reads_as_the_full_pipeline_gives_them() -> None:
    """Over HTTP, in a 2025-11-25 session: a 2026-07-28 upstream may ask back mid-request,
    which only the full pipeline answers for such a client, so these go the full way."""
    async with conformance_upstream("stdio") as config:
        fast, forwarded = await through(config, CONFORMANCE_OPS, mode="legacy", fast_path=True)
        full, _ = await through(config, CONFORMANCE_OPS, mode="legacy", fast_path=False)
    assert fast == full
    assert forwarded == 0
    assert "_meta" not in fast[0]  # no 2026-07-28 stamp in a handshake-era answer


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_handshake_era_upstream_answers_prompts_and_reads_in_the_clients_shape(mode: str) -> None:
    """A 2025-11-25 upstream's result has no ``resultType``: shaped for a 2026-07-28 client
    (and stamped), passed through for a handshake-era one, as the SDK's server does."""
    garbled = upstream("garbled", "tests.upstream.garbled_server").model_copy(
        update={"env": {"GARBLED_SECRET": "hunter2-in-the-config"}}
    )
    fast, forwarded = await through(garbled, HANDSHAKE_ERA_OPS, mode=mode, fast_path=True)
    full, not_forwarded = await through(garbled, HANDSHAKE_ERA_OPS, mode=mode, fast_path=False)
    assert fast == full
    assert (forwarded, not_forwarded) == (len(HANDSHAKE_ERA_OPS), 0)
    # Named after its server, its code and data kept, the credential it quoted scrubbed: as
    # the full pipeline words it.
    assert fast[0][:3] == ("error", types.INVALID_PARAMS, "garbled: refused: token=***")
    assert fast[0][3] == {"why": "asked to"}
    assert fast[1]["messages"][0]["content"]["text"] == "Hello, Ada ✓!"
    assert fast[3]["contents"][0]["text"] == "a note"
    assert fast[4][:2] == ("error", types.INVALID_PARAMS)
    stamped = types.SERVER_INFO_META_KEY in fast[1].get("_meta", {})
    assert stamped is (mode == "auto")


# -- stdio, and raw requests a client library would not send -------------------------------


def request(ident: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "method": method, "params": {**params, "_meta": MODERN_META}}


PROMPT_WITH_ARGUMENTS = "conformance__test_prompt_with_arguments"
PROMPT_REF = {"type": "ref/prompt", "name": PROMPT_WITH_ARGUMENTS}
ARGUMENT = {"name": "arg2", "value": "w"}
RAW_REQUESTS: list[dict[str, Any]] = [
    request(1, "prompts/get", {"name": PROMPT_WITH_ARGUMENTS, "arguments": {"arg1": "x", "arg2": "y"}}),
    request(2, "resources/read", {"uri": "test://template/7/data"}),
    # Declined, each for its reason; the full pipeline (the SDK first) answers them.
    request(3, "prompts/get", {"name": PROMPT_WITH_ARGUMENTS, "arguments": {"arg1": 5}}),
    request(4, "prompts/get", {"name": ["not", "a", "name"]}),
    request(5, "resources/read", {"uri": 7}),
    request(6, "resources/read", {"uri": "aggregator+conformance:test://static-text"}),
    request(7, "prompts/get", {"name": "conformance__test_simple_prompt", "inputResponses": {}}),
    request(8, "prompts/get", {"name": "conformance__test_simple_prompt", "arguments": None}),
    request(9, "completion/complete", {"ref": PROMPT_REF, "argument": {"name": "arg2", "value": "wo"}}),
    request(10, "completion/complete", {"ref": PROMPT_REF, "argument": {"name": "arg2", "value": 3}}),
    request(11, "completion/complete", {"ref": {"type": "ref/tool", "name": "x"}, "argument": ARGUMENT}),
    request(12, "completion/complete", {"ref": PROMPT_REF, "argument": {"name": "arg2", "value": "w"}, "context": 5}),
]
RAW_FAST = 4  # 1, 2, 8 and 9


async def stdio_answers(*, fast_path: bool) -> tuple[list[dict[str, Any]], int]:
    async with own_stdio_face(ServerConfig.model_validate(fixture_stdio_config()), fast_path=fast_path) as face:
        return await face.one_by_one(RAW_REQUESTS), face.calls.forwarded


async def test_over_stdio_prompts_and_reads_answer_as_the_full_pipeline_and_bad_ones_get_its_errors() -> None:
    fast, forwarded = await stdio_answers(fast_path=True)
    full, not_forwarded = await stdio_answers(fast_path=False)
    assert fast == full
    assert (forwarded, not_forwarded) == (RAW_FAST, 0)
    assert "arg1='x', arg2='y'" in fast[0]["result"]["messages"][0]["content"]["text"]
    assert fast[1]["result"]["contents"][0]["uri"] == "test://template/7/data"
    assert [answer["error"]["code"] for answer in fast[2:5]] == [types.INVALID_PARAMS] * 3
    # A namespaced URI is read under the upstream's own URI and comes back under the client's.
    assert fast[5]["result"]["contents"][0]["uri"] == "aggregator+conformance:test://static-text"
    # A retry's answers (none here) go the full way, which sends the request again.
    simple = "This is a simple prompt for testing."
    assert [fast[i]["result"]["messages"][0]["content"]["text"] for i in (6, 7)] == [simple, simple]
    assert fast[8]["result"]["completion"]["values"] == ["world", "word", "work"]
    assert [answer["error"]["code"] for answer in fast[9:]] == [types.INVALID_PARAMS] * 3


def read_request(ident: int, uri: str) -> dict[str, Any]:
    return request(ident, "resources/read", {"uri": uri})


async def test_over_http_a_read_with_routing_headers_that_do_not_match_gets_the_sdks_answer() -> None:
    headers = {**MODERN_HEADERS, "mcp-method": "resources/read", "mcp-name": "test://static-text"}
    wrong_name = {**headers, "mcp-name": "test://static-binary"}
    wrong_method = {**headers, "mcp-method": "prompts/get"}
    seen: dict[bool, list[tuple[int, Any]]] = {}
    forwarded: dict[bool, int] = {}
    async with conformance_upstream("stdio") as config:
        for fast_path in (True, False):
            async with http_gateway(upstream=config, fast_path=fast_path) as (fast, url), httpx.AsyncClient() as http:
                answers = []
                for ident, sent in enumerate((headers, wrong_name, wrong_method)):
                    response = await http.post(url, json=read_request(ident, "test://static-text"), headers=sent)
                    answers.append((response.status_code, response.json()))
                seen[fast_path], forwarded[fast_path] = answers, fast.forwarded
    assert seen[True] == seen[False]
    assert forwarded == {True: 1, False: 0}
    assert seen[True][0][1]["result"]["contents"][0]["text"] == "This is the content of the static text resource."
    assert all("error" in body for _, body in seen[True][1:])


@pytest.mark.parametrize("fast_path", [True, False])
async def test_an_upstreams_own_minus_32000_error_fails_that_call_and_leaves_the_session_up(fast_path: bool) -> None:
    """-32000 opens JSON-RPC's server-error range, and servers use it for their own failures;
    the SDK's client uses it too when a transport ends. Only the latter ends the session."""
    garbled = upstream("garbled", "tests.upstream.garbled_server")
    async with (
        http_gateway(upstream=garbled, fast_path=fast_path) as (fast, url),
        Client(url, cache=None) as client,
    ):
        supervisor = fast.calls.gateway.supervisor("garbled")
        connection = supervisor.connection
        with pytest.raises(MCPError) as info:
            await client.call_tool("garbled__refuse", {"code": -32000, "message": "backend unavailable"})
        assert (info.value.error.code, info.value.error.message) == (-32000, "garbled: backend unavailable")
        echoed = await client.call_tool("garbled__echo", {"text": "still here"})
        assert echoed.content[0].text == "still here"  # type: ignore[union-attr]
        assert supervisor.connection is connection
        assert fast.forwarded == (2 if fast_path else 0)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def ph_gateways() -> AsyncIterator[Gateways]:
    """The fast and full gateways over one ``param_header_server``, shared by the tests of its
    tools (``shared_gateways``): each opens sessions of its own."""
    async with (
        held(fixture_http_server("tests.upstream.param_header_server")) as url,
        both_paths(ServerConfig(name="ph", transport="http", base_url=url)) as gateways,  # type: ignore[arg-type]
    ):
        yield gateways


LOCATE_CALLS = [
    ("ph__locate", {"region": "eu-west"}),
    ("ph__plain", {"text": "a"}),
    ("ph__locate", {"region": "us-east ✓"}),  # not a header token: base64 on the wire
    ("ph__plain", {"text": "b"}),
]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_tool_that_mirrors_an_argument_into_a_header_gets_each_calls_value(
    ph_gateways: Gateways, mode: str
) -> None:
    """Over HTTP a request's headers are stamped once per tool and reused, but for
    ``Mcp-Param-*``, which mirror each call's arguments (the upstream refuses a call whose
    header disagrees). A 2026-07-28 client's call to such a tool goes the full way, where the
    SDK's endpoint checks the client's own headers; a handshake-era client sends none, and its
    calls take the fast path."""
    seen = {}
    for fast_path in (True, False):
        fast, gateway_url = ph_gateways[fast_path]
        before = fast.forwarded
        async with Client(gateway_url, mode=mode, cache=None) as client:  # type: ignore[arg-type]
            await client.list_tools()
            answers = []
            for name, arguments in LOCATE_CALLS:
                result = await client.call_tool(name, arguments)
                assert not result.is_error, result
                answers.append(result.content[0].text)  # type: ignore[union-attr]
            seen[fast_path] = answers, fast.forwarded - before
    assert seen[True][0] == seen[False][0] == ["in eu-west", "a", "in us-east ✓", "b"]
    assert (seen[True][1], seen[False][1]) == ((2 if mode == "auto" else 4), 0)


async def test_a_call_without_the_header_its_tool_mirrors_gets_the_sdks_refusal_on_both_paths(
    ph_gateways: Gateways,
) -> None:
    body = request(1, "tools/call", {"name": "ph__locate", "arguments": {"region": "eu-west"}})
    headers = {**MODERN_HEADERS, "mcp-name": "ph__locate"}
    seen = {}
    for fast_path in (True, False):
        fast, gateway_url = ph_gateways[fast_path]
        before = fast.forwarded
        async with httpx.AsyncClient() as http:
            response = await http.post(gateway_url, json=body, headers=headers)
            seen[fast_path] = response.status_code, response.json(), fast.forwarded - before
    assert seen[True] == seen[False]
    status, answer, forwarded = seen[True]
    assert (status, forwarded) == (400, 0)
    assert "Mcp-Param-Region header is missing" in answer["error"]["message"]


@pytest.mark.parametrize("fast_path", [True, False])
async def test_the_gateway_names_itself_to_its_upstreams_in_either_era(ph_gateways: Gateways, fast_path: bool) -> None:
    """Upstreams log who calls them: that is the gateway, by its own name and version, on the
    fast path as on the full pipeline; not the SDK's default client name and not its client's."""
    expected = f"mcp-aggregator {__version__}"
    handshake_era = upstream("garbled", "tests.upstream.garbled_server")
    async with (
        http_gateway(upstream=handshake_era, fast_path=fast_path) as (fast, gateway_url),
        Client(gateway_url, cache=None) as client,
    ):
        result = await client.call_tool("garbled__whoami", {})
        assert (result.content[0].text, fast.forwarded) == (expected, int(fast_path))  # type: ignore[union-attr]
    fast, gateway_url = ph_gateways[fast_path]
    before = fast.forwarded
    async with Client(gateway_url, cache=None) as client:
        result = await client.call_tool("ph__caller", {})
        assert (result.content[0].text, fast.forwarded - before) == (expected, int(fast_path))  # type: ignore[union-attr]
