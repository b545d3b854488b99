"""The audit writer: batches reach the registry's database, a full queue drops and counts,
and retention removes old entries (SQLite and PostgreSQL, the clock injected)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta

import anyio
import pytest

from mcp_aggregator.audit import AuditLog, AuditQuery, AuditSettings, Outcome
from mcp_aggregator.audit.audit_writer import AuditWriter
from mcp_aggregator.identity import ClientIdentity
from mcp_aggregator.registry import Registry
from mcp_aggregator.relay import Caller, Invocation
from tests.registry.conftest import Database

NOW = datetime(2026, 11, 25, 12, 0, tzinfo=UTC)


class Clock:
    def __init__(self, at: datetime) -> None:
        self.at = at

    def __call__(self) -> float:
        return self.at.timestamp()


def call(tool: str, client: str = "ci", profile: str = "ops", request_id: int = 1) -> Invocation:
    caller = Caller(identity=ClientIdentity(client, profile), request_id=request_id)
    return Invocation("tools/call", "alpha", tool, caller, None, {"text": tool})


@pytest.fixture
async def audit_log(database: Database) -> AsyncIterator[AuditLog]:
    # The registry runs the migrations (0005 makes the table), as the gateway does.
    async with Registry(database.settings()), AuditLog(database.settings()) as log:
        yield log


async def test_records_written_in_batches_read_back_newest_first(audit_log: AuditLog) -> None:
    writer = AuditWriter(AuditSettings(batch_size=2), audit_log, clock=Clock(NOW))
    async with anyio.create_task_group() as tg:
        await tg.start(writer.run)
        for i in range(5):
            writer.record(call(f"t{i}", request_id=i), Outcome.OK, None, 0.002)
        with anyio.fail_after(10):
            await writer.flush()
        tg.cancel_scope.cancel()
    page = await audit_log.query(AuditQuery(limit=10))
    assert [e.tool for e in page.items] == ["t4", "t3", "t2", "t1", "t0"]
    first = page.items[-1]
    assert (first.client, first.profile, first.method, first.server, first.outcome) == (
        "ci",
        "ops",
        "tools/call",
        "alpha",
        Outcome.OK,
    )
    assert first.time == NOW and first.duration_ms == pytest.approx(2.0)
    assert first.jsonrpc_id == "0" and first.request_id is None, "no HTTP request behind this call"
    assert first.arguments is None and first.arguments_digest is not None
    assert page.next_before is None


async def test_a_full_queue_drops_and_counts_instead_of_blocking(audit_log: AuditLog) -> None:
    writer = AuditWriter(AuditSettings(queue_size=2), audit_log, clock=Clock(NOW))
    for i in range(5):
        writer.record(call(f"t{i}"), Outcome.OK, None, 0.001)
    assert (writer.submitted, writer.dropped) == (2, 3)
    await writer.write_pending()
    assert writer.written == 2
    assert [e.tool for e in (await audit_log.query(AuditQuery())).items] == ["t1", "t0"]


async def test_retention_removes_entries_older_than_retention_days(audit_log: AuditLog) -> None:
    clock = Clock(NOW - timedelta(days=31))
    writer = AuditWriter(AuditSettings(retention_days=30), audit_log, clock=clock)
    writer.record(call("old"), Outcome.OK, None, 0.001)
    clock.at = NOW - timedelta(days=29)
    writer.record(call("recent"), Outcome.ERROR, None, 0.001)
    await writer.write_pending()
    clock.at = NOW
    assert await writer.purge_once() == 1
    assert [e.tool for e in (await audit_log.query(AuditQuery())).items] == ["recent"]
    clock.at = NOW + timedelta(days=2)
    assert await writer.purge_once() == 1
    assert (await audit_log.query(AuditQuery())).items == ()


async def test_filters_and_pages_select_entries(audit_log: AuditLog) -> None:
    writer = AuditWriter(AuditSettings(), audit_log, clock=Clock(NOW))
    for i in range(6):
        client = "ci" if i % 2 else "bob"
        writer.record(call(f"t{i % 3}", client=client), Outcome.OK if i < 4 else Outcome.DENIED, None, 0.001)
    await writer.write_pending()
    assert [e.tool for e in (await audit_log.query(AuditQuery(client="ci"))).items] == ["t2", "t0", "t1"]
    assert [e.tool for e in (await audit_log.query(AuditQuery(outcome=Outcome.DENIED))).items] == ["t2", "t1"]
    assert len((await audit_log.query(AuditQuery(since=NOW + timedelta(seconds=1)))).items) == 0
    first = await audit_log.query(AuditQuery(limit=4))
    assert first.next_before == first.items[-1].id
    rest = await audit_log.query(AuditQuery(limit=4, before=first.next_before))
    assert len(rest.items) == 2 and rest.next_before is None
    assert {e.id for e in first.items}.isdisjoint(e.id for e in rest.items)
