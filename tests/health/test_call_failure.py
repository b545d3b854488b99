from __future__ import annotations

import pytest

from mcp_aggregator.errors import (
    UpstreamCallError,
    UpstreamClosedError,
    UpstreamConnectError,
    UpstreamError,
    UpstreamTimeoutError,
)
from mcp_aggregator.health.call_failure import CallFailure, classify_call_failure, refused


def raised_from(error: UpstreamError, cause: BaseException) -> UpstreamError:
    try:
        try:
            raise cause
        except BaseException as exc:
            raise error from exc
    except UpstreamError as mapped:
        return mapped


@pytest.mark.parametrize(
    ("error", "kind"),
    [
        (UpstreamCallError("s", "Unknown tool", code=-32602), CallFailure.NONE),
        (UpstreamCallError("s", "Session terminated", code=-32600), CallFailure.LOST),
        (UpstreamCallError("s", "Session not found", code=-32600), CallFailure.LOST),
        (UpstreamCallError("s", "Session terminated", code=-32000), CallFailure.NONE),
        (UpstreamError("s", "something else"), CallFailure.NONE),
        (UpstreamClosedError("s", "the server closed its output"), CallFailure.TRANSPORT),
        (UpstreamTimeoutError("s", "timeout after 3s while calling tool 'x'"), CallFailure.TRANSPORT),
        (UpstreamConnectError("s", "connect timeout after 30s"), CallFailure.TRANSPORT),
        (UpstreamClosedError("s", "upstream went away (connection refused)"), CallFailure.LOST),
        (
            raised_from(UpstreamClosedError("s", "cannot connect"), ConnectionRefusedError(111, "nope")),
            CallFailure.LOST,
        ),
        (
            raised_from(UpstreamClosedError("s", "reset"), ConnectionResetError(104, "Connection reset by peer")),
            CallFailure.TRANSPORT,
        ),
    ],
)
def test_call_failures_are_told_apart_by_what_they_say_about_the_transport(
    error: UpstreamError, kind: CallFailure
) -> None:
    assert classify_call_failure(error) is kind


def test_a_refusal_inside_an_exception_group_is_found() -> None:
    group = BaseExceptionGroup("transport", [ValueError("x"), OSError("All connection attempts failed")])
    assert refused(raised_from(UpstreamConnectError("s", "ConnectError"), group))
    assert not refused(UpstreamConnectError("s", "handshake failed"))
