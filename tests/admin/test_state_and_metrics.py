"""``/state``, ``/metrics`` and the web page: pure renderers and the live routes."""

from __future__ import annotations

from datetime import UTC, datetime

from mcp_aggregator.admin.metrics import escape_label, render_metrics
from mcp_aggregator.admin.server_views import ServerSample
from mcp_aggregator.admin.state_routes import aggregator_state
from mcp_aggregator.health import ServerStatus
from mcp_aggregator.registry import ServerRecord, ServerSource, ToolRecord, ToolTally, TransportType
from tests.admin.conftest import API, admin_settings, http_server, serve_admin
from tests.registry.conftest import Database

T0 = datetime(2025, 1, 8, 10, 0, tzinfo=UTC)
T1 = datetime(2025, 1, 8, 10, 5, tzinfo=UTC)


def record(name: str, status: ServerStatus, *, tools: int = 0, response_ms: float | None = None) -> ServerRecord:
    return ServerRecord(
        id=f"id-{name}", name=name, description=None, transport_type=TransportType.HTTP,
        connection_config={}, health_check_url=None, status=status, error_message=None,
        tool_count=tools, registered_at=T0, connected_at=None, last_health_check=None,
        consecutive_failures=1 if status is ServerStatus.DEGRADED else 0, last_error=None,
        response_time_ms=response_ms, source=ServerSource.API,
    )  # fmt: skip


def tool(name: str, *, classified: bool, updated: datetime) -> ToolRecord:
    return ToolRecord(
        id=name, name=f"s.{name}", original_name=name, description=None, input_schema={},
        output_schema=None, annotations=None, source_server_id="id-s", is_external=True,
        is_classified=classified, skill_ids=["code"] if classified else [], primary_skill_id=None,
        discovered_at=T0, updated_at=updated,
    )  # fmt: skip


def test_state_counts_partition_the_servers_and_split_tools_by_classification() -> None:
    statuses = [ServerStatus.CONNECTED, ServerStatus.CONNECTED, ServerStatus.DEGRADED, ServerStatus.ERROR]
    tools = [tool("a", classified=True, updated=T0), tool("b", classified=False, updated=T1)]
    state = aggregator_state(statuses, ToolTally.of(tools), exposed_tools=1)
    assert state.model_dump() == {
        "total_servers": 4, "connected_servers": 2, "degraded_servers": 1, "connecting_servers": 0,
        "disconnected_servers": 0, "error_servers": 1, "total_tools": 2, "exposed_tools": 1,
        "classified_tools": 1, "unclassified_tools": 1, "last_sync": T1, "indexing": None,
    }  # fmt: skip


def test_state_shows_the_search_index_embedding_progress() -> None:
    state = aggregator_state([], ToolTally(), exposed_tools=0, indexing=(640, 10_000))
    assert state.model_dump()["indexing"] == {"embedded": 640, "total": 10_000}


def test_empty_state_has_no_last_sync() -> None:
    assert aggregator_state([], ToolTally(), exposed_tools=0).last_sync is None


def test_metrics_text_has_every_status_and_per_server_gauges() -> None:
    samples = [
        ServerSample(record("git", ServerStatus.CONNECTED, tools=3, response_ms=12.5), ServerStatus.CONNECTED, 2),
        ServerSample(record("docs", ServerStatus.ERROR), ServerStatus.ERROR, 0),
    ]
    text = render_metrics(samples, total_tools=3)
    lines = set(text.splitlines())
    assert {
        'mcp_aggregator_servers{status="CONNECTED"} 1',
        'mcp_aggregator_servers{status="ERROR"} 1',
        'mcp_aggregator_servers{status="DEGRADED"} 0',
        "mcp_aggregator_tools 3",
        'mcp_aggregator_server_up{server="git"} 1',
        'mcp_aggregator_server_up{server="docs"} 0',
        'mcp_aggregator_server_tools{server="git"} 3',
        'mcp_aggregator_server_pending_requests{server="git"} 2',
        'mcp_aggregator_server_health_response_ms{server="git"} 12.5',
        "# TYPE mcp_aggregator_servers gauge",
    } <= lines
    assert not any(line.startswith('mcp_aggregator_server_health_response_ms{server="docs"}') for line in lines)
    assert text.endswith("\n")


def test_label_values_are_escaped() -> None:
    assert escape_label('a"b\\c\nd') == 'a\\"b\\\\c\\nd'


async def test_state_and_metrics_routes_report_the_live_gateway(database: Database, upstream_url: str) -> None:
    alpha, beta = http_server("alpha", upstream_url), http_server("beta", upstream_url, enabled=False)
    async with serve_admin(admin_settings(database, alpha, beta)) as admin:
        await admin.settle()
        state = (await admin.http.get(f"{API}/state")).json()
        assert (state["total_servers"], state["connected_servers"], state["disconnected_servers"]) == (2, 1, 1)
        assert state["total_tools"] == state["exposed_tools"] > 0
        # The registry's own figure (when tools were last stored) comes with the write-behind.
        await admin.gateway.flush()
        assert (await admin.http.get(f"{API}/state")).json()["last_sync"] is not None

        metrics = await admin.http.get("/metrics")
        assert metrics.headers["content-type"] == "text/plain; version=0.0.4; charset=utf-8"
        assert 'mcp_aggregator_servers{status="CONNECTED"} 1' in metrics.text
        assert 'mcp_aggregator_server_up{server="beta"} 0' in metrics.text


async def test_web_page_is_one_self_contained_file_calling_the_api(sqlite_db: Database) -> None:
    async with serve_admin(admin_settings(sqlite_db)) as admin:
        page = await admin.http.get("/")
        assert page.status_code == 200
        html = page.text
        for needed in ("api/v1/aggregator", "localStorage", "Authorization", "/connect", "/disconnect",
                       "DELETE", "tools/search", "/query", 'id="register"', "state.indexing"):  # fmt: skip
            assert needed in html, needed
        assert "<script src" not in html and "<link " not in html, "no external assets"
