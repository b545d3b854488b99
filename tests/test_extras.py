"""A feature whose optional packages are not installed says which extra brings them.

"Not installed" is played by ``sys.modules[name] = None``, which makes ``import name`` fail
as it does in a default install without the extra.
"""

from __future__ import annotations

import sys
import tomllib
from pathlib import Path

import pytest

from mcp_aggregator import extras
from mcp_aggregator.aggregate import AggregatorSettings
from mcp_aggregator.aggregate.engine import AggregatorEngine
from mcp_aggregator.errors import ConfigError, MissingExtraError
from mcp_aggregator.registry.change_feed import ChangeFeed
from mcp_aggregator.registry.engine import create_engine
from mcp_aggregator.search.pg_embedding_cache import PostgresEmbeddingCache
from mcp_aggregator.telemetry import Tracing
from tests.conftest import REPO

PG_URL = "postgresql+asyncpg://nobody@127.0.0.1:9/none"


def uninstalled(monkeypatch: pytest.MonkeyPatch, *modules: str) -> None:
    for module in modules:
        monkeypatch.setitem(sys.modules, module, None)


def test_the_error_names_the_feature_the_extra_and_the_command_to_install_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    uninstalled(monkeypatch, "anthropic")
    with pytest.raises(MissingExtraError) as missing:
        extras.require_extra("anthropic", extra=extras.LLM, feature="aggregator.mode: llm")
    assert str(missing.value) == (
        "aggregator.mode: llm needs the 'llm' extra (the anthropic package is not installed): "
        "pip install 'mcp-aggregator[llm]'"
    )
    assert isinstance(missing.value, ConfigError), "serve reports it as a configuration error (exit 2)"


def test_the_llm_mode_without_the_llm_extra_is_refused_at_start(monkeypatch: pytest.MonkeyPatch) -> None:
    uninstalled(monkeypatch, "anthropic")
    with pytest.raises(MissingExtraError, match=r"aggregator.mode: llm needs the 'llm' extra"):
        AggregatorEngine(AggregatorSettings(mode="llm"))
    AggregatorEngine(AggregatorSettings())  # the heuristic mode needs nothing more


def test_otlp_over_grpc_without_its_extra_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    uninstalled(
        monkeypatch, "opentelemetry.exporter.otlp.proto.grpc", "opentelemetry.exporter.otlp.proto.grpc.trace_exporter"
    )
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"}
    with pytest.raises(MissingExtraError, match=r"OTEL_EXPORTER_OTLP_PROTOCOL=grpc\) needs the 'otel-grpc' extra"):
        Tracing.from_env(env)
    over_http = Tracing.from_env({**env, "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf"})
    assert over_http is not None, "OTLP over HTTP is in the default install"
    over_http.provider.shutdown()


def test_a_postgresql_registry_without_the_postgres_extra_is_refused(monkeypatch: pytest.MonkeyPatch) -> None:
    uninstalled(monkeypatch, "asyncpg", "psycopg")
    with pytest.raises(
        MissingExtraError, match=r"a PostgreSQL registry \(registry.database_url\) needs the 'postgres'"
    ):
        create_engine(PG_URL)
    with pytest.raises(MissingExtraError, match=r"the change feed of a PostgreSQL registry needs the 'postgres'"):
        ChangeFeed(PG_URL, "mcp", lambda: None)  # type: ignore[arg-type, return-value]
    with pytest.raises(MissingExtraError, match=r"the shared embedding cache of a PostgreSQL registry needs"):
        PostgresEmbeddingCache(PG_URL, "mcp")


def test_every_extra_the_code_names_is_declared_and_dev_brings_them_all() -> None:
    project = tomllib.loads(Path(REPO / "pyproject.toml").read_text())["project"]
    named = {extras.POSTGRES, extras.LLM, extras.OTEL_GRPC}
    assert named <= set(project["optional-dependencies"])
    [self_reference] = [r for r in project["optional-dependencies"]["dev"] if r.startswith("mcp-aggregator[")]
    assert set(self_reference.removeprefix("mcp-aggregator[").removesuffix("]").split(",")) >= named
    assert not {"anthropic", "asyncpg", "opentelemetry-exporter-otlp-proto-grpc"} & {
        r.split(">")[0].split("[")[0] for r in project["dependencies"]
    }, "a default run uses none of these"
