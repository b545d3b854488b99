"""``ProfileServers``: one MCP server per profile, the whole catalogue (``default``) first.

Each profile is served by its own ``GatewayServer`` over its own ``ProfileGateway`` (the
slice, its exposure, its surface and notifications); ``default`` is the gateway itself, or a
whole-catalogue view when global ``tool_overrides`` are set.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping

import anyio
from anyio.abc import TaskStatus

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.identity import DEFAULT_PROFILE
from mcp_aggregator.identity.profile import Profile
from mcp_aggregator.serve.mcp_server import GatewayServer
from mcp_aggregator.serve.profile_gateway import ProfileGateway
from mcp_aggregator.serve.serve_gateway import ServeGateway
from mcp_aggregator.serve.surfaces import build_surface


class ProfileServers:
    """The MCP servers of every configured profile, by name."""

    def __init__(self, gateway: ServeGateway) -> None:
        settings = gateway.settings
        self.profiles: dict[str, Profile] = {DEFAULT_PROFILE: Profile.default(settings.tool_overrides)}
        for spec in settings.profiles:
            self.profiles[spec.name] = Profile.of(spec, settings.tool_overrides)
        self.servers: dict[str, GatewayServer] = {}
        for name, profile in self.profiles.items():
            view: ServeGateway = gateway
            if name != DEFAULT_PROFILE or profile.overrides:
                view = ProfileGateway(gateway, profile)
            self.servers[name] = GatewayServer(view, build_surface(view), profile=name)

    @property
    def default(self) -> GatewayServer:
        return self.servers[DEFAULT_PROFILE]

    @property
    def named(self) -> Mapping[str, GatewayServer]:
        """Every profile but ``default``."""
        return {name: server for name, server in self.servers.items() if name != DEFAULT_PROFILE}

    def __iter__(self) -> Iterator[tuple[str, GatewayServer]]:
        return iter(self.servers.items())

    def get(self, name: str) -> GatewayServer:
        """Raises ``ConfigError`` naming the known profiles."""
        try:
            return self.servers[name]
        except KeyError:
            known = ", ".join(sorted(self.servers))
            raise ConfigError(f"no profile named {name!r} (known: {known})", path="--profile") from None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Every server's background work (parked calls, notifications)."""
        async with anyio.create_task_group() as tg:
            for server in self.servers.values():
                await tg.start(server.run)
            task_status.started()
