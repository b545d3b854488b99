"""Confining stdio upstream servers: what each may read, write and reach."""

from mcp_aggregator.isolation.config import NetworkMode, SandboxConfig

__all__ = ["NetworkMode", "SandboxConfig"]
