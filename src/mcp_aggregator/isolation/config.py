"""What a stdio upstream's sandbox grants: paths, network, limits (``sandbox:`` per server).

The shape is shared by hand-written entries, ``serve.sandbox`` (the default every stdio
server inherits) and servers installed from an MCP registry, so it stays small and
declarative; turning it into a command line is the job of the launcher in this package.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

_HOST_PORT = re.compile(r"^(?P<host>\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.\-*]+):(?P<port>[0-9]{1,5})$")


class NetworkMode(StrEnum):
    OUTBOUND = "outbound"
    """The internet and registries; not the host's loopback, its other addresses, or
    private ranges."""
    NONE = "none"
    HOST = "host"
    """The host's network as it is: an explicit opt-out, shown as such."""


def check_host_port(value: str) -> str:
    """``host:port`` with a port in 1..65535; raise ValueError naming what is wrong."""
    match = _HOST_PORT.fullmatch(value.strip())
    if match is None:
        raise ValueError(f"must be host:port (e.g. api.example.com:443), got {value!r}")
    port = int(match.group("port"))
    if not 1 <= port <= 65535:
        raise ValueError(f"port must be in 1..65535, got {value!r}")
    return value.strip()


class SandboxConfig(BaseModel):
    """One stdio server's sandbox. Unset fields inherit ``serve.sandbox``; paths are
    checked for existence when the server starts, not when the file is parsed, so that a
    configuration written on one machine can be validated on another."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool | None = None
    """``false`` opts this server out (shown as unsandboxed); ``None`` inherits."""
    read: tuple[str, ...] = ()
    """Extra read-only paths."""
    write: tuple[str, ...] = ()
    """Extra read-write paths."""
    network: NetworkMode | tuple[str, ...] | None = None
    """``outbound`` (default) | ``none`` | ``host`` | an allow-list of ``host:port``."""
    memory_mb: int | None = Field(default=None, gt=0)
    processes: int | None = Field(default=None, gt=0)
    cpu_secs: int | None = Field(default=None, gt=0)

    @field_validator("read", "write", mode="before")
    @classmethod
    def _paths(cls, value: Any) -> Any:
        if isinstance(value, str):
            value = [value]
        if isinstance(value, list | tuple):
            for item in value:
                if not isinstance(item, str) or not item.strip() or "\x00" in item:
                    raise ValueError(f"each path must be a non-empty string, got {item!r}")
        return value

    @field_validator("network", mode="before")
    @classmethod
    def _network(cls, value: Any) -> Any:
        if value is None:
            return None
        if isinstance(value, str):
            lowered = value.strip().lower()
            if lowered not in {m.value for m in NetworkMode}:
                raise ValueError(f"must be outbound, none, host or a list of host:port, got {value!r}")
            return NetworkMode(lowered)
        if isinstance(value, list | tuple):
            if not value:
                raise ValueError("an allow-list must name at least one host:port (use 'none' for no network)")
            return tuple(check_host_port(str(item)) for item in value)
        raise ValueError(f"must be outbound, none, host or a list of host:port, got {value!r}")
