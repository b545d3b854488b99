"""A gateway's start loads no package that only an unconfigured feature needs.

Each was measured by ``bench/startup_memory.py`` (RSS a fresh process adds by importing it):
they load with the feature's first use, never at import. A fresh interpreter is needed, as
this one has loaded everything already.
"""

from __future__ import annotations

import json
import sys

import anyio

PROBE = """
import json, sys
import mcp_aggregator.cli, mcp_aggregator.serve.runner
print(json.dumps(sorted(sys.modules)))
"""

PATTERNS_PROBE = """
import mcp_aggregator.cli, mcp_aggregator.serve.runner
from mcp_aggregator.guardrails import secret_detector
from mcp_aggregator.registry.redaction import redact_connection_config
redact_connection_config({"command": "npx", "args": ["-y", "some-server", "--port", "8080", "/tmp/files"]})
print(secret_detector._linear_or_none.cache_info().currsize)
"""

LATER = {
    "a2a": "an A2A upstream (transport: a2a), with gRPC and protobuf",
    "grpc": "an A2A upstream, or OTLP export over gRPC",
    "google.protobuf": "an A2A upstream, or OTLP export",
    "opentelemetry.sdk": "tracing asked for by the OTEL_* environment",
    "opentelemetry.exporter": "tracing asked for by the OTEL_* environment",
    "alembic": "a registry whose schema is behind the newest migration",
    "mako": "a registry whose schema is behind the newest migration (Alembic's templates)",
    "asyncpg": "a PostgreSQL registry",
    "sqlalchemy.dialects.postgresql": "a PostgreSQL registry (registry.tables' Json picks JSONB then)",
    "pydantic_monty": "code mode's first script",
    "limits": "serve.rate_limit",
    "jwt": "serve.oauth (JWT clients)",
    "detect_secrets": "a text holding a secret's hint (guardrails.secret_detector imports the plugin then)",
    "requests": "a text holding a secret's hint (detect_secrets' plugins import it)",
    "rapidfuzz": "an aggregating query's first near-duplicate check (aggregate.dedup)",
    "tokenizers": "text with a mark canonical ordering can move (search.word_piece does the rest)",
}


async def test_importing_the_gateway_loads_none_of_what_only_a_configured_feature_needs() -> None:
    done = await anyio.run_process([sys.executable, "-c", PROBE], check=False)
    assert done.returncode == 0, done.stderr.decode()
    loaded = set(json.loads(done.stdout))
    early = {name: why for name, why in LATER.items() if any(m == name or m.startswith(f"{name}.") for m in loaded)}
    assert early == {}


async def test_importing_the_gateway_and_redacting_a_plain_config_compiles_no_secret_pattern() -> None:
    """The secret detector's RE2 automata (some 1.5 MB) are compiled for a text holding a hint."""
    done = await anyio.run_process([sys.executable, "-c", PATTERNS_PROBE], check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert int(done.stdout) == 0
