"""One stdio server's sandbox as it applies: its own ``sandbox:`` over ``serve.sandbox``.

Pure: merging and the summary the status and the page show. What counts as *explicit*
matters: a setting somebody wrote is required (a missing tool is an error at start), one
left to the built-in default is best effort (a missing tool is a warning in the status).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import make_url

from mcp_aggregator.sandbox.config import NetworkMode, SandboxConfig

DEFAULT_MEMORY_MB = 2048
DEFAULT_PROCESSES = 1024


@dataclass(frozen=True)
class SandboxSite:
    """What the gateway knows that every sandbox needs: the defaults (``serve.sandbox``),
    where per-server homes and shared caches live, and the paths no server may see (the
    data dir with the admin token, secret key and database; the configuration file)."""

    defaults: SandboxConfig
    data_dir: Path
    hidden: tuple[Path, ...] = ()

    @property
    def root(self) -> Path:
        """``data_dir/sandbox``: ``<server>/home`` per server, ``cache/`` shared by runners."""
        return self.data_dir / "sandbox"


def gateway_files(config: Path | None, database_url: str, cache_path: Path | None) -> tuple[Path, ...]:
    """The gateway's files no server may see, wherever they live: its configuration, a
    SQLite registry (and its journals: they hold what the database does) and the search's
    embedding cache. Those in the data dir are hidden with it."""
    files = [config] if config is not None else []
    url = make_url(database_url)
    database = url.database
    if url.get_backend_name() == "sqlite" and database and database != ":memory:" and not database.startswith("file:"):
        files += [Path(database + suffix) for suffix in ("", "-wal", "-shm", "-journal")]
    if cache_path is not None:
        files += [Path(str(cache_path) + suffix) for suffix in ("", "-wal", "-shm", "-journal")]
    return tuple(files)


@dataclass(frozen=True)
class Limits:
    memory_mb: int | None
    processes: int | None
    cpu_secs: int | None


@dataclass(frozen=True)
class EffectiveSandbox:
    """The merged sandbox of one server. ``enabled`` False means it runs unconfined."""

    enabled: bool
    enabled_explicit: bool
    read: tuple[str, ...]
    write: tuple[str, ...]
    network: NetworkMode | tuple[str, ...]
    network_explicit: bool
    limits: Limits
    limits_explicit: bool

    def summary(self) -> dict[str, Any]:
        """The JSON the status, the REST API and the page show (without runtime facts)."""
        network = self.network.value if isinstance(self.network, NetworkMode) else list(self.network)
        return {
            "enabled": self.enabled,
            "read": list(self.read),
            "write": list(self.write),
            "network": network,
            "memory_mb": self.limits.memory_mb,
            "processes": self.limits.processes,
            "cpu_secs": self.limits.cpu_secs,
        }


def effective(defaults: SandboxConfig, own: SandboxConfig | None) -> EffectiveSandbox:
    """``own`` over ``defaults`` field by field; grants add up (the defaults' first)."""
    mine = own or SandboxConfig()

    def pick(name: str) -> Any:
        value = getattr(mine, name)
        return value if value is not None else getattr(defaults, name)

    enabled = pick("enabled")
    network = pick("network")
    limits_set = [pick(name) for name in ("memory_mb", "processes", "cpu_secs")]
    return EffectiveSandbox(
        enabled=True if enabled is None else bool(enabled),
        enabled_explicit=enabled is not None,
        read=_unique(defaults.read + mine.read),
        write=_unique(defaults.write + mine.write),
        network=NetworkMode.OUTBOUND if network is None else network,
        network_explicit=network is not None,
        limits=Limits(
            memory_mb=limits_set[0] if limits_set[0] is not None else DEFAULT_MEMORY_MB,
            processes=limits_set[1] if limits_set[1] is not None else DEFAULT_PROCESSES,
            cpu_secs=limits_set[2],
        ),
        limits_explicit=any(value is not None for value in limits_set),
    )


def _unique(paths: tuple[str, ...]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(paths))
