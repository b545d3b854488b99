"""Several gateway replicas on one host (``serve --workers N``), sharing one PostgreSQL registry."""

import typing

from mcp_aggregator.lazy_exports import lazy_exports as _lazy_exports

__all__ = ["Replica", "WorkerPool", "check_workers", "replica_commands"]

__getattr__, __dir__ = _lazy_exports(
    globals(),
    {
        "Replica": ".worker_pool",
        "WorkerPool": ".worker_pool",
        "check_workers": ".worker_pool",
        "replica_commands": ".worker_pool",
    },
)

if typing.TYPE_CHECKING:
    from mcp_aggregator.replicas.worker_pool import Replica, WorkerPool, check_workers, replica_commands
