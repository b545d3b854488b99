"""Asking one server: the whole question, keyword sub-queries, or both, within its budget.

What is sent depends on the plan's style:
- ``semantic``: the whole question only;
- ``literal`` (said by the tool's description or the configuration, or learned from an
  earlier query): the whole question and the keyword sub-queries, all at once;
- ``auto``: the whole question; when it succeeds with zero hits, the keyword
  sub-queries, all at once, in what is left of the server's time.

Everything this server returned is united (the same text from two sub-queries counts
once). ``ServerQuery`` records as it goes, so a query cut short by the server's or the
whole query's deadline still reports what arrived and what was sent.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

import anyio

from mcp_aggregator.aggregate.query_response import SentQueries
from mcp_aggregator.aggregate.query_target import QueryTarget
from mcp_aggregator.aggregate.query_tool_detection import QueryPlan
from mcp_aggregator.aggregate.result_extraction import RawResult, error_text, extract_results
from mcp_aggregator.errors import ServerUnavailableError, UpstreamError


class ServerQuery:
    """One server's part of one aggregator query; ``run`` once, then read the outcome.

    ``results`` is None until a call succeeded; ``error`` says why there are none.
    ``learned_literal`` is set when the whole question found nothing and keywords did.
    """

    def __init__(
        self,
        target: QueryTarget,
        plan: QueryPlan,
        *,
        clock: Callable[[], datetime],
        max_chars: int,
        max_results: int,
    ) -> None:
        self.target = target
        self.plan = plan
        self.sent: list[str] = []
        self.results: list[RawResult] | None = None
        self.errors: list[str] = []
        self.learned_literal = False
        self.timed_out: str | None = None
        self._clock = clock
        self._max_chars = max_chars
        self._max_results = max_results
        self._seen: set[str] = set()

    @property
    def name(self) -> str:
        return self.target.name

    @property
    def error(self) -> str | None:
        """Why this server counts as failed, or None when it succeeded."""
        if self.results is not None:
            return None
        if self.errors:
            return self.errors[0]
        return self.timed_out or "no answer"

    def sent_queries(self) -> SentQueries:
        return SentQueries(self.plan.tool, tuple(self.sent))

    async def run(self, question: str, keywords: Sequence[str], *, within: float, literal: bool) -> None:
        """Ask within ``within`` seconds; never raises for the server's own failures."""
        with anyio.move_on_after(within):
            if self.plan.style == "semantic" or not keywords:
                await self._ask_all([question])
            elif literal or self.plan.style == "literal":
                await self._ask_all([question, *keywords])
            else:
                await self._ask_all([question])
                if self.results is not None and not self.results:
                    await self._ask_all(keywords)
                    self.learned_literal = bool(self.results)
            return
        self.timed_out = f"timeout after {within:g}s"

    async def ask_within(self, query: str, within: float) -> tuple[list[RawResult], str | None]:
        """One query within ``within`` seconds: (its results, None) or ([], why it failed)."""
        with anyio.move_on_after(within):
            return await self._ask(query)
        reason = f"timeout after {within:g}s"
        self.errors.append(reason)
        return [], reason

    async def _ask_all(self, queries: Sequence[str]) -> None:
        if len(queries) == 1:
            await self._ask(queries[0])
            return
        async with anyio.create_task_group() as tg:
            for query in queries:
                tg.start_soon(self._ask, query)

    async def _ask(self, query: str) -> tuple[list[RawResult], str | None]:
        self.sent.append(query)
        try:
            result = await self.target.call_tool(self.plan.tool, self.plan.arguments_for(query, self._max_results))
        except (UpstreamError, ServerUnavailableError) as exc:
            reason = _reason_of(exc)
            self.errors.append(reason)
            return [], reason
        if result.is_error:
            reason = error_text(result)
            self.errors.append(reason)
            return [], reason
        found = extract_results(result, server=self.target.name, retrieved_at=self._clock(), max_chars=self._max_chars)
        if self.results is None:
            self.results = []
        for item in found:
            if item.content not in self._seen:
                self._seen.add(item.content)
                self.results.append(item)
        return found, None


def _reason_of(exc: UpstreamError | ServerUnavailableError) -> str:
    message = str(exc)
    prefix = f"{exc.server}: "
    return message.removeprefix(prefix) if isinstance(exc, UpstreamError) else message
