"""The aggregator's answer and its JSON form (exactly the contract's output schema)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import mcp_types

from mcp_aggregator.aggregate.ranking import ScoreBreakdown, ScoredResult


@dataclass(frozen=True, slots=True)
class RankedResult:
    """One returned result.

    ``retrieved_at`` is published as ``timestamp`` (the contract: "when this result was
    retrieved"); ``source_time``, a timestamp found inside the result, only fed freshness.
    """

    content: str
    server: str
    relevance_score: float
    rank: int
    retrieved_at: datetime
    source_time: datetime | None
    breakdown: ScoreBreakdown

    @classmethod
    def from_scored(cls, scored: ScoredResult, *, rank: int) -> RankedResult:
        return cls(
            content=scored.raw.content,
            server=scored.raw.server,
            relevance_score=scored.score,
            rank=rank,
            retrieved_at=scored.raw.retrieved_at,
            source_time=scored.raw.source_time,
            breakdown=scored.breakdown,
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "content": self.content,
            "server": self.server,
            "relevanceScore": self.relevance_score,
            "rank": self.rank,
            "timestamp": format_timestamp(self.retrieved_at),
        }


@dataclass(frozen=True, slots=True)
class ServerFailure:
    """A server that failed (``reason``: "timeout after 3s", "connection refused", ...) or
    was selected but not asked ("no usable query tool", "not connected")."""

    server: str
    reason: str

    def to_json(self) -> dict[str, str]:
        return {"server": self.server, "reason": self.reason}

    def __str__(self) -> str:
        return f"{self.server}: {self.reason}"


@dataclass(frozen=True, slots=True)
class SentQueries:
    """What one server was actually sent: its query tool and each query text, in order."""

    tool: str
    queries: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"tool": self.tool, "queries": list(self.queries)}


@dataclass(frozen=True, slots=True)
class QueryMetadata:
    """What actually happened.

    ``servers_queried`` counts servers actually asked (selected, available, and with a
    usable query tool);
    ``servers_succeeded`` those that answered without error, even with no results;
    ``total_results_dedup`` is raw minus recognised duplicates (see ``dedup``);
    ``server_diversity`` is the share of queried servers with at least one returned result.

    Beyond the contract's fields (all optional in its schema, so the output stays valid):
    ``mode`` that answered (``heuristic`` / ``llm``), ``selection`` (how servers were
    chosen: ``explicit``, ``rule``, ``toolSearch``, ``all``, or ``agent`` when the model
    chose), ``failed`` (queried servers that failed, and why), ``skipped`` (selected but
    not asked, and why), ``sent`` (per queried server, what was sent) and
    ``llm_fallback`` (why the LLM mode gave way to the heuristic one).
    """

    servers_queried: int
    servers_succeeded: int
    total_results_raw: int
    total_results_dedup: int
    results_returned: int
    processing_time_ms: int
    server_diversity: float
    mode: str = "heuristic"
    selection: str = "all"
    failed: tuple[ServerFailure, ...] = ()
    skipped: tuple[ServerFailure, ...] = ()
    sent: tuple[tuple[str, SentQueries], ...] = ()
    llm_fallback: str | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "serversQueried": self.servers_queried,
            "serversSucceeded": self.servers_succeeded,
            "totalResultsRaw": self.total_results_raw,
            "totalResultsDedup": self.total_results_dedup,
            "resultsReturned": self.results_returned,
            "processingTimeMs": self.processing_time_ms,
            "serverDiversity": self.server_diversity,
            "mode": self.mode,
            "selection": self.selection,
            "failedServers": [failure.to_json() for failure in self.failed],
            "skippedServers": [skip.to_json() for skip in self.skipped],
        }
        if self.sent:
            out["queriesSent"] = {server: sent.to_json() for server, sent in self.sent}
        if self.llm_fallback is not None:
            out["llmFallback"] = self.llm_fallback
        return out


@dataclass(frozen=True, slots=True)
class QueryResponse:
    """Ranked, deduplicated results plus metadata.

    ``failures`` ("server: reason", in selection order: the failed, then the skipped) is
    the same information as the metadata's for logs.
    """

    results: tuple[RankedResult, ...]
    metadata: QueryMetadata

    @property
    def failures(self) -> tuple[str, ...]:
        return tuple(str(failure) for failure in (*self.metadata.failed, *self.metadata.skipped))

    def to_json(self) -> dict[str, Any]:
        """``{"results": [...], "metadata": {...}}`` with the contract's camelCase keys."""
        return {"results": [result.to_json() for result in self.results], "metadata": self.metadata.to_json()}

    def to_text(self) -> str:
        """Compact JSON text, as in the contract's example response."""
        return json.dumps(self.to_json(), ensure_ascii=False, separators=(",", ":"))

    def to_call_tool_result(self) -> mcp_types.CallToolResult:
        """The tool result: one text block holding the JSON, and the same as structured content."""
        return mcp_types.CallToolResult(
            content=[mcp_types.TextContent(type="text", text=self.to_text())],
            structured_content=self.to_json(),
        )


def format_timestamp(moment: datetime) -> str:
    """ISO 8601 in UTC with millisecond precision and a ``Z`` suffix."""
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
