"""The stage over a real desk and SQLite store, with a client that takes URL elicitation only:
it is pointed at the page's approval view, and the decision taken there lets the call go."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from mcp_aggregator.approvals.approval import ApprovalStatus, DecidedVia
from mcp_aggregator.approvals.approval_desk import ApprovalDesk
from mcp_aggregator.approvals.approval_rules import ApprovalRules
from mcp_aggregator.approvals.approval_stage import ApprovalStage
from mcp_aggregator.approvals.config import ApprovalAsk, ApprovalRule
from mcp_aggregator.catalog import Catalog
from mcp_aggregator.errors import ApprovalRefusedError
from mcp_aggregator.identity import ClientIdentity
from mcp_aggregator.relay import Caller, Invocation
from tests.approvals.test_approval_desk import DEADLINE, Watch, sqlite_in, store_at

PAGE = "http://gateway.example:8765"
URL_ONLY = types.ClientCapabilities(elicitation=types.ElicitationCapability(url=types.UrlElicitationCapability()))


class UrlClient:
    """A client that takes URL elicitation only: it opens every link it is given (accept)."""

    def __init__(self) -> None:
        self.asked: list[types.InputRequest] = []
        self.opened = anyio.Event()

    async def __call__(self, request: types.InputRequest) -> types.InputResponse | types.ErrorData:
        self.asked.append(request)
        self.opened.set()
        return types.ElicitResult(action="accept")


def stage_for(desk: ApprovalDesk, ask: ApprovalAsk) -> ApprovalStage:
    rules = ApprovalRules([ApprovalRule(name="commits", tools=("vcs.git_commit",), ask=ask)], {})
    return ApprovalStage(rules, desk, Catalog, lambda text: text, page=lambda: PAGE)


def invocation(client: UrlClient) -> Invocation:
    caller = Caller(capabilities=URL_ONLY, ask=client, identity=ClientIdentity(name="ada"))
    return Invocation("tools/call", "vcs", "git_commit", caller, None, {"message": "release"})


async def test_a_client_that_takes_urls_only_is_pointed_at_the_page_where_the_call_is_approved(tmp_path: Path) -> None:
    client = UrlClient()
    sent: list[str] = []

    async def send() -> Any:
        sent.append("sent")
        return "result"

    async with store_at(sqlite_in(tmp_path)) as store:
        desk = ApprovalDesk(store)
        watch = Watch(desk)
        stage = stage_for(desk, ApprovalAsk.BOTH)
        outcome: list[Any] = []
        async with anyio.create_task_group() as tg:

            async def call() -> None:
                outcome.append(await stage(invocation(client), send))

            tg.start_soon(call)
            with anyio.fail_after(DEADLINE):
                await watch.pending.wait()
            held = watch.seen[0]
            with anyio.fail_after(DEADLINE):
                await client.opened.wait()
            assert sent == []  # the link was opened; nothing is decided by that
            await desk.decide(held.id, approve=True, by="admin", via=DecidedVia.PAGE, reason=None)
        assert (outcome, sent) == (["result"], ["sent"])
    [asked] = client.asked
    assert isinstance(asked, types.ElicitRequest) and isinstance(asked.params, types.ElicitRequestURLParams)
    assert asked.params.url == f"{PAGE}/#/approvals/{held.id}"
    assert watch.seen[-1].status is ApprovalStatus.APPROVED and watch.seen[-1].via is DecidedVia.PAGE


async def test_a_rule_only_the_client_decides_refuses_a_client_that_takes_urls_only_at_once(tmp_path: Path) -> None:
    async def send() -> Any:
        raise AssertionError("a refused call never goes upstream")

    async with store_at(sqlite_in(tmp_path)) as store:
        stage = stage_for(ApprovalDesk(store), ApprovalAsk.CLIENT)
        with pytest.raises(ApprovalRefusedError, match="this client cannot be asked"):
            await stage(invocation(UrlClient()), send)
        assert await store.listed(status=None) == []
