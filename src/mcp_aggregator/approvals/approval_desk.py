"""``ApprovalDesk``: where held calls wait for a person, and where decisions arrive.

A held call is stored (``ApprovalStore``) and waits here until the first of: the calling
client's answer (``ask``), an admin's decision (``decide``, on this replica or, through the
shared registry, on another one: the holder reads its row when the registry's change feed
tells it the row was decided (``nudge``), and every ``poll_secs`` in case a notice was
lost or there is no feed), its timeout
(``expired``), or its end (the client gave up, or the gateway stops: ``cancelled``). The
store's compare-and-set decides races, so a call is decided once, and runs at most once.

A replica that dies holding calls cannot end them: with heartbeats on a shared registry
(``lost_after``), every live replica settles, after its beats (``sweep``), the pending
calls of a replica not seen for ``lost_after``: ``cancelled`` (``expired`` when past their
time) with a reason naming the lost replica; the compare-and-set makes one sweeper win, and
only the winner audits and announces it. A decision on such a call is refused, saying why.

Every change of state is audited (held, approved or denied with by whom and how, expired,
cancelled, with the digest), counted for metrics and told to the ``listeners`` (the page's
event stream hangs there).
"""

from __future__ import annotations

import logging
import secrets
from collections import Counter
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Final

import anyio
from mcp.shared.exceptions import MCPError

from mcp_aggregator.approvals.approval import Approval, ApprovalStatus, DecidedVia
from mcp_aggregator.approvals.approval_question import ClientAnswer
from mcp_aggregator.approvals.approval_store import ApprovalStore
from mcp_aggregator.errors import (
    AggregatorError,
    ApprovalDecidedError,
    ApprovalNotFoundError,
    ApprovalRefusedError,
    RegistryError,
)
from mcp_aggregator.registry.replica_book import ReplicaSeen

logger = logging.getLogger(__name__)

Listener = Callable[[Approval], Awaitable[None]]
"""Told of every change of an approval's state (held, then its decision)."""
AskClient = Callable[[Approval], Awaitable[ClientAnswer]]
Note = Callable[[Approval, str], None]
"""Records one event of an approval in the audit trail (the event's text beside it)."""
WallClock = Callable[[], datetime]

_DB_GRACE_SECS: Final = 5.0
STOPPING: Final = "the gateway stopped while the call was held; call again"
RESTARTED: Final = "the gateway restarted while the call was held; call again"
_UNANSWERED: Final = "the call ended before anyone decided"
LOST: Final = "the gateway replica holding the call was lost"
_MAX_REMEMBERED: Final = 10_000


def _now() -> datetime:
    return datetime.now(UTC)


def lost_reason(replica: str, seen: ReplicaSeen | None, now: datetime) -> str:
    """Why a call held by a lost replica was settled, naming that replica (and where it was)."""
    if seen is None:
        where = f"replica {replica}, no heartbeat on record"
    else:
        home = f" at {seen.home}" if seen.home else ""
        ago = max((now - seen.last_seen).total_seconds(), 0.0)
        where = f"replica {replica}{home}, last seen {seen.last_seen.isoformat()}, {ago:.0f} s before"
    return f"{LOST} ({where}); the call never ran"


def _already(row: Approval) -> ApprovalDecidedError:
    """The error for a decision on ``row``, decided already (a cancelled one says why: its
    replica was lost, or stopped)."""
    why = f": {row.reason}" if row.status is ApprovalStatus.CANCELLED and row.reason else ""
    return ApprovalDecidedError(f"held call {row.id} is {row.status.value} already{why}")


@dataclass(eq=False)
class _Held:
    approval: Approval
    settled: anyio.Event = field(default_factory=anyio.Event)
    nudged: anyio.Event = field(default_factory=anyio.Event)
    final: Approval | None = None


