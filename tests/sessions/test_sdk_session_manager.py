"""The seam to the SDK's private session handling holds for the installed SDK, and names
exactly what moved when an SDK changes it."""

from __future__ import annotations

import pytest
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import StreamableHTTPServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.types import Receive, Scope, Send

from mcp_aggregator.sessions.sdk_session_manager import SdkChangedError, SdkSessionManager, check_sdk


def test_the_installed_sdk_has_what_the_seam_overrides_and_reads() -> None:
    check_sdk()
    manager = SdkSessionManager(Server("seam"))
    assert manager.transports == {} and manager.owners == {} and manager.task_group is None


class _RenamedAndGone(StreamableHTTPSessionManager):
    """An SDK release that renamed a parameter and dropped a method."""

    async def _serve_opening_request(  # type: ignore[override]
        self, transport: StreamableHTTPServerTransport, scope: Scope, receive: Receive, send: Send
    ) -> None:
        pass

    _discard_session = None  # type: ignore[assignment]


def test_a_changed_sdk_fails_loudly_naming_each_change_and_the_seam() -> None:
    with pytest.raises(SdkChangedError) as caught:
        check_sdk(_RenamedAndGone)
    message = str(caught.value)
    assert "StreamableHTTPSessionManager changed what sealed sessions override" in message
    assert "sdk_session_manager.py" in message
    assert (
        "_serve_opening_request takes ('self', 'transport', 'scope', 'receive', 'send'),"
        " not ('self', 'http_transport', 'scope', 'receive', 'send')" in message
    )
    assert "_discard_session is gone" in message
