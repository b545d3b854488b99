"""The pure rules of an audit entry: outcome, denial, digest, scrubbed values."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from mcp_aggregator.audit import Outcome
from mcp_aggregator.audit.audit_entry import arguments_digest, error_text, is_denial, outcome_of, scrubbed_arguments
from mcp_aggregator.errors import (
    AccessDeniedError,
    PolicyError,
    ToolHeldError,
    UpstreamCallError,
    UpstreamTimeoutError,
)


class PolicyDeniedError(AccessDeniedError):
    """How a profile/policy stage refuses a call."""


class ForeignDeniedError(Exception):
    """A denial from code that does not know our error tree."""


class Refusal(Exception):
    denied = True


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (types.CallToolResult(content=[]), Outcome.OK),
        (types.CallToolResult(content=[], is_error=True), Outcome.ERROR),
        (types.GetPromptResult(messages=[]), Outcome.OK),
        (b'{"jsonrpc":"2.0","id":"agw:1","result":{"content":[],"isError":false}}', Outcome.OK),
        (b'{"jsonrpc":"2.0","id":"agw:1","result":{"content":[], "isError": true}}', Outcome.ERROR),
        (b'{"result":{"content":[{"type":"text","text":"' + b"x" * 10_000 + b'"}],"isError":true}}', Outcome.ERROR),
        (UpstreamCallError("s", "boom", code=-32602), Outcome.ERROR),
        (UpstreamTimeoutError("s", "slow"), Outcome.ERROR),
        (PolicyDeniedError("no"), Outcome.DENIED),
        (ToolHeldError("s", "t", reason="changed"), Outcome.DENIED),
        (ForeignDeniedError(), Outcome.DENIED),
        (Refusal(), Outcome.DENIED),
    ],
)
def test_outcome_of_a_call_follows_its_result(result: object, expected: Outcome) -> None:
    assert outcome_of(result) is expected


def test_access_denied_error_is_a_policy_error_marked_denied() -> None:
    exc = PolicyDeniedError("client ci may not call delete_repository")
    assert isinstance(exc, PolicyError)
    assert exc.denied is True
    assert is_denial(exc)
    assert not is_denial(UpstreamCallError("s", "boom", code=-1))


def test_equal_arguments_in_any_key_order_have_one_digest() -> None:
    a = arguments_digest({"b": 1, "a": {"y": [1, 2], "x": "é"}})
    b = arguments_digest({"a": {"x": "é", "y": [1, 2]}, "b": 1})
    assert a == b and a is not None and len(a) == 64
    assert arguments_digest({"b": 2, "a": {"x": "é", "y": [1, 2]}}) != a
    assert arguments_digest(None) is None
    assert arguments_digest({}) != arguments_digest(None)


def test_argument_values_keep_what_is_not_secret_and_hide_the_rest() -> None:
    def scrub(text: str) -> str:
        return text.replace("hunter2-config-secret", "***")

    arguments: dict[str, Any] = {
        "path": "/srv/data/report.txt",
        "api_key": "plain",
        "headers": {"Authorization": "Bearer x", "accept": "json"},
        "note": "use hunter2-config-secret here",
        "items": [1, "ghp_abcdefghijklmnopqrstuvwxyz0123", None],
        "count": 3,
    }
    assert scrubbed_arguments(arguments, scrub) == {
        "path": "/srv/data/report.txt",
        "api_key": "***",
        "headers": {"Authorization": "***", "accept": "json"},
        "note": "use *** here",
        "items": [1, "***", None],
        "count": 3,
    }


def test_error_text_names_the_error_scrubbed_and_bounded() -> None:
    text = error_text(
        UpstreamCallError("s", "token=SECRET " + "x" * 5000, code=-1), lambda t: t.replace("SECRET", "***")
    )
    assert text is not None
    assert text.startswith("UpstreamCallError: ") and "SECRET" not in text and "***" in text
    assert len(text) == 2000
    assert error_text(types.CallToolResult(content=[]), str) is None


def test_text_that_is_not_valid_unicode_is_digested_and_kept_escaped() -> None:
    broken = {"text": "a\ud800b"}
    assert arguments_digest(broken) == arguments_digest({"text": "a\ud800b"})
    assert scrubbed_arguments(broken, str) == {"text": "a\\ud800b"}
    text = error_text(UpstreamCallError("s", "bad \udfff", code=-1), str)
    assert text is not None and text.endswith("bad \\udfff")
