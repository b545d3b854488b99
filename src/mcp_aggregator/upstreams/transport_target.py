"""Turning a ``ServerConfig`` into what ``mcp.Client`` connects to, expanding ``${VAR}`` late."""

from __future__ import annotations

from collections.abc import Mapping
from contextlib import AbstractAsyncContextManager, AsyncExitStack
from dataclasses import dataclass, field
from typing import Any

import httpx2
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, get_default_environment
from mcp.client.streamable_http import streamable_http_client
from mcp.server import Server

from mcp_aggregator.bridges import RawAnswer, open_bridge
from mcp_aggregator.credentials.upstream_bearer import UpstreamBearer
from mcp_aggregator.sandbox.sandbox_launch import SandboxLaunch
from mcp_aggregator.sandbox.sandbox_policy import SandboxSite, effective
from mcp_aggregator.settings import ServerConfig, Transport, expand_mapping
from mcp_aggregator.settings.env_expansion import SecretScrubber, secret_values
from mcp_aggregator.settings.server_config import BRIDGED
from mcp_aggregator.upstreams.stdio_pipe import StdioPipe

ClientTarget = StdioServerParameters | AbstractAsyncContextManager[Any] | Server[Any]
"""A bridge (``openapi``, ``a2a``) is an in-process ``Server`` the client talks to directly."""


@dataclass(frozen=True)
class Target:
    """What ``Client`` connects to, plus what raw fast-path calls need for this transport."""

    client_target: ClientTarget
    pipe: StdioPipe | None = None
    """stdio: the pipe raw calls share with the SDK session."""
    headers: Mapping[str, str] = field(default_factory=dict)
    """streamable HTTP: the configured headers, expanded."""
    bridge_raw: RawAnswer | None = None
    """A bridge that answers a raw ``tools/call`` itself, without the SDK's client and server."""
    mode: str | None = None
    """The era a bridge must be spoken to at; None: the server's ``protocol``."""


async def enter_target(
    stack: AsyncExitStack,
    config: ServerConfig,
    env: Mapping[str, str],
    *,
    max_message_bytes: int = 64 << 20,
    auth: UpstreamBearer | None = None,
    sandbox: SandboxSite | None = None,
) -> Target:
    """What ``Client`` should connect to (see ``Target``); HTTP clients are closed by ``stack``.

    ``auth`` (an ``auth: oauth`` server's) signs every HTTP request of the transport.
    ``sandbox`` (the gateway's): a stdio server starts in its sandbox (see ``sandbox``).

    Raises ``EnvVarError`` if a referenced variable is unset, ``SignInRequiredError`` if
    ``auth`` has no token to give, ``SandboxError`` if the sandbox cannot be set up.
    """
    if config.transport is Transport.STDIO:
        assert config.command is not None  # guaranteed by ServerConfig validation
        params = StdioServerParameters(
            command=config.command,
            args=list(config.args),
            env=expand_mapping(config.env, env, server=config.name, field="env") or None,
            cwd=config.cwd,
        )
        scrub = SecretScrubber(secret_values(config.connection_config(), env))
        launch = None
        if sandbox is not None:
            launch = sandbox_launch(config, params.env or {}, sandbox)
            launch.prepare()
        pipe = StdioPipe(params, name=config.name, max_message_bytes=max_message_bytes, scrub=scrub, launch=launch)
        return Target(pipe.open(), pipe=pipe)
    headers = expand_mapping(config.headers, env, server=config.name, field="headers")
    if auth is not None:
        await auth.ensure_ready()
    if config.transport in BRIDGED:
        secrets = expand_mapping(config.security, env, server=config.name, field="security")
        bridge = await open_bridge(stack, config, headers, secrets, auth)
        return Target(bridge.server, bridge_raw=bridge.raw, mode=bridge.mode)
    if config.transport is Transport.SSE:
        assert config.url is not None
        return Target(sse_client(config.url, headers=headers or None, auth=auth))
    assert config.base_url is not None
    http_client = await stack.enter_async_context(
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(config.connect_timeout_secs, read=None), auth=auth)
    )
    return Target(streamable_http_client(config.base_url, http_client=http_client), headers=headers)


def sandbox_launch(config: ServerConfig, env: Mapping[str, str], site: SandboxSite) -> SandboxLaunch:
    """The start of stdio server ``config`` in its sandbox, not yet prepared; ``env`` is its
    ``env`` expanded."""
    assert config.command is not None
    return SandboxLaunch(
        config.name,
        config.command,
        tuple(config.args),
        env,
        config.cwd,
        effective(site.defaults, config.sandbox),
        site,
        get_default_environment(),
    )
