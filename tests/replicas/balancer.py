"""Real HAProxy in front of replicas, rendered from ``deploy/haproxy.cfg.template``."""

from __future__ import annotations

import os
import shutil
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest

from mcp_aggregator.replicas.haproxy_config import render_haproxy_config
from tests.conftest import REPO
from tests.replicas.cluster import Spawned, free_port, wait_healthy

TEMPLATE = REPO / "deploy" / "haproxy.cfg.template"


def haproxy_or_skip() -> str:
    """The haproxy binary; skips outside CI when it is missing (CI installs it: scripts/bootstrap.sh)."""
    path = shutil.which("haproxy") or next(
        (p for p in ("/usr/sbin/haproxy", "/usr/local/sbin/haproxy") if os.access(p, os.X_OK)), None
    )
    if path is None:
        reason = "haproxy is not installed (scripts/bootstrap.sh installs it when run as root)"
        if os.environ.get("CI"):
            pytest.fail(reason)
        pytest.skip(reason)
    return path


@dataclass
class Balancer:
    port: int
    stats_port: int
    proc: Spawned

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@asynccontextmanager
async def haproxy(directory: Path, replica_ports: Sequence[int]) -> AsyncIterator[Balancer]:
    binary = haproxy_or_skip()
    port, stats_port = free_port(), free_port()
    config = directory / "haproxy.cfg"
    config.write_text(
        render_haproxy_config(
            TEMPLATE.read_text(),
            port=port,
            stats_port=stats_port,
            replicas=[f"127.0.0.1:{p}" for p in replica_ports],
        )
    )
    balancer = Balancer(port, stats_port, Spawned([binary, "-db", "-f", str(config)], directory / "haproxy.log"))
    balancer.proc.start()
    try:
        await wait_healthy(balancer.base, within=30, proc=balancer.proc)
        yield balancer
    finally:
        with anyio.CancelScope(shield=True):
            await balancer.proc.stop()
