"""The optional parts of the install: a feature that needs one says which extra brings it.

A default install (``pip install mcp-aggregator``) carries what a default run uses: SQLite,
the local embedder, OTLP over HTTP. The rest comes with an extra,
``pip install 'mcp-aggregator[EXTRA]'``; the ``dev`` extra brings them all.
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Final

from mcp_aggregator.errors import MissingExtraError

POSTGRES: Final = "postgres"
"""asyncpg (the registry, its change feed) and psycopg (the shared embedding cache)."""
LLM: Final = "llm"
"""The Anthropic SDK, for ``aggregator.mode: llm``."""
OTEL_GRPC: Final = "otel-grpc"
"""The OTLP exporter over gRPC (grpcio), for ``OTEL_EXPORTER_OTLP_PROTOCOL=grpc``."""


def require_extra(module: str, *, extra: str, feature: str) -> ModuleType:
    """``module``, imported; raises ``MissingExtraError`` naming ``extra`` when it is not installed."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(feature, extra, module) from exc
