"""Real SDK clients of both eras, through the gateway, see secrets and personal data masked,
injected instructions blocked and no poisoned tool; the fast path and the full pipeline
answer alike."""

from __future__ import annotations

import json
from typing import Any

import httpx
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from starlette.routing import Route

from mcp_aggregator.audit import AuditQuery
from mcp_aggregator.serve.fast_path import FastPath
from tests.guardrails.conftest import RULES, guarded_settings
from tests.guardrails.leaky_server import (
    AWS_ACCESS_KEY,
    AWS_SECRET_KEY,
    EMAIL,
    GITHUB_TOKEN,
    INVALID_CARD,
    PHONE,
    VALID_CARD,
)
from tests.http_serving import served_over_http

ADMIN_TOKEN = "guardrails-admin-token"

CALLS: list[tuple[str, dict[str, Any]]] = [
    ("leaky__aws_credentials", {}),
    ("leaky__ci_config", {}),
    ("leaky__deploy_key", {}),
    ("leaky__customer", {}),
    ("leaky__fetch_page", {"url": "https://news.example"}),
    ("leaky__weather", {"city": "Oslo"}),
    ("leaky__echo", {"text": f"my key is {AWS_ACCESS_KEY}"}),
]


def text_of(result: types.CallToolResult) -> str:
    return "\n".join(block.text for block in result.content if isinstance(block, types.TextContent))


def summary(result: types.CallToolResult) -> tuple[Any, ...]:
    content = [block.model_dump(mode="json") for block in result.content]
    return (result.is_error, content, result.structured_content)


def forwarded_by(served: Any) -> int:
    """Calls the fast path answered (0 when it is off)."""
    [fast] = [r.endpoint for r in served.app.routes if isinstance(r, Route) and r.path == "/mcp"]
    fast = getattr(fast, "app", fast)  # behind the client authentication layer
    return fast.forwarded if isinstance(fast, FastPath) else 0


async def calls_by(url: str, mode: str) -> list[tuple[Any, ...]]:
    async with Client(url, mode=mode, cache=None) as client:  # type: ignore[arg-type]
        tools = {tool.name for tool in (await client.list_tools()).tools}
        assert "leaky__add" not in tools  # poisoned from its first listing: held
        assert {"leaky__aws_credentials", "leaky__weather"} <= tools
        results = [await client.call_tool(name, args) for name, args in CALLS]
        with pytest.raises(MCPError) as held:
            await client.call_tool("leaky__add", {"a": 1, "b": 2})
        assert "held" in held.value.error.message
        check(results)
        notes = await client.read_resource("notes://deploy")
        [contents] = notes.contents
        assert isinstance(contents, types.TextResourceContents)
        assert contents.text == "access key [REDACTED:aws_access_key]"
        return [summary(result) for result in results]


def check(results: list[types.CallToolResult]) -> None:
    aws, ci, key, customer, page, weather, echo = results
    assert "[REDACTED:aws_access_key]" in text_of(aws) and "[REDACTED:aws_secret_key]" in text_of(aws)
    assert AWS_ACCESS_KEY not in text_of(aws) and AWS_SECRET_KEY not in text_of(aws)
    assert text_of(ci) == "env:\n  GITHUB_TOKEN: [REDACTED:github_token]\n"
    assert GITHUB_TOKEN not in text_of(ci)
    assert text_of(key) == "key for the deploy:\n[REDACTED:private_key]\nkeep it safe"
    structured = customer.structured_content
    assert structured == {
        "name": "Jane",
        "card": "[REDACTED:CREDIT_CARD]",
        "old_card": INVALID_CARD,  # fails the Luhn check: not a card number
        "email": "[REDACTED:EMAIL_ADDRESS]",
        "phone": "[REDACTED:PHONE_NUMBER]",
    }
    assert json.loads(text_of(customer)) == structured  # the text copy stays valid JSON
    assert VALID_CARD not in text_of(customer) and EMAIL not in text_of(customer) and PHONE not in text_of(customer)
    assert page.is_error
    assert "guardrail 'poison' (injection)" in text_of(page)
    assert "hidden_instruction" in text_of(page)
    assert "id_rsa" not in text_of(page) and "attacker" not in text_of(page)
    assert not weather.is_error and text_of(weather).startswith("Oslo: sunny")
    # The argument was masked on its way out: the upstream never saw the key.
    assert text_of(echo) == "my key is [REDACTED:aws_access_key]"


async def test_clients_of_both_eras_get_the_same_guarded_answers_on_both_paths() -> None:
    answers: dict[tuple[bool, str], list[tuple[Any, ...]]] = {}
    for fast_path in (True, False):
        async with served_over_http(guarded_settings(fast_path=fast_path)) as served:
            for mode in ("auto", "legacy"):
                answers[(fast_path, mode)] = await calls_by(served.mcp_url, mode)
            # Every call of both clients went by the fast path when it was on, and the modern
            # client's read (a handshake-era client's read of a modern upstream never does).
            assert forwarded_by(served) == (2 * len(CALLS) + 1 if fast_path else 0)
    assert answers[(True, "auto")] == answers[(False, "auto")]
    assert answers[(True, "legacy")] == answers[(False, "legacy")]


