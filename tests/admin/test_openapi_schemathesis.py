"""Property-based run of the published OpenAPI document against the live admin app.

The app runs over a real gateway (one HTTP fixture upstream, SQLite) in an event loop on a
portal thread; schemathesis calls it over HTTP. Bounded and derandomized so the run is
repeatable; the checks are the two the API promises: no 5xx, no body off its schema.
(schemathesis's own pytest plugin does not run under pytest 9, hence the explicit loop.)
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from anyio.from_thread import start_blocking_portal
from hypothesis import HealthCheck, Phase, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import response_schema_conformance

from tests.admin.conftest import TEST_ADMIN_TOKEN, admin_settings, http_server, serve_admin
from tests.registry.conftest import Database

EXAMPLES_PER_OPERATION = 25
ENDLESS = "/api/v1/aggregator/events"


@pytest.fixture(scope="module")
def admin_base_url(tmp_path_factory: pytest.TempPathFactory, upstream_url: str) -> Iterator[str]:
    db_path: Path = tmp_path_factory.mktemp("schemathesis") / "registry.db"
    db = Database(f"sqlite+aiosqlite:///{db_path}", "mcp")
    # At the server limit already: generated registrations that pass validation are refused
    # instead of starting whatever command the generator made up.
    settings_ = admin_settings(db, http_server("alpha", upstream_url), limits={"max_servers": 1})
    with start_blocking_portal() as portal, portal.wrap_async_context_manager(serve_admin(settings_)) as admin:
        portal.call(admin.settle)
        yield str(admin.http.base_url).rstrip("/")


def check_operation(operation: schemathesis.APIOperation) -> None:
    @given(case=operation.as_strategy())
    @settings(
        max_examples=EXAMPLES_PER_OPERATION,
        derandomize=True,
        deadline=None,
        database=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    def run(case: schemathesis.Case) -> None:
        case.call_and_validate(
            checks=[not_a_server_error, response_schema_conformance],
            headers={"Authorization": f"Bearer {TEST_ADMIN_TOKEN}"},
        )

    run()


@pytest.mark.timeout(300)  # ~350 requests; 10-20 s normally, far more on a loaded machine
def test_every_operation_answers_without_5xx_and_within_its_schema(admin_base_url: str) -> None:
    schema = schemathesis.openapi.from_url(
        f"{admin_base_url}/openapi.json", headers={"Authorization": f"Bearer {TEST_ADMIN_TOKEN}"}
    )
    # The event stream never ends by design: tests/admin/test_live_routes.py covers it.
    operations = [op for op in (result.ok() for result in schema.get_all_operations()) if op.path != ENDLESS]
    assert len(operations) >= 14
    for operation in operations:
        check_operation(operation)
