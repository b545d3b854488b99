"""Resource ceilings of seed 003 and the pure checks that enforce them."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from mcp_aggregator.errors import LimitExceededError


class Limits(BaseModel):
    """Seed 003's "Resource Limits": servers, tools per server, tools in all, sessions."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_servers: int = Field(50, ge=1)
    max_tools_per_server: int = Field(1000, ge=1)
    max_total_tools: int = Field(10_000, ge=1)
    max_concurrent_sessions: int = Field(50, ge=1)


def check_server_limit(limits: Limits, server_count_after: int) -> None:
    """Refuse a registration that would make ``server_count_after`` servers.

    Raises:
        LimitExceededError: more than ``limits.max_servers``.
    """
    if server_count_after > limits.max_servers:
        raise LimitExceededError(f"server limit reached: at most {limits.max_servers} servers may be registered")


def check_session_limit(limits: Limits, session_count_after: int) -> None:
    """Refuse opening a session that would make ``session_count_after`` live sessions.

    Raises:
        LimitExceededError: more than ``limits.max_concurrent_sessions``.
    """
    if session_count_after > limits.max_concurrent_sessions:
        raise LimitExceededError(f"session limit reached: at most {limits.max_concurrent_sessions} concurrent sessions")


def check_tool_limits(limits: Limits, server_name: str, tool_count: int, other_servers_tools: int) -> None:
    """Refuse a discovery that would give ``server_name`` ``tool_count`` tools while the
    other servers hold ``other_servers_tools``.

    Pure; discovery calls it before writing (``Registry.replace_tools`` calls it too),
    logs the refusal and keeps the server's previous tools.

    Raises:
        LimitExceededError: past ``max_tools_per_server`` or ``max_total_tools``.
    """
    if tool_count > limits.max_tools_per_server:
        raise LimitExceededError(
            f"server {server_name} lists {tool_count} tools; at most "
            f"{limits.max_tools_per_server} tools per server are allowed"
        )
    total = tool_count + other_servers_tools
    if total > limits.max_total_tools:
        raise LimitExceededError(
            f"server {server_name} lists {tool_count} tools, {total} in all; at most "
            f"{limits.max_total_tools} tools are allowed in all"
        )
