"""``serve --workers N``: N gateway replicas on one host, on N consecutive ports, supervised.

Why consecutive ports and not one port shared with ``SO_REUSEPORT``: a 2025-11-25 client's
session lives in one process's memory, and the kernel spreads *connections* over
``SO_REUSEPORT`` listeners by a hash, so a session's next connection would often reach a
process that never saw it (404, re-initialize, again and again). Addressable replicas let
a load balancer stick sessions by ``Mcp-Session-Id`` and health-check each replica;
``deploy/haproxy.cfg`` is that balancer.

Replicas share state only through the PostgreSQL registry (changes reach each replica
through its change feed), so more than one needs a PostgreSQL ``registry.database_url``.
"""

from __future__ import annotations

import logging
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum

import anyio
from anyio.abc import Process, TaskStatus

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.registry.engine import is_sqlite
from mcp_aggregator.settings import Settings

logger = logging.getLogger(__name__)

REPLICA_ENV = "MCP_AGGREGATOR_REPLICA"
"""Set in each replica's environment to its index (0..N-1)."""
STOP_GRACE_SECS = 15.0
_RESTART_BACKOFF_SECS = (0.5, 1.0, 2.0, 5.0, 10.0)
_STABLE_SECS = 30.0
"""A replica that ran this long before exiting restarts with the shortest backoff again."""


class PoolState(StrEnum):
    NEW = "new"
    RUNNING = "running"
    STOPPED = "stopped"


def check_workers(settings: Settings, workers: int) -> None:
    """Refuse a worker count the settings cannot support.

    Raises:
        ConfigError: ``workers`` below 1; several workers on an embedded SQLite registry
            (each process would have its own view); several workers on port 0.
    """
    if workers < 1:
        raise ConfigError(f"must be at least 1, got {workers}", path="--workers")
    if workers == 1:
        return
    if is_sqlite(settings.registry.database_url):
        raise ConfigError(
            f"--workers {workers} needs a registry the replicas share: a PostgreSQL URL "
            "(postgresql+asyncpg://user@host/db), not SQLite, which belongs to one process",
            path="registry.database_url",
        )
    if settings.serve.port == 0:
        raise ConfigError(
            f"--workers {workers} needs a fixed base port (replicas listen on port .. port+{workers - 1}), not 0",
            path="serve.port",
        )
    if settings.serve.port + workers - 1 > 65535:
        raise ConfigError(
            f"replica ports {settings.serve.port}..{settings.serve.port + workers - 1} go past 65535", path="serve.port"
        )


@dataclass(frozen=True, slots=True)
class Replica:
    index: int
    port: int
    argv: tuple[str, ...]


def replica_commands(
    workers: int, base_port: int, serve_args: Sequence[str], *, python: str = sys.executable
) -> list[Replica]:
    """The command line of each replica: ``serve`` with its own port, everything else as given."""
    return [
        Replica(i, base_port + i, (python, "-m", "mcp_aggregator", "serve", *serve_args, "--port", str(base_port + i)))
        for i in range(workers)
    ]


class WorkerPool:
    """Runs the replicas, restarts one that exits, and stops them all on SIGTERM/SIGINT.

    ``await pool.run()`` returns after a signal (or cancellation) once every replica has
    exited: each gets SIGTERM and ``STOP_GRACE_SECS`` to drain, then SIGKILL. A pool runs once.
    """

    def __init__(self, replicas: Sequence[Replica], *, env: Mapping[str, str] | None = None) -> None:
        self.replicas = tuple(replicas)
        self._env = dict(os.environ if env is None else env)
        self.state = PoolState.NEW
        self.processes: dict[int, Process] = {}
        self.restarts = 0

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        if self.state is not PoolState.NEW:
            raise RuntimeError(f"a WorkerPool runs once; this one is {self.state.value}")
        self.state = PoolState.RUNNING
        try:
            async with anyio.create_task_group() as tg:
                for replica in self.replicas:
                    await tg.start(self._keep_running, replica)
                task_status.started()
                with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                    async for signum in signals:
                        name = signal.Signals(signum).name
                        logger.info("received %s; stopping %d replicas", name, len(self.replicas))
                        tg.cancel_scope.cancel()
                        break
        finally:
            self.state = PoolState.STOPPED

    async def _keep_running(self, replica: Replica, *, task_status: TaskStatus[None]) -> None:
        failures = 0
        started = False
        while True:
            env = {**self._env, REPLICA_ENV: str(replica.index)}
            process = await anyio.open_process(list(replica.argv), stdin=None, stdout=None, stderr=None, env=env)
            self.processes[replica.index] = process
            if not started:
                task_status.started()
                started = True
            began = anyio.current_time()
            try:
                code = await process.wait()
            finally:
                with anyio.CancelScope(shield=True):
                    await _stop(process)
            if anyio.current_time() - began > _STABLE_SECS:
                failures = 0
            delay = _RESTART_BACKOFF_SECS[min(failures, len(_RESTART_BACKOFF_SECS) - 1)]
            failures += 1
            self.restarts += 1
            logger.warning(
                "replica %d (port %d) exited with %s; restarting in %.1fs", replica.index, replica.port, code, delay
            )
            await anyio.sleep(delay)


async def _stop(process: Process) -> None:
    """SIGTERM, a grace period to drain, then SIGKILL; always reaps the process."""
    if process.returncode is not None:
        return
    process.terminate()
    with anyio.move_on_after(STOP_GRACE_SECS):
        await process.wait()
        return
    process.kill()
    await process.wait()
