"""Several gateway replicas on one host (``serve --workers N``), sharing one PostgreSQL registry."""

from mcp_aggregator.replicas.worker_pool import Replica, WorkerPool, check_workers, replica_commands

__all__ = ["Replica", "WorkerPool", "check_workers", "replica_commands"]
