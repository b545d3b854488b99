"""``ApprovalStage``: the pipeline stage that holds the calls a rule names until a person decides.

A call under no rule costs one dictionary look-up (``ApprovalRules.covers``, kept per name).
The fast path never sends a call under a rule through its callback lane (its routes leave
such tools out, so they reach the full pipeline); ``admit`` is there for that lane, and
refuses such a call rather than let it pass unheld.

A held call's arguments are bound to the decision by ``approval_digest``; the call goes on
with exactly the arguments the person saw (after the guardrails' masking, which runs first).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any, Final

import mcp_types as types

from mcp_aggregator.approvals.approval import Approval, approval_digest, shown_arguments
from mcp_aggregator.approvals.approval_desk import ApprovalDesk, AskClient
from mcp_aggregator.approvals.approval_question import ClientAnswer, answer_of, page_answer_of, page_question, question
from mcp_aggregator.approvals.approval_rules import ApprovalRules
from mcp_aggregator.approvals.config import ApprovalAsk, ApprovalRule
from mcp_aggregator.catalog import Catalog
from mcp_aggregator.catalog.naming import namespace
from mcp_aggregator.catalog.tool_pins import fingerprint, tool_definition
from mcp_aggregator.errors import ApprovalRefusedError
from mcp_aggregator.identity.policies import client_facts
from mcp_aggregator.relay.caller import Caller
from mcp_aggregator.relay.pipeline import Invocation, Next

_TOOLS_CALL: Final = "tools/call"
_RESUMABLE_SECS: Final = 600.0
_MAX_RESUMABLE: Final = 4096
_PROBE: Final = types.ElicitRequest(
    params=types.ElicitRequestFormParams(message="", requested_schema={"type": "object", "properties": {}})
)
_URL_PROBE: Final = types.ElicitRequest(
    params=types.ElicitRequestURLParams(message="", url="http://127.0.0.1/", elicitation_id="probe")
)


class ApprovalStage:
    """See the module docstring. ``catalog``: the current catalogue (the tools' pinned
    definitions); ``scrub``: the servers' configured secrets, masked in what people are shown;
    ``page``: the gateway's base URL, for clients that take URL elicitation only."""

    def __init__(
        self,
        rules: ApprovalRules,
        desk: ApprovalDesk,
        catalog: Callable[[], Catalog],
        scrub: Callable[[str], str],
        *,
        page: Callable[[], str | None] = lambda: None,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.rules = rules
        self.desk = desk
        self._catalog = catalog
        self._scrub = scrub
        self._page = page
        """The gateway's base URL as a browser reaches it (None until it serves HTTP)."""
        self._monotonic = monotonic
        self._resumable: dict[str, float] = {}
        """Digests approved lately: a 2026-07-28 client's retry of the same call (answering
        the upstream's own input request) is the call already approved, not a new one."""

    async def __call__(self, invocation: Invocation, send: Next) -> Any:
        if invocation.method != _TOOLS_CALL:
            return await send()
        identity = invocation.caller.identity
        if not self.rules.covers(invocation.server, invocation.target, identity.profile):
            return await send()
        rule = self.rules.holding(
            invocation.server, invocation.target, identity.profile, client_facts(identity), invocation.arguments
        )
        if rule is None:
            return await send()
        await self.hold(invocation, rule)
        return await send()

    def admit(self, invocation: Invocation) -> None:
        """Refuse a call under a rule on a path that cannot hold it (see the module docstring)."""
        if invocation.method != _TOOLS_CALL:
            return
        identity = invocation.caller.identity
        if self.rules.covers(invocation.server, invocation.target, identity.profile):
            rule = self.rules.covering(invocation.server, invocation.target, identity.profile)[0].rule
            raise ApprovalRefusedError(
                rule.name,
                namespace(invocation.server, invocation.target),
                status="cancelled",
                reason="this path cannot hold a call for approval; call again",
                approval_id="-",
            )

    async def hold(self, invocation: Invocation, rule: ApprovalRule) -> None:
        """Wait until a person approved the call; raises ``ApprovalRefusedError`` otherwise."""
        caller = invocation.caller
        identity = caller.identity
        client = identity.name if identity.name is not None else caller.origin
        digest = approval_digest(
            client,
            identity.profile,
            invocation.server,
            invocation.target,
            self._definition(invocation.server, invocation.target),
            invocation.arguments,
        )
        session = caller.session_id if rule.remember == "session" else None
        if self.desk.remembered(session, digest) or (invocation.resumed and self._resumed(digest)):
            return
        asks_client = rule.ask in (ApprovalAsk.CLIENT, ApprovalAsk.BOTH)
        admin = rule.ask in (ApprovalAsk.ADMIN, ApprovalAsk.BOTH)
        ask = _asker(caller, self._page(), admin=admin) if asks_client else None
        name = namespace(invocation.server, invocation.target)
        if ask is None and not admin:
            raise ApprovalRefusedError(
                rule.name,
                name,
                status="denied",
                reason="only the calling client may approve it, and this client cannot be asked "
                "(it declared no form elicitation)",
                approval_id="-",
            )
        approval = self.desk.new(
            rule=rule.name,
            ask=rule.ask.value,
            timeout_secs=rule.timeout_secs,
            client=client,
            profile=identity.profile,
            server=invocation.server,
            tool=invocation.target,
            arguments=shown_arguments(invocation.arguments, self._scrub),
            digest=digest,
        )
        await self.desk.hold(approval, ask_client=ask, admin=admin, session=session)
        if len(self._resumable) >= _MAX_RESUMABLE:
            self._resumable.clear()
        self._resumable[digest] = self._monotonic() + _RESUMABLE_SECS

    def _resumed(self, digest: str) -> bool:
        until = self._resumable.get(digest)
        return until is not None and until > self._monotonic()

    def _definition(self, server: str, tool: str) -> str | None:
        entry = self._catalog().get(namespace(server, tool))
        if entry is None or entry.server != server:
            return None
        return fingerprint(tool_definition(entry.tool))


def _asker(caller: Caller, page: str | None, *, admin: bool) -> AskClient | None:
    """How to ask ``caller``: a form; else, where an admin may decide and the page's address is
    known, a URL elicitation pointing at the page's approval view; else None."""
    if caller.refusal(_PROBE) is None:

        async def ask(approval: Approval) -> ClientAnswer:
            return answer_of(await caller.answer(question(approval)))

        return ask
    if page is None or not admin or caller.refusal(_URL_PROBE) is not None:
        return None

    async def point(approval: Approval) -> ClientAnswer:
        return page_answer_of(await caller.answer(page_question(approval, page)))

    return point
