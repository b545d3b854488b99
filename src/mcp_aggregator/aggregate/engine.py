"""The aggregator query: select servers, ask them all at once, rank, deduplicate.

The shell around the pure parts (selection, detection, planning, extraction, ranking,
dedup): it owns the concurrency, the timeouts and the choice of mode, and nothing else.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime

import anyio

from mcp_aggregator.aggregate.config import AggregatorSettings
from mcp_aggregator.aggregate.dedup import deduplicate
from mcp_aggregator.aggregate.llm_agent import AgentOutcome, LlmAgent
from mcp_aggregator.aggregate.query_planner import keyword_queries
from mcp_aggregator.aggregate.query_request import QueryRequest
from mcp_aggregator.aggregate.query_response import QueryMetadata, QueryResponse, RankedResult, ServerFailure
from mcp_aggregator.aggregate.query_target import QueryTarget
from mcp_aggregator.aggregate.query_tool_detection import QueryPlan, plan_query
from mcp_aggregator.aggregate.ranking import ScoredResult, rank_results
from mcp_aggregator.aggregate.server_query import ServerQuery
from mcp_aggregator.aggregate.server_selection import decided_without_search, select_servers
from mcp_aggregator.errors import AggregationFailedError, AggregatorError, LlmAgentError
from mcp_aggregator.extras import LLM, require_extra

logger = logging.getLogger(__name__)

# The servers of the k tools that best fit a question, best first (repeats allowed): the
# gateway's tool search index, passed in so that this part does not depend on search/. It is
# awaited: embedding a question takes milliseconds of CPU, which must not stall the loop.
ToolSearch = Callable[[str, int], Awaitable[Sequence[str]]]

_NOT_CONNECTED = "unavailable"
# Results the model did not choose rank below every chosen one, at this share of their score.
_UNCHOSEN_SHARE = 0.5


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class _Plan:
    """Who is asked and how: ``asked`` in selection order; ``skipped`` were selected but
    cannot be asked (not connected, no usable query tool); ``how`` the selection kind."""

    selected: tuple[str, ...]
    asked: tuple[tuple[QueryTarget, QueryPlan], ...]
    skipped: tuple[ServerFailure, ...]
    how: str


class AggregatorEngine:
    """Answers aggregator queries against the targets the caller says are available.

    ``clock`` must return timezone-aware datetimes; it stamps retrieval times and is the
    "now" of freshness. Processing time is measured with a monotonic timer instead.
    ``tool_search`` narrows the servers of a query no rule matches (see ``ToolSearch``);
    ``environ`` is where the LLM mode finds its API key and base URL.
    """

    def __init__(
        self,
        settings: AggregatorSettings,
        clock: Callable[[], datetime] = utc_now,
        *,
        tool_search: ToolSearch | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        if settings.mode == "llm":
            require_extra("anthropic", extra=LLM, feature="aggregator.mode: llm")
        self._settings = settings
        self._clock = clock
        self._tool_search = tool_search if settings.tool_search_selection else None
        self._agent = LlmAgent(
            settings.llm,
            environ=os.environ if environ is None else environ,
            server_timeout_secs=settings.server_timeout_secs,
            clock=clock,
            max_chars=settings.max_result_chars,
        )
        # (server, tool) pairs seen to match literally: the whole question found nothing
        # and keywords did. Bounded by the configured servers' tools.
        self._literal: set[tuple[str, str]] = set()

    @property
    def settings(self) -> AggregatorSettings:
        return self._settings

    async def query(self, request: QueryRequest, targets: Sequence[QueryTarget]) -> QueryResponse:
        """Answer ``request`` in the configured mode.

        Heuristic: every selected server with a usable query tool is asked concurrently,
        each within ``serverTimeoutSecs``; after ``totalTimeoutSecs`` whatever has arrived
        is used. LLM: the model asks the selected servers; if it cannot answer, the
        heuristic mode does and ``metadata.llmFallback`` says why. Selected servers that
        are not among ``targets`` or have no usable query tool are not asked and not
        counted as queried; both kinds are reported in ``metadata.skippedServers``.

        Raises:
            AggregationFailedError: no selected server answered successfully (or none could
                be asked). ``attempted`` lists every selected server, ``errors`` one
                "server: reason" per failed or skipped server.
        """
        started = time.perf_counter()
        plan = await self._plan(request, targets)
        fallback: str | None = None
        if self._settings.mode == "llm":
            try:
                outcome = await self._agent.run(request.query, request.max_results, self._with_learned(plan.asked))
            except LlmAgentError as exc:
                fallback = str(exc)
                logger.warning("aggregator query: LLM mode failed, heuristic mode answers: %s", fallback)
            else:
                return self._assemble_agent(request, plan, outcome, started)
        queries = await self._fan_out(request, plan)
        return self._assemble(request, plan, queries, started, fallback)

    async def _plan(self, request: QueryRequest, targets: Sequence[QueryTarget]) -> _Plan:
        by_name: dict[str, QueryTarget] = {}
        for target in targets:
            by_name.setdefault(target.name, target)
        plans = {name: plan_query(target.tools, self._settings.servers.get(name)) for name, target in by_name.items()}
        usable = [name for name, plan in plans.items() if isinstance(plan, QueryPlan)]
        rules = self._settings.server_rules
        fitting: list[str] | None = None
        if self._narrows(usable) and not decided_without_search(request.query, rules=rules, explicit=request.servers):
            fitting = await self._fitting(request.query, usable)
        selection = select_servers(
            request.query,
            rules=rules,
            explicit=request.servers,
            available=list(by_name),
            found=None if fitting is None else (lambda: fitting),
        )
        asked: list[tuple[QueryTarget, QueryPlan]] = []
        skipped: list[ServerFailure] = []
        for name in selection.selected:
            plan = plans.get(name)
            if plan is None:
                skipped.append(ServerFailure(name, _NOT_CONNECTED))
            elif isinstance(plan, QueryPlan):
                asked.append((by_name[name], plan))
            else:
                skipped.append(ServerFailure(name, plan.reason))
        return _Plan(selection.selected, tuple(asked), tuple(skipped), selection.how)

    def _with_learned(self, asked: Sequence[tuple[QueryTarget, QueryPlan]]) -> list[tuple[QueryTarget, QueryPlan]]:
        """The plans, with tools learned to match literally marked so (the model is told)."""
        return [
            (target, replace(plan, style="literal") if (target.name, plan.tool) in self._literal else plan)
            for target, plan in asked
        ]

    def _narrows(self, usable: Sequence[str]) -> bool:
        return self._tool_search is not None and len(usable) > self._settings.tool_search_min_servers

    async def _fitting(self, query: str, usable: Sequence[str]) -> list[str]:
        assert self._tool_search is not None
        try:
            found = await self._tool_search(query, self._settings.tool_search_k)
        except AggregatorError:
            logger.exception("aggregator query: tool search failed; asking every server")
            return []
        allowed = set(usable)
        return [name for name in dict.fromkeys(found) if name in allowed]

    async def _fan_out(self, request: QueryRequest, plan: _Plan) -> list[ServerQuery]:
        keywords = keyword_queries(request.query, self._settings.max_keyword_queries)
        queries = [
            ServerQuery(
                target,
                server_plan,
                clock=self._clock,
                max_chars=self._settings.max_result_chars,
                max_results=request.max_results,
            )
            for target, server_plan in plan.asked
        ]
        with anyio.move_on_after(self._settings.total_timeout_secs):
            async with anyio.create_task_group() as tg:
                for query in queries:
                    tg.start_soon(self._run_guarded, query, request.query, keywords)
        for query in queries:
            if query.results is None and not query.errors and query.timed_out is None:
                query.timed_out = f"timeout after {self._settings.total_timeout_secs:g}s (total)"
        return queries

    async def _run_guarded(self, query: ServerQuery, question: str, keywords: Sequence[str]) -> None:
        # One server's unexpected failure must not cancel the others' calls (graceful
        # degradation), so this per-server task is the top-level guard for its server.
        key = (query.name, query.plan.tool)
        try:
            await query.run(question, keywords, within=self._settings.server_timeout_secs, literal=key in self._literal)
        except Exception as exc:
            logger.exception("aggregator query: unexpected error from server %s", query.name)
            query.errors.append(f"internal error ({type(exc).__name__})")
            query.results = None
        if query.learned_literal:
            self._literal.add(key)

    def _assemble(
        self,
        request: QueryRequest,
        plan: _Plan,
        queries: Sequence[ServerQuery],
        started: float,
        fallback: str | None,
    ) -> QueryResponse:
        failed = tuple(ServerFailure(q.name, q.error) for q in queries if q.error is not None)
        self._raise_if_all_failed(plan, queries, failed)
        raw = [result for query in queries for result in query.results or ()]
        ranked = rank_results(raw, query=request.query, settings=self._settings, now=self._clock())
        return self._respond(request, plan, queries, ranked, len(raw), started, "heuristic", failed, fallback)

    def _assemble_agent(
        self, request: QueryRequest, plan: _Plan, outcome: AgentOutcome, started: float
    ) -> QueryResponse:
        queries = list(outcome.asked.values())
        failed = tuple(ServerFailure(q.name, q.error) for q in queries if q.error is not None)
        ranked = rank_results(outcome.seen, query=request.query, settings=self._settings, now=self._clock())
        if outcome.chosen:
            ranked = _agent_order(ranked, outcome.chosen)
        return self._respond(request, plan, queries, ranked, len(outcome.seen), started, "llm", failed, None)

    def _raise_if_all_failed(
        self, plan: _Plan, queries: Sequence[ServerQuery], failed: tuple[ServerFailure, ...]
    ) -> None:
        if any(query.error is None for query in queries):
            return
        reasons = {failure.server: failure for failure in (*failed, *plan.skipped)}
        errors = [str(reasons[name]) for name in plan.selected if name in reasons]
        for error in errors:
            logger.warning("aggregator query: %s", error)
        raise AggregationFailedError(plan.selected, errors)

    def _respond(
        self,
        request: QueryRequest,
        plan: _Plan,
        queries: Sequence[ServerQuery],
        ranked: list[ScoredResult],
        raw_count: int,
        started: float,
        mode: str,
        failed: tuple[ServerFailure, ...],
        fallback: str | None,
    ) -> QueryResponse:
        for failure in (*failed, *plan.skipped):
            logger.warning("aggregator query: %s", failure)
        dedup = deduplicate(ranked, threshold=self._settings.dedup_threshold, limit=request.max_results)
        results = tuple(RankedResult.from_scored(scored, rank=i) for i, scored in enumerate(dedup.kept, start=1))
        contributing = {result.server for result in results}
        metadata = QueryMetadata(
            servers_queried=len(queries),
            servers_succeeded=sum(1 for query in queries if query.error is None),
            total_results_raw=raw_count,
            total_results_dedup=raw_count - dedup.duplicates,
            results_returned=len(results),
            processing_time_ms=round((time.perf_counter() - started) * 1000),
            server_diversity=round(len(contributing) / len(queries), 4) if queries else 0.0,
            mode=mode,
            selection=plan.how,
            failed=failed,
            skipped=plan.skipped,
            sent=tuple((query.name, query.sent_queries()) for query in queries),
            llm_fallback=fallback,
        )
        return QueryResponse(results=results, metadata=metadata)


def _agent_order(ranked: list[ScoredResult], chosen: Sequence[object]) -> list[ScoredResult]:
    """The model's choice first, in its order, scored from 1.0 down towards 0.5; then the
    rest in heuristic order at half their score, so scores still fall with the rank."""
    position = {id(raw): i for i, raw in enumerate(chosen)}
    picked = sorted((s for s in ranked if id(s.raw) in position), key=lambda s: position[id(s.raw)])
    rest = [s for s in ranked if id(s.raw) not in position]
    count = len(picked)
    out = [s._replace(score=round(1.0 - _UNCHOSEN_SHARE * i / count, 4)) for i, s in enumerate(picked)]
    out.extend(s._replace(score=round(s.score * _UNCHOSEN_SHARE, 4)) for s in rest)
    return out
