"""The aggregator query: select servers, ask them all at once, rank, deduplicate.

The shell around the pure parts (selection, detection, extraction, ranking, dedup): it
owns the concurrency and the timeouts and nothing else.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

import anyio

from mcp_aggregator.aggregate.config import AggregatorSettings
from mcp_aggregator.aggregate.dedup import deduplicate
from mcp_aggregator.aggregate.query_request import QueryRequest
from mcp_aggregator.aggregate.query_response import QueryMetadata, QueryResponse, RankedResult
from mcp_aggregator.aggregate.query_target import QueryTarget
from mcp_aggregator.aggregate.query_tool_detection import NoQueryTool, plan_query
from mcp_aggregator.aggregate.ranking import rank_results
from mcp_aggregator.aggregate.result_extraction import RawResult, error_text, extract_results
from mcp_aggregator.aggregate.server_selection import ServerSelection, select_servers
from mcp_aggregator.errors import AggregationFailedError, ServerUnavailableError, UpstreamError

logger = logging.getLogger(__name__)


def utc_now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True)
class _Outcome:
    results: list[RawResult] | None = None
    error: str | None = None


class AggregatorEngine:
    """Answers aggregator queries against the targets the caller says are available.

    ``clock`` must return timezone-aware datetimes; it stamps retrieval times and is the
    "now" of freshness. Processing time is measured with a monotonic timer instead.
    """

    def __init__(self, settings: AggregatorSettings, clock: Callable[[], datetime] = utc_now) -> None:
        self._settings = settings
        self._clock = clock

    @property
    def settings(self) -> AggregatorSettings:
        return self._settings

    async def query(self, request: QueryRequest, targets: Sequence[QueryTarget]) -> QueryResponse:
        """Fan ``request`` out and return ranked, deduplicated results.

        Every selected, available server is asked concurrently, each within
        ``serverTimeoutSecs``; after ``totalTimeoutSecs`` whatever has arrived is used.
        Selected servers missing from ``targets`` are not asked and not counted as queried.

        Raises:
            AggregationFailedError: no selected server answered successfully (or none was
                available). ``attempted`` lists every selected server, ``errors`` one
                "server: reason" per server, both in selection order.
        """
        started = time.perf_counter()
        by_name: dict[str, QueryTarget] = {}
        for target in targets:
            by_name.setdefault(target.name, target)
        selection = select_servers(
            request.query,
            rules=self._settings.server_rules,
            explicit=request.servers,
            available=list(by_name),
        )
        outcomes = await self._fan_out(request, [by_name[name] for name in selection.queried])
        errors = _errors_in_order(selection, outcomes)
        for error in errors:
            logger.warning("aggregator query: %s", error)
        if not any(outcome.error is None for outcome in outcomes.values()):
            raise AggregationFailedError(selection.selected, errors)
        return self._assemble(request, selection, outcomes, started)

    def _assemble(
        self,
        request: QueryRequest,
        selection: ServerSelection,
        outcomes: dict[str, _Outcome],
        started: float,
    ) -> QueryResponse:
        raw = [result for name in selection.queried for result in outcomes[name].results or ()]
        ranked = rank_results(raw, query=request.query, settings=self._settings, now=self._clock())
        dedup = deduplicate(ranked, threshold=self._settings.dedup_threshold, limit=request.max_results)
        results = tuple(
            RankedResult.from_scored(scored, rank=i) for i, scored in enumerate(dedup.kept, start=1)
        )
        contributing = {result.server for result in results}
        metadata = QueryMetadata(
            servers_queried=len(selection.queried),
            servers_succeeded=sum(1 for outcome in outcomes.values() if outcome.error is None),
            total_results_raw=len(raw),
            total_results_dedup=len(raw) - dedup.duplicates,
            results_returned=len(results),
            processing_time_ms=round((time.perf_counter() - started) * 1000),
            server_diversity=round(len(contributing) / len(selection.queried), 4),
        )
        failures = tuple(
            f"{name}: {outcomes[name].error}"
            for name in selection.queried
            if outcomes[name].error is not None
        )
        return QueryResponse(
            results=results, metadata=metadata, failures=failures, unavailable=selection.unavailable
        )

    async def _fan_out(self, request: QueryRequest, targets: Sequence[QueryTarget]) -> dict[str, _Outcome]:
        outcomes: dict[str, _Outcome] = {}
        with anyio.move_on_after(self._settings.total_timeout_secs):
            async with anyio.create_task_group() as tg:
                for target in targets:
                    tg.start_soon(self._ask_guarded, target, request, outcomes)
        late = _Outcome(error=f"timeout after {self._settings.total_timeout_secs:g}s (total)")
        return {target.name: outcomes.get(target.name, late) for target in targets}

    async def _ask_guarded(
        self, target: QueryTarget, request: QueryRequest, outcomes: dict[str, _Outcome]
    ) -> None:
        # One server's unexpected failure must not cancel the others' calls (graceful
        # degradation), so this per-server task is the top-level guard for its server.
        try:
            outcomes[target.name] = await self._ask(target, request)
        except Exception as exc:
            logger.exception("aggregator query: unexpected error from server %s", target.name)
            outcomes[target.name] = _Outcome(error=f"internal error ({type(exc).__name__})")

    async def _ask(self, target: QueryTarget, request: QueryRequest) -> _Outcome:
        plan = plan_query(target.tools, self._settings.servers.get(target.name))
        if isinstance(plan, NoQueryTool):
            return _Outcome(error=plan.reason)
        arguments = plan.arguments_for(request.query, request.max_results)
        timeout = self._settings.server_timeout_secs
        with anyio.move_on_after(timeout):
            try:
                result = await target.call_tool(plan.tool, arguments)
            except (UpstreamError, ServerUnavailableError) as exc:
                return _Outcome(error=_reason_of(exc))
            if result.is_error:
                return _Outcome(error=error_text(result))
            results = extract_results(
                result,
                server=target.name,
                retrieved_at=self._clock(),
                max_chars=self._settings.max_result_chars,
            )
            return _Outcome(results=results)
        return _Outcome(error=f"timeout after {timeout:g}s")


def _errors_in_order(selection: ServerSelection, outcomes: dict[str, _Outcome]) -> list[str]:
    errors: list[str] = []
    for name in selection.selected:
        outcome = outcomes.get(name)
        if outcome is None:
            errors.append(f"{name}: unavailable")
        elif outcome.error is not None:
            errors.append(f"{name}: {outcome.error}")
    return errors


def _reason_of(exc: UpstreamError | ServerUnavailableError) -> str:
    message = str(exc)
    prefix = f"{exc.server}: "
    return message.removeprefix(prefix) if isinstance(exc, UpstreamError) else message
