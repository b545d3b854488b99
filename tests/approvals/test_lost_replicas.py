"""Held calls of a replica that died, on real SQLite and PostgreSQL: replicas write heartbeats
(``replicas``), and a live one settles the pending calls of a replica not seen for the lost
bound (cancelled, or expired when past their time), audited and announced once however many
replicas sweep; a decision on such a call is refused, saying why. The clock is injected."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import partial

import anyio
import pytest

from mcp_aggregator.approvals.approval import ApprovalStatus, DecidedVia
from mcp_aggregator.approvals.approval_desk import LOST, ApprovalDesk
from mcp_aggregator.approvals.approval_store import ApprovalStore
from mcp_aggregator.errors import ApprovalDecidedError, ApprovalRefusedError
from mcp_aggregator.registry import Registry, RegistrySettings
from mcp_aggregator.registry.heartbeat import Heartbeat
from tests.approvals.test_approval_desk import DEADLINE, Watch, approval, held
from tests.registry.conftest import Database

T0 = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
BEAT = timedelta(seconds=5)
LOST_AFTER = timedelta(seconds=15)


@dataclass
class Clock:
    now: datetime = T0

    def __call__(self) -> datetime:
        return self.now

    def advance(self, by: timedelta) -> None:
        self.now += by


@dataclass
class Replica:
    """A desk and its heartbeat on the shared registry (no loop: the test beats for it)."""

    desk: ApprovalDesk
    heartbeat: Heartbeat
    notes: list[str] = field(default_factory=list)


@asynccontextmanager
async def cluster(settings: RegistrySettings, clock: Clock, count: int) -> AsyncIterator[list[Replica]]:
    """``count`` replicas on one registry, each with its own store and heartbeat, announced."""
    async with AsyncExitStack() as stack:
        await stack.enter_async_context(Registry(settings))
        made = []
        for _ in range(count):
            store = await stack.enter_async_context(ApprovalStore(settings))
            notes: list[str] = []
            desk = ApprovalDesk(store, shared=True, poll_secs=0.05, clock=clock, note=partial(_noted, notes))
            heartbeat = await stack.enter_async_context(Heartbeat(settings, desk.replica, clock=clock))
            desk.lost_after = heartbeat.lost_after
            await heartbeat.announce()
            made.append(Replica(desk, heartbeat, notes))
        yield made


def _noted(notes: list[str], _: object, text: str) -> None:
    notes.append(text)


def beat_settings(database: Database) -> RegistrySettings:
    return database.settings().model_copy(update={"heartbeat_secs": BEAT.total_seconds()})


async def test_a_call_held_by_a_replica_no_longer_seen_is_cancelled_by_a_live_one_and_its_holder_told(
    database: Database,
) -> None:
    clock = Clock()
    async with cluster(beat_settings(database), clock, 2) as (there, here):
        assert here.heartbeat.lost_after == LOST_AFTER
        seen_there, seen_here = Watch(there.desk), Watch(here.desk)
        call = held(there.desk)
        refused: list[ApprovalRefusedError] = []
        async with anyio.create_task_group() as tg:

            async def wait() -> None:
                with pytest.raises(ApprovalRefusedError) as exc:
                    await there.desk.hold(call, ask_client=None, admin=True)
                refused.append(exc.value)

            tg.start_soon(wait)
            with anyio.fail_after(DEADLINE):
                await seen_there.pending.wait()
            clock.advance(LOST_AFTER)
            await here.heartbeat.announce()
            assert await here.desk.sweep() == 0  # seen exactly the bound ago: not lost yet
            clock.advance(timedelta(seconds=1))
            await here.heartbeat.announce()
            assert await here.desk.sweep() == 1
        # The holder lived after all (its heartbeat stopped): it reads the row and refuses the call.
        assert refused[0].status == "cancelled"
        assert f"{LOST} (replica {there.desk.replica}, last seen {T0.isoformat()}, 16 s before)" in str(refused[0])
        [settled] = [a for a in seen_here.seen if a.status is not ApprovalStatus.PENDING]
        assert (settled.id, settled.status, settled.via) == (call.id, ApprovalStatus.CANCELLED, DecidedVia.GATEWAY)
        assert here.desk.decisions == {"cancelled": 1} and there.desk.decisions == {}
        [note] = here.notes
        assert note.startswith("cancelled: rule commits; via gateway; reason the gateway replica holding")
        assert there.notes == ["held: rule commits; digest " + "d" * 64 + f"; approval {call.id}"]
        with pytest.raises(ApprovalDecidedError, match=f"is cancelled already: {LOST} \\(replica"):
            await here.desk.decide(call.id, approve=True, by="admin", via=DecidedVia.REST, reason=None)


async def test_the_calls_of_a_dead_replica_are_settled_once_however_many_replicas_sweep(database: Database) -> None:
    clock = Clock()
    async with cluster(beat_settings(database), clock, 3) as replicas:
        dead, *live = replicas
        store = dead.desk.store
        await store.add(approval(id="a1", replica=dead.desk.replica))
        await store.add(approval(id="a2", replica=dead.desk.replica, expires_at=T0 + timedelta(seconds=10)))
        await store.add(approval(id="a3", replica="never-beat"))
        await store.add(approval(id="a4", replica=live[0].desk.replica))
        watches = [Watch(r.desk) for r in live]
        clock.advance(timedelta(seconds=20))
        for replica in live:
            await replica.heartbeat.announce()
        counts: list[int] = []
        async with anyio.create_task_group() as tg:
            for replica in live:

                async def sweep(desk: ApprovalDesk = replica.desk) -> None:
                    counts.append(await desk.sweep())

                tg.start_soon(sweep)
        assert sum(counts) == 3
        assert sum(len(r.notes) for r in live) == 3
        assert sorted(a.id for w in watches for a in w.seen) == ["a1", "a2", "a3"]
        rows = {a.id: a for a in await store.listed(status=None)}
        assert rows["a1"].status is ApprovalStatus.CANCELLED
        assert rows["a2"].status is ApprovalStatus.EXPIRED  # past its time: what its holder would have said
        assert rows["a3"].reason == f"{LOST} (replica never-beat, no heartbeat on record); the call never ran"
        assert rows["a4"].status is ApprovalStatus.PENDING  # its replica is alive
        assert all(rows[i].reason is not None and dead.desk.replica in str(rows[i].reason) for i in ("a1", "a2"))


async def test_a_decision_on_a_call_whose_replica_is_lost_is_refused_and_settles_it(database: Database) -> None:
    clock = Clock()
    async with cluster(beat_settings(database), clock, 2) as (dead, live):
        dead.heartbeat.home = "http://10.0.0.7:8801"
        await dead.heartbeat.announce()
        await dead.desk.store.add(approval(id="a1", replica=dead.desk.replica))
        await dead.desk.store.add(approval(id="a2", replica=dead.desk.replica))
        decide = partial(live.desk.decide, approve=True, by="admin", via=DecidedVia.REST, reason=None)
        assert (await decide("a2")).status is ApprovalStatus.APPROVED  # its replica lives: the decision stands
        clock.advance(timedelta(seconds=30))
        with pytest.raises(ApprovalDecidedError) as refused:
            await decide("a1")
        assert str(refused.value) == (
            f"held call a1 can never run: {LOST} (replica {dead.desk.replica} at http://10.0.0.7:8801, "
            f"last seen {T0.isoformat()}, 30 s before); the call never ran"
        )
        stored = await live.desk.store.get("a1")
        assert stored is not None and stored.status is ApprovalStatus.CANCELLED
        assert live.desk.decisions == {"approved": 1, "cancelled": 1}
        with pytest.raises(ApprovalDecidedError, match="a1 is cancelled already: the gateway replica holding"):
            await decide("a1")


async def test_without_heartbeats_nothing_is_swept_and_a_decision_goes_on_as_before(database: Database) -> None:
    async with Registry(database.settings()), ApprovalStore(database.settings()) as store:
        await store.add(approval(replica="unknown"))
        desk = ApprovalDesk(store, shared=True, clock=lambda: T0 + timedelta(seconds=30))
        assert await desk.sweep() == 0
        decided = await desk.decide("a1", approve=False, by="admin", via=DecidedVia.REST, reason="no")
        assert decided.status is ApprovalStatus.DENIED
