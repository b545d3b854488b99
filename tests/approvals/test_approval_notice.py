"""Decisions told through the registry's change feed: on PostgreSQL the replica holding a call
hears of a decision another replica stored at once, not at its next (slow) reading of the row."""

from __future__ import annotations

import anyio
import pytest

from mcp_aggregator.approvals.approval import Approval, ApprovalStatus, DecidedVia
from mcp_aggregator.approvals.approval_desk import ApprovalDesk
from mcp_aggregator.approvals.approval_notice import decided_id
from mcp_aggregator.approvals.gateway_approvals import FALLBACK_POLL_SECS, GatewayApprovals
from mcp_aggregator.catalog import Catalog
from mcp_aggregator.registry import Registry
from mcp_aggregator.registry.change_feed import ChangeFeed
from tests.approvals.test_approval_desk import Watch, held, store_at
from tests.registry.conftest import Database

DEADLINE = 10


@pytest.mark.parametrize(
    ("payload", "expected"),
    [
        ('{"id":"a1","schema":"mcp"}', "a1"),
        ('{"id":"a1","schema":"other"}', None),
        ('{"id":7,"schema":"mcp"}', None),
        ('{"schema":"mcp"}', None),
        ("[1]", None),
        ("not json", None),
    ],
)
def test_a_notice_names_a_held_call_of_this_registry_only(payload: str, expected: str | None) -> None:
    assert decided_id(payload, "mcp") == expected


async def _no_reconcile() -> None:
    return None


@pytest.mark.postgres
@pytest.mark.parametrize("database", ["postgres"], indirect=True)
async def test_a_decision_on_another_replica_reaches_the_holder_through_the_change_feed(database: Database) -> None:
    settings = database.settings()
    async with Registry(settings), GatewayApprovals([], {}, settings, catalog=Catalog, scrub=str, audit=None) as here:
        await here.start(shared=True)
        feed = ChangeFeed(settings.database_url, settings.pg_schema, _no_reconcile)
        here.follow(feed)
        assert here.desk.poll_secs == FALLBACK_POLL_SECS
        # The fallback reading of the row would come far too late: only the notice can release it.
        here.desk.poll_secs = 3600
        async with store_at(settings) as there_store, anyio.create_task_group() as tg:
            await tg.start(feed.run)
            assert feed.connected
            there = ApprovalDesk(there_store, shared=True)
            watch = Watch(here.desk)
            call = held(here.desk)
            outcome: list[Approval] = []
            released = anyio.Event()

            async def wait() -> None:
                outcome.append(await here.desk.hold(call, ask_client=None, admin=True))
                released.set()

            tg.start_soon(wait)
            with anyio.fail_after(DEADLINE):
                await watch.pending.wait()
            await there.decide(call.id, approve=True, by="admin", via=DecidedVia.REST, reason=None)
            with anyio.fail_after(DEADLINE):
                await released.wait()
            feed.stop()
        assert outcome[0].status is ApprovalStatus.APPROVED and outcome[0].decided_by == "admin"
        # The holder's own listeners (its page's live view) hear the decision taken elsewhere.
        assert [a.status for a in watch.seen] == [ApprovalStatus.PENDING, ApprovalStatus.APPROVED]