async def test_a_poisoned_tool_is_held_with_its_reason_until_an_admin_approves_it() -> None:
    async with served_over_http(guarded_settings(), admin_token=ADMIN_TOKEN) as served:
        headers = {"Authorization": f"Bearer {ADMIN_TOKEN}"}
        api = f"{served.base}/api/v1/aggregator"
        async with httpx.AsyncClient(headers=headers, timeout=30) as http:
            [server] = (await http.get(f"{api}/servers")).json()
            tools = (await http.get(f"{api}/servers/{server['id']}/tools")).json()
            [held] = [tool for tool in tools if tool["original_name"] == "add"]
            assert held["pin_status"] == "new"
            [reason] = held["hold_reasons"]
            assert "guardrail 'poison' (injection)" in reason and "hidden_instruction" in reason
            assert "credential_access" in reason
            served_names = {tool["original_name"] for tool in tools if tool["pin_status"] == "approved"}
            assert "add" not in served_names and "weather" in served_names
            approved = await http.post(f"{api}/servers/{server['id']}/tools/approve", json={"tools": ["add"]})
            assert approved.json() == {"approved": ["add"]}
        async with Client(served.mcp_url, mode="auto", cache=None) as client:
            result = await client.call_tool("leaky__add", {"a": 1, "b": 2})
            assert not result.is_error and text_of(result) == "3"


async def test_every_decision_is_audited_and_counted_without_the_value() -> None:
    async with served_over_http(guarded_settings(), admin_token=ADMIN_TOKEN) as served:
        async with Client(served.mcp_url, mode="auto", cache=None) as client:
            await client.call_tool("leaky__aws_credentials", {})
            await client.call_tool("leaky__fetch_page", {"url": "https://news.example"})
        gateway = served.gateway
        assert gateway.audit is not None
        await gateway.audit.writer.flush()
        page = await gateway.audit.log.query(AuditQuery())
        by_tool = {entry.tool: entry for entry in page.items}
        assert by_tool["aws_credentials"].guardrails == (
            {
                "rule": "secrets",
                "action": "mask",
                "kind": "secrets",
                "where": "results",
                "found": ["aws_access_key", "aws_secret_key"],
            },
        )
        fetched = by_tool["fetch_page"].guardrails
        assert fetched is not None and fetched[0]["action"] == "block" and fetched[0]["rule"] == "poison"
        listing = by_tool["add"]
        assert listing.method == "tools/list" and listing.outcome.value == "denied"
        stored = json.dumps([entry.to_json(with_arguments=True) for entry in page.items])
        assert AWS_ACCESS_KEY not in stored and "id_rsa" not in stored
        async with httpx.AsyncClient(headers={"Authorization": f"Bearer {ADMIN_TOKEN}"}) as http:
            metrics = (await http.get(f"{served.base}/metrics")).text
        assert (
            'mcp_aggregator_guardrail_decisions_total{rule="secrets",action="mask",kind="secrets",where="results"} 1'
            in metrics
        )
        assert 'rule="poison",action="block",kind="injection",where="descriptions"} 1' in metrics
        assert 'rule="poison",action="block",kind="injection",where="results"} 1' in metrics


async def test_a_blocked_argument_is_refused_alike_on_both_paths_naming_the_rule() -> None:
    rule = {"name": "tickets", "kind": "pattern", "patterns": [r"TICKET-\d+"], "on": ["arguments"], "action": "block"}
    rules = [rule]
    refusals = []
    for fast_path in (True, False):
        async with (
            served_over_http(guarded_settings(rules, fast_path=fast_path)) as served,
            Client(served.mcp_url, mode="auto", cache=None) as client,
        ):
            with pytest.raises(MCPError) as info:
                await client.call_tool("leaky__echo", {"text": "see TICKET-42"})
            refusals.append((info.value.error.code, info.value.error.message))
            fine = await client.call_tool("leaky__echo", {"text": "no ticket"})
            assert text_of(fine) == "no ticket"
    assert refusals[0] == refusals[1]
    code, message = refusals[0]
    assert code == -32007
    assert "guardrail 'tickets' (pattern) found tickets in the arguments" in message and "TICKET-42" not in message


async def test_an_upstreams_error_is_masked_or_blocked_alike_on_both_paths() -> None:
    stopper = {"name": "stopper", "kind": "pattern", "patterns": ["STOPME"], "on": ["results"], "action": "block"}
    errors: dict[tuple[bool, str], list[tuple[int, str]]] = {}
    for fast_path in (True, False):
        async with served_over_http(guarded_settings([*RULES, stopper], fast_path=fast_path)) as served:
            for mode in ("auto", "legacy"):
                async with Client(served.mcp_url, mode=mode, cache=None) as client:  # type: ignore[arg-type]
                    await client.list_tools()
                    seen = []
                    for say in ("", " STOPME"):
                        with pytest.raises(MCPError) as info:
                            await client.call_tool("leaky__failing", {"say": say})
                        seen.append((info.value.error.code, info.value.error.message))
                    errors[(fast_path, mode)] = seen
            assert forwarded_by(served) == (4 if fast_path else 0)
    assert errors[(True, "auto")] == errors[(False, "auto")]
    assert errors[(True, "legacy")] == errors[(False, "legacy")]
    (masked_code, masked), (blocked_code, blocked) = errors[(True, "auto")]
    assert masked_code == -32603 and "backend refused key [REDACTED:aws_access_key]" in masked
    assert blocked_code == -32007
    assert "guardrail 'stopper' (pattern) found stopper in the result" in blocked
    assert AWS_ACCESS_KEY not in masked + blocked
