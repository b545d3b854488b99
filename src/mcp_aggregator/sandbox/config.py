"""What a stdio upstream's sandbox grants: paths, network, limits (``sandbox:`` per server).

The shape is shared by hand-written entries, ``serve.sandbox`` (the default every stdio
server inherits) and servers installed from an MCP registry, so it stays small and
declarative; turning it into a command line is the job of the launcher in this package.
"""

from __future__ import annotations

import ipaddress
import re
from enum import StrEnum
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, field_validator

_HOST_PORT = re.compile(r"^(?P<host>[^\s:]+|\[[^\]]*\]):(?P<port>[0-9]{1,5})$")
_HOSTNAME = re.compile(
    r"^[A-Za-z0-9_]([A-Za-z0-9_\-]*[A-Za-z0-9_])?(\.[A-Za-z0-9_]([A-Za-z0-9_\-]*[A-Za-z0-9_])?)*\.?$"
)
MAX_MEMORY_MB: Final = 1 << 20
"""1 TiB: beyond it is a typo (the kernel would take ``2**50`` MB shifted to bytes as 0)."""
MAX_PROCESSES: Final = 1 << 22
"""The kernel's most (``PID_MAX_LIMIT``)."""
MAX_CPU_SECS: Final = 366 * 24 * 3600
"""A year of CPU time."""


class NetworkMode(StrEnum):
    OUTBOUND = "outbound"
    """The internet and registries; not the host's loopback, its other addresses, or
    private ranges."""
    NONE = "none"
    HOST = "host"
    """The host's network as it is: an explicit opt-out, shown as such."""


def check_host_port(value: str) -> str:
    """``host:port`` with a port in 1..65535 and a host the sandbox can reach: a name or an
    IPv4 address, not a wildcard, an IPv6 address (the sandbox's network is IPv4 only) or
    the loopback (the host's own services are never reachable); raise ValueError naming
    what is wrong."""
    text = value.strip()
    match = _HOST_PORT.fullmatch(text)
    if match is None:
        raise ValueError(f"must be host:port (e.g. api.example.com:443), got {value!r}")
    host, port = match.group("host"), int(match.group("port"))
    if "*" in host:
        raise ValueError(f"wildcards are not supported, name each host (e.g. api.example.com:443), got {value!r}")
    if host.startswith("["):
        raise ValueError(f"IPv6 addresses are not supported (a sandbox's network is IPv4 only), got {value!r}")
    if not _HOSTNAME.fullmatch(host):
        raise ValueError(f"must be host:port with a host name or IPv4 address, got {value!r}")
    if _is_loopback(host):
        raise ValueError(f"the host's own loopback is never reachable from a sandbox, got {value!r}")
    if not 1 <= port <= 65535:
        raise ValueError(f"port must be in 1..65535, got {value!r}")
    return text


def _is_loopback(host: str) -> bool:
    name = host.rstrip(".").lower()
    if name == "localhost" or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


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
    memory_mb: int | None = Field(default=None, gt=0, le=MAX_MEMORY_MB)
    processes: int | None = Field(default=None, gt=0, le=MAX_PROCESSES)
    """At most this many processes and threads at once; a fork past it fails, the server goes on."""
    cpu_secs: int | None = Field(default=None, gt=0, le=MAX_CPU_SECS)
    """CPU seconds per process (each child has its own)."""

    @field_validator("memory_mb", "processes", "cpu_secs", mode="before")
    @classmethod
    def _whole_number(cls, value: Any) -> Any:
        # ``true`` would pass as 1, and 64.5 as 64: a limit is a whole number, written as one.
        if isinstance(value, bool) or (isinstance(value, float) and not value.is_integer()):
            raise ValueError(f"must be a whole number, got {value!r}")
        return value

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
