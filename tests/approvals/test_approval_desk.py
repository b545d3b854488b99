"""The desk over a real SQLite registry: a call is decided once; a decision stored by another
replica releases the call held here; a restart cancels what was left pending; ``remember:
session`` stands for the same call only, in the same session."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcp_aggregator.approvals.approval import Approval, ApprovalStatus, DecidedVia
from mcp_aggregator.approvals.approval_desk import RESTARTED, STOPPING, ApprovalDesk
from mcp_aggregator.approvals.approval_question import ClientAnswer
from mcp_aggregator.approvals.approval_store import ApprovalStore
from mcp_aggregator.errors import ApprovalDecidedError, ApprovalNotFoundError, ApprovalRefusedError
from mcp_aggregator.registry import Registry, RegistrySettings
from tests.registry.conftest import Database

DEADLINE = 10


def approval(**changes: Any) -> Approval:
    now = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
    fields: dict[str, Any] = {
        "id": "a1",
        "rule": "commits",
        "client": "ada",
        "profile": "default",
        "server": "vcs",
        "tool": "git_commit",
        "arguments": {"message": "x"},
        "digest": "d" * 64,
        "status": ApprovalStatus.PENDING,
        "created_at": now,
        "expires_at": now + timedelta(seconds=60),
        "ask": "both",
        "replica": "r1",
        **changes,
    }
    return Approval(**fields)


def sqlite_in(directory: Path) -> RegistrySettings:
    return RegistrySettings(database_url=f"sqlite+aiosqlite:///{directory / 'registry.db'}")


@asynccontextmanager
async def store_at(settings: RegistrySettings) -> AsyncIterator[ApprovalStore]:
    """A store on the database of ``settings``, migrated."""
    async with Registry(settings), ApprovalStore(settings) as store:
        yield store


def held(desk: ApprovalDesk, **changes: Any) -> Approval:
    fields: dict[str, Any] = {
        "rule": "commits",
        "ask": "both",
        "timeout_secs": 60,
        "client": "ada",
        "profile": "default",
        "server": "vcs",
        "tool": "git_commit",
        "arguments": {"message": "x"},
        "digest": "d" * 64,
        **changes,
    }
    return desk.new(**fields)


class Watch:
    def __init__(self, desk: ApprovalDesk) -> None:
        self.pending = anyio.Event()
        self.seen: list[Approval] = []
        desk.listeners.append(self.heard)

    async def heard(self, approval: Approval) -> None:
        self.seen.append(approval)
        if approval.status is ApprovalStatus.PENDING:
            self.pending.set()


async def test_a_held_call_is_decided_once(database: Database) -> None:
    async with store_at(database.settings()) as store:
        desk = ApprovalDesk(store)
        watch = Watch(desk)
        call = held(desk)
        outcome: list[Approval] = []
        async with anyio.create_task_group() as tg:

            async def wait() -> None:
                outcome.append(await desk.hold(call, ask_client=None, admin=True))

            tg.start_soon(wait)
            with anyio.fail_after(DEADLINE):
                await watch.pending.wait()
            assert desk.waiting == 1
            await desk.decide(call.id, approve=True, by="admin", via=DecidedVia.REST, reason=None)
            with pytest.raises(ApprovalDecidedError, match="approved already"):
                await desk.decide(call.id, approve=False, by="admin", via=DecidedVia.REST, reason=None)
        assert outcome[0].status is ApprovalStatus.APPROVED and desk.waiting == 0
        assert [a.status for a in watch.seen] == [ApprovalStatus.PENDING, ApprovalStatus.APPROVED]
        assert desk.decisions == {"approved": 1}
        with pytest.raises(ApprovalNotFoundError):
            await desk.decide("nope", approve=True, by="admin", via=DecidedVia.REST, reason=None)


async def test_a_decision_another_replica_stores_releases_the_call_held_here(database: Database) -> None:
    async with store_at(database.settings()) as here_store, store_at(database.settings()) as there_store:
        here = ApprovalDesk(here_store, shared=True, poll_secs=0.05)
        there = ApprovalDesk(there_store, shared=True)
        watch = Watch(here)
        call = held(here)
        refused: list[ApprovalRefusedError] = []
        async with anyio.create_task_group() as tg:

            async def wait() -> None:
                with pytest.raises(ApprovalRefusedError) as exc:
                    await here.hold(call, ask_client=None, admin=True)
                refused.append(exc.value)

            tg.start_soon(wait)
            with anyio.fail_after(DEADLINE):
                await watch.pending.wait()
            [listed] = await there.listed()
            assert listed.replica == here.replica
            await there.decide(call.id, approve=False, by="admin", via=DecidedVia.REST, reason="not yet")
        assert refused[0].status == "denied" and "was denied: not yet" in str(refused[0])


async def test_the_client_and_an_admin_race_and_only_the_first_decision_counts(tmp_path: Path) -> None:
    async with store_at(sqlite_in(tmp_path)) as store:
        desk = ApprovalDesk(store)
        watch = Watch(desk)
        call = held(desk)
        answer_now = anyio.Event()

        async def client_says_no(_: Approval) -> ClientAnswer:
            await answer_now.wait()
            return ClientAnswer(ApprovalStatus.DENIED, "too late")

        outcome: list[Approval] = []
        async with anyio.create_task_group() as tg:

            async def wait() -> None:
                outcome.append(await desk.hold(call, ask_client=client_says_no, admin=True))

            tg.start_soon(wait)
            with anyio.fail_after(DEADLINE):
                await watch.pending.wait()
            await desk.decide(call.id, approve=True, by="admin", via=DecidedVia.CLI, reason=None)
            answer_now.set()
        assert (outcome[0].status, outcome[0].via) == (ApprovalStatus.APPROVED, DecidedVia.CLI)
        stored = await store.get(call.id)
        assert stored is not None and stored.status is ApprovalStatus.APPROVED


async def test_a_restart_cancels_the_calls_left_pending(database: Database) -> None:
    async with store_at(database.settings()) as store:
        await store.add(approval())
        assert await ApprovalDesk(store).start() == 1
        stored = await store.get("a1")
        assert stored is not None and (stored.status, stored.reason) == (ApprovalStatus.CANCELLED, RESTARTED)


async def test_a_call_approved_for_the_session_is_remembered_for_that_session_and_digest_only(tmp_path: Path) -> None:
    async with store_at(sqlite_in(tmp_path)) as store:
        desk = ApprovalDesk(store)

        async def yes(_: Approval) -> ClientAnswer:
            return ClientAnswer(ApprovalStatus.APPROVED)

        with anyio.fail_after(DEADLINE):
            await desk.hold(held(desk), ask_client=yes, admin=False, session="s1")
        assert desk.remembered("s1", "d" * 64)
        assert not desk.remembered("s2", "d" * 64)
        assert not desk.remembered("s1", "e" * 64)
        assert not desk.remembered(None, "d" * 64)


async def test_a_call_only_its_client_may_decide_is_denied_when_the_client_gives_no_answer(tmp_path: Path) -> None:
    async with store_at(sqlite_in(tmp_path)) as store:
        desk = ApprovalDesk(store)

        async def dismissed(_: Approval) -> ClientAnswer:
            return ClientAnswer(None)

        with anyio.fail_after(DEADLINE), pytest.raises(ApprovalRefusedError, match="the client gave no answer"):
            await desk.hold(held(desk, ask="client"), ask_client=dismissed, admin=False)


async def test_a_stopping_gateway_refuses_the_calls_it_holds_and_says_so(tmp_path: Path) -> None:
    async with store_at(sqlite_in(tmp_path)) as store:
        desk = ApprovalDesk(store)
        watch = Watch(desk)
        refused: list[ApprovalRefusedError] = []
        async with anyio.create_task_group() as tg:

            async def wait() -> None:
                with pytest.raises(ApprovalRefusedError) as exc:
                    await desk.hold(held(desk), ask_client=None, admin=True)
                refused.append(exc.value)

            tg.start_soon(wait)
            with anyio.fail_after(DEADLINE):
                await watch.pending.wait()
            await desk.stop()
        assert refused[0].status == "cancelled" and STOPPING in str(refused[0])


async def test_a_held_call_whose_client_gives_up_is_cancelled_not_left_pending(tmp_path: Path) -> None:
    async with store_at(sqlite_in(tmp_path)) as store:
        desk = ApprovalDesk(store)
        watch = Watch(desk)
        call = held(desk)
        async with anyio.create_task_group() as tg:
            tg.start_soon(partial(desk.hold, call, ask_client=None, admin=True))
            with anyio.fail_after(DEADLINE):
                await watch.pending.wait()
            tg.cancel_scope.cancel()
        stored = await store.get(call.id)
        assert stored is not None and stored.status is ApprovalStatus.CANCELLED
        assert desk.waiting == 0 and desk.decisions == {"cancelled": 1}


async def test_a_call_left_pending_by_a_replica_that_died_expires_by_its_time(tmp_path: Path) -> None:
    async with store_at(sqlite_in(tmp_path)) as store:
        await store.add(approval(replica="gone"))
        after = approval().expires_at + timedelta(seconds=1)
        desk = ApprovalDesk(store, shared=True, clock=lambda: after)
        assert await desk.listed() == []
        [shown] = await desk.listed(status=None)
        assert shown.status is ApprovalStatus.EXPIRED
        with pytest.raises(ApprovalDecidedError, match="expired already"):
            await desk.decide("a1", approve=True, by="admin", via=DecidedVia.REST, reason=None)
        stored = await store.get("a1")
        assert stored is not None and stored.status is ApprovalStatus.EXPIRED