class ApprovalDesk:
    """See the module docstring. ``shared``: replicas share the registry, so a decision may
    be taken on another one; the holder then reads its row when nudged, and every
    ``poll_secs`` (the fallback: short without a change feed, long with one)."""

    def __init__(
        self,
        store: ApprovalStore,
        *,
        shared: bool = False,
        poll_secs: float = 0.5,
        clock: WallClock = _now,
        note: Note | None = None,
    ) -> None:
        self.store = store
        self.replica = secrets.token_hex(8)
        """This gateway process: a row names the replica that holds its call."""
        self.listeners: list[Listener] = []
        """Awaited, in order, on every change of state (on the held call's way: keep them quick,
        e.g. put the event on a queue); one that raises is logged and skipped."""
        self.shared = shared
        """Set at start, when the gateway knows whether its registry is shared."""
        self.poll_secs = poll_secs
        self.lost_after: timedelta | None = None
        """Set at start when replicas write heartbeats on a shared registry: how long one goes
        unseen before its pending calls are settled (``sweep``) and decisions on them refused."""
        self._clock = clock
        self._note = note
        self._held: dict[str, _Held] = {}
        self._remembered: set[tuple[str, str]] = set()
        self.decisions: Counter[str] = Counter()
        """Decisions since start, by status (``approved``, ``denied``, ``expired``, ``cancelled``)."""
        self.decision_seconds = 0.0
        """Sum of the times from held to decided, over ``sum(decisions.values())`` decisions."""

    @property
    def waiting(self) -> int:
        """Calls held on this replica now."""
        return len(self._held)

    def remembered(self, session: str | None, digest: str) -> bool:
        """Whether a person approved this very call for the rest of ``session``."""
        return session is not None and (session, digest) in self._remembered

    async def start(self) -> int:
        """Cancel what a previous run left pending (on a shared registry: nothing, the other
        replicas' calls are alive; those of replicas lost are settled by ``sweep``). How many
        were cancelled."""
        if self.shared:
            return 0
        return await self.store.cancel_pending(None, self._clock(), RESTARTED)

    def new(
        self,
        *,
        rule: str,
        ask: str,
        timeout_secs: int,
        client: str | None,
        profile: str,
        server: str,
        tool: str,
        arguments: object,
        digest: str,
    ) -> Approval:
        now = self._clock()
        return Approval(
            id=secrets.token_hex(12),
            rule=rule,
            client=client,
            profile=profile,
            server=server,
            tool=tool,
            arguments=arguments,
            digest=digest,
            status=ApprovalStatus.PENDING,
            created_at=now,
            expires_at=now + timedelta(seconds=timeout_secs),
            ask=ask,
            replica=self.replica,
        )

    async def hold(
        self, approval: Approval, *, ask_client: AskClient | None, admin: bool, session: str | None = None
    ) -> Approval:
        """Wait for ``approval``'s decision; the approved ``Approval`` when it is approved.

        ``ask_client``: ask the calling client (None: it is not asked); ``admin``: an admin
        may decide. ``session``: with it, an approval stands for the same digest for the rest
        of that session (``remember: session``). Raises ``ApprovalRefusedError`` for any
        other outcome, and ``RegistryError`` when the call cannot be stored (it does not run).
        """
        held = _Held(approval)
        # Known here before it is stored: a notice of its decision can then never come too early.
        self._held[approval.id] = held
        try:
            await self.store.add(approval)
        except BaseException:
            self._held.pop(approval.id, None)
            raise
        try:
            self._record(approval, "held")
            await self._tell(approval)
            timeout = (approval.expires_at - self._clock()).total_seconds()
            with anyio.move_on_after(max(timeout, 0.0)):
                await self._wait(held, ask_client, admin=admin)
            if held.final is None:
                await self._settle(held, ApprovalStatus.EXPIRED, None, DecidedVia.GATEWAY, None)
        except BaseException:
            # Cancelled (the client gave up), or failed: never leave the row pending.
            with anyio.move_on_after(_DB_GRACE_SECS, shield=True):
                await self._settle(held, ApprovalStatus.CANCELLED, None, DecidedVia.GATEWAY, _UNANSWERED)
            raise
        finally:
            self._held.pop(approval.id, None)
        final = held.final
        assert final is not None
        if final.status is not ApprovalStatus.APPROVED:
            raise ApprovalRefusedError(
                final.rule,
                f"{final.server}.{final.tool}",
                status=final.status.value,
                reason=final.reason,
                approval_id=final.id,
            )
        if session is not None:
            if len(self._remembered) >= _MAX_REMEMBERED:
                self._remembered.clear()  # sessions end unannounced: bounded, at worst asked again
            self._remembered.add((session, final.digest))
        return final

    async def _wait(self, held: _Held, ask_client: AskClient | None, *, admin: bool) -> None:
        async with anyio.create_task_group() as tg:
            if ask_client is not None:
                tg.start_soon(self._ask, held, ask_client, admin)
            if admin and self.shared:
                tg.start_soon(self._follow, held)
            await held.settled.wait()
            tg.cancel_scope.cancel()

    async def _ask(self, held: _Held, ask_client: AskClient, admin: bool) -> None:
        try:
            answer = await ask_client(held.approval)
        except (MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError, AggregatorError) as exc:
            logger.info("approvals: the client could not be asked about %s: %s", held.approval.id, exc)
            answer = ClientAnswer(None)
        if answer.status is not None:
            await self._settle(held, answer.status, held.approval.client or "client", DecidedVia.CLIENT, answer.reason)
        elif not admin:
            reason = "the client gave no answer, and no admin may decide this rule's calls"
            await self._settle(held, ApprovalStatus.DENIED, None, DecidedVia.GATEWAY, reason)

    def nudge(self, approval_id: str | None) -> None:
        """Another replica decided ``approval_id`` (``None``: perhaps any held call, as after
        the feed reconnected): its holder reads the row now. Sync, for the feed's callback."""
        targets = self._held.values() if approval_id is None else filter(None, [self._held.get(approval_id)])
        for held in targets:
            held.nudged.set()

    async def _follow(self, held: _Held) -> None:
        """Read the row until another replica decided it (the shared registry is where they meet)."""
        while not held.settled.is_set():
            with anyio.move_on_after(self.poll_secs):
                await held.nudged.wait()
            held.nudged = anyio.Event()
            try:
                row = await self.store.get(held.approval.id)
            except RegistryError as exc:
                logger.warning("approvals: cannot read held call %s: %s", held.approval.id, exc)
                continue
            if row is not None and row.status is not ApprovalStatus.PENDING and held.final is None:
                # The decider counted and audited it, but this replica's page shows the call
                # pending until its own listeners hear of it: tell them before settling, which
                # ends this task.
                await self._tell(row)
                self._settled(held, row)

    async def decide(
        self, approval_id: str, *, approve: bool, by: str, via: DecidedVia, reason: str | None
    ) -> Approval:
        """An admin's decision. Raises ``ApprovalNotFoundError``, ``ApprovalDecidedError``."""
        status = ApprovalStatus.APPROVED if approve else ApprovalStatus.DENIED
        held = self._held.get(approval_id)
        if held is not None:
            if held.approval.ask == "client":
                raise ApprovalDecidedError(f"held call {approval_id} is for its client to decide (rule ask: client)")
            if not await self._settle(held, status, by, via, reason):
                assert held.final is not None
                raise _already(held.final)
            assert held.final is not None
            return held.final
        row = await self.store.get(approval_id)
        if row is None:
            raise ApprovalNotFoundError(approval_id)
        if row.status is not ApprovalStatus.PENDING:
            raise _already(row)
        if row.ask == "client":
            raise ApprovalDecidedError(f"held call {approval_id} is for its client to decide (rule ask: client)")
        lost = await self._lost(approval_id)
        if lost is not None:
            raise ApprovalDecidedError(f"held call {approval_id} can never run: {lost.reason}")
        if row.expires_at <= self._clock():
            status, by, via, reason = ApprovalStatus.EXPIRED, "", DecidedVia.GATEWAY, None
        decided = row.decided(status, self._clock(), by or None, via, reason)
        if not await self.store.decide(decided):
            stored = await self.store.get(approval_id)
            raise _already(stored) if stored is not None else ApprovalDecidedError(f"held call {approval_id} is gone")
        await self._decided(decided)
        if decided.status is ApprovalStatus.EXPIRED:
            raise ApprovalDecidedError(f"held call {approval_id} expired already")
        return decided

    async def listed(
        self,
        *,
        status: ApprovalStatus | None = ApprovalStatus.PENDING,
        server: str | None = None,
        tool: str | None = None,
        client: str | None = None,
    ) -> list[Approval]:
        """Held calls from the store, newest first (pending ones by default). A pending call
        past its time whose replica is gone (it would have expired it) is shown expired."""
        found = await self.store.listed(status=status, server=server, tool=tool, client=client)
        now = self._clock()
        shown = []
        for approval in found:
            overdue = approval.status is ApprovalStatus.PENDING and approval.expires_at <= now
            if overdue and approval.id not in self._held:
                if status is ApprovalStatus.PENDING:
                    continue
                approval = approval.decided(ApprovalStatus.EXPIRED, approval.expires_at, None, DecidedVia.GATEWAY, None)
            shown.append(approval)
        return shown

    async def get(self, approval_id: str) -> Approval:
        """One held call, pending or decided (an audit event names it: ``approval <id>``), shown
        as ``listed`` shows it. Raises ``ApprovalNotFoundError``."""
        row = await self.store.get(approval_id)
        if row is None:
            raise ApprovalNotFoundError(approval_id)
        overdue = row.status is ApprovalStatus.PENDING and row.expires_at <= self._clock()
        if overdue and row.id not in self._held:
            return row.decided(ApprovalStatus.EXPIRED, row.expires_at, None, DecidedVia.GATEWAY, None)
        return row

    async def sweep(self) -> int:
        """Settle the pending calls of replicas lost (see the module docstring); how many this
        replica settled (another sweeper may win some). Raises ``RegistryError``."""
        if self.lost_after is None:
            return 0
        found = await self.store.orphaned(self._clock() - self.lost_after, live=self.replica)
        settled = 0
        for row, seen in found:
            settled += await self._settle_lost(row, seen) is not None
        return settled

    async def _lost(self, approval_id: str) -> Approval | None:
        """``approval_id`` settled now, if its replica is lost; else None."""
        if self.lost_after is None:
            return None
        found = await self.store.orphaned(self._clock() - self.lost_after, live=self.replica, approval_id=approval_id)
        for row, seen in found:
            # None: another sweeper was first; the row then says why.
            return await self._settle_lost(row, seen) or await self.store.get(approval_id)
        return None

    async def _settle_lost(self, row: Approval, seen: ReplicaSeen | None) -> Approval | None:
        """Settle ``row`` of a lost replica; the settled row if this replica's write won."""
        now = self._clock()
        status = ApprovalStatus.EXPIRED if row.expires_at <= now else ApprovalStatus.CANCELLED
        decided = row.decided(status, now, None, DecidedVia.GATEWAY, lost_reason(row.replica, seen, now))
        if not await self.store.decide(decided):
            return None
        await self._decided(decided)
        return decided

    async def stop(self) -> None:
        """Refuse every call held here (its client is told the gateway stopped)."""
        for held in list(self._held.values()):
            with anyio.move_on_after(_DB_GRACE_SECS, shield=True):
                await self._settle(held, ApprovalStatus.CANCELLED, None, DecidedVia.GATEWAY, STOPPING)

    async def _settle(
        self, held: _Held, status: ApprovalStatus, by: str | None, via: DecidedVia, reason: str | None
    ) -> bool:
        """Store a decision on ``held``; whether it was this one (else the stored one stands)."""
        if held.final is not None:
            return False
        decided = held.approval.decided(status, self._clock(), by, via, reason)
        try:
            won = await self.store.decide(decided)
        except RegistryError as exc:
            logger.error("approvals: cannot store the decision on %s: %s", held.approval.id, exc)
            won = status is not ApprovalStatus.APPROVED  # never run a call whose approval is not stored
            if not won:
                decided = held.approval.decided(ApprovalStatus.CANCELLED, self._clock(), None, via, str(exc))
        if not won:
            row = await self.store.get(held.approval.id)
            if row is None or row.status is ApprovalStatus.PENDING:
                row = decided
            self._settled(held, row)
            return False
        self._settled(held, decided)
        await self._decided(decided)
        return True

    def _settled(self, held: _Held, final: Approval) -> None:
        if held.final is None:
            held.final = final
            held.settled.set()

    async def _decided(self, decided: Approval) -> None:
        """Count, audit and announce a decision this replica stored."""
        self.decisions[decided.status.value] += 1
        if decided.decided_at is not None:
            self.decision_seconds += max((decided.decided_at - decided.created_at).total_seconds(), 0.0)
        self._record(decided, decided.status.value)
        await self._tell(decided)

    def _record(self, approval: Approval, event: str) -> None:
        if self._note is None:
            return
        parts = [f"{event}: rule {approval.rule}"]
        if approval.decided_by:
            parts.append(f"by {approval.decided_by}")
        if approval.via is not None:
            parts.append(f"via {approval.via.value}")
        if approval.reason:
            parts.append(f"reason {approval.reason}")
        parts.append(f"digest {approval.digest}")
        parts.append(f"approval {approval.id}")
        self._note(approval, "; ".join(parts))

    async def _tell(self, approval: Approval) -> None:
        for listener in self.listeners:
            try:
                await listener(approval)
            except Exception:
                # A listener (the page's event stream) must never decide a call's fate.
                logger.exception("approvals: a listener failed on %s", approval.id)
