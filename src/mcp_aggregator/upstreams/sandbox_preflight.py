"""What ``check-config`` says about each stdio server's sandbox before anything starts: a
granted path that does not exist, or a path the server is given that its sandbox would hide
(with the line to add). Nothing is started: the launch is only planned."""

from __future__ import annotations

import os
from collections.abc import Mapping

from mcp_aggregator.errors import ConfigError, SandboxError
from mcp_aggregator.sandbox.sandbox_policy import SandboxSite, gateway_files
from mcp_aggregator.settings import ServerConfig, Settings, Transport, expand_mapping
from mcp_aggregator.upstreams.transport_target import sandbox_launch


def sandbox_warnings(settings: Settings, env: Mapping[str, str] | None = None) -> list[str]:
    """One sentence per problem, naming the server, the path and the line to add."""
    site = SandboxSite(
        settings.serve.sandbox,
        settings.serve.data_dir,
        hidden=gateway_files(settings.source_path, settings.registry.database_url, settings.search.cache_path),
    )
    found: list[str] = []
    for server in settings.servers:
        if server.transport is Transport.STDIO:
            found += _warnings(server, site, dict(os.environ) if env is None else env)
    return found


def _warnings(server: ServerConfig, site: SandboxSite, env: Mapping[str, str]) -> list[str]:
    try:
        expanded = expand_mapping(server.env, env, server=server.name, field="env")
    except ConfigError:
        expanded = {}  # an unset variable is said at start; its paths cannot be judged here
    launch = sandbox_launch(server, expanded, site)
    try:
        launch.prepare()
    except SandboxError as exc:
        return [str(exc)]
    return [
        f"{server.name}: {hint.path} ({hint.given_as}) exists but its sandbox would not show it"
        f"{' writable' if hint.access == 'write' else ''}: add `{hint.grant}` to its entry"
        for hint in launch.hidden_paths()
    ]
