"""Turning a ``ServerConfig`` into what ``mcp.Client`` connects to, expanding ``${VAR}`` late."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from typing import Any

import httpx2
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcp_aggregator.settings import ServerConfig, Transport, expand_mapping

ClientTarget = StdioServerParameters | AbstractAsyncContextManager[Any]


async def enter_target(stack: AsyncExitStack, config: ServerConfig, env: Mapping[str, str]) -> ClientTarget:
    """What ``Client`` should connect to; HTTP clients are closed by ``stack``.

    Raises ``EnvVarError`` if a referenced variable is unset.
    """
    if config.transport is Transport.STDIO:
        assert config.command is not None  # guaranteed by ServerConfig validation
        return StdioServerParameters(
            command=config.command,
            args=list(config.args),
            env=expand_mapping(config.env, env, server=config.name, field="env") or None,
            cwd=config.cwd,
        )
    headers = expand_mapping(config.headers, env, server=config.name, field="headers")
    if config.transport is Transport.SSE:
        assert config.url is not None
        return sse_client(config.url, headers=headers or None)
    assert config.base_url is not None
    http_client = await stack.enter_async_context(
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(config.connect_timeout_secs, read=None))
    )
    return streamable_http_client(config.base_url, http_client=http_client)
