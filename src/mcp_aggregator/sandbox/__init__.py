"""Confining stdio upstream servers: what each may read, write and reach."""

from mcp_aggregator.sandbox.config import NetworkMode, SandboxConfig

__all__ = ["NetworkMode", "SandboxConfig"]
