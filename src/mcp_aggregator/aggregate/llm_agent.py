"""Seed 002's LLM-agent mode: a model decides which servers' query tools to call.

The model (Anthropic Messages API, official SDK) is given one tool per selected server —
that server's read-only query tool, reduced to a single ``query`` string so the
configured argument templates still apply — and a ``submit_results`` tool. Each turn it
may call several search tools (run concurrently, each within the server timeout); every
result it sees carries an id (``r1``, ``r2``, ...); it finishes by submitting the ids of
the relevant results, best first, which is forced on the last allowed turn.

Any failure — no API key, an API error, the whole agent running past ``timeoutSecs``, a
model that queried nothing — raises ``LlmAgentError`` with the reason, and the engine's
heuristic mode answers instead.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING

import anyio

from mcp_aggregator.aggregate.config import LlmSettings
from mcp_aggregator.aggregate.query_target import QueryTarget
from mcp_aggregator.aggregate.query_tool_detection import QueryPlan
from mcp_aggregator.aggregate.result_extraction import RawResult
from mcp_aggregator.aggregate.server_query import ServerQuery
from mcp_aggregator.errors import LlmAgentError

if TYPE_CHECKING:
    import anthropic
    from anthropic.types import MessageParam, ToolChoiceParam, ToolParam, ToolResultBlockParam

logger = logging.getLogger(__name__)

SUBMIT_TOOL = "submit_results"
BASE_URL_ENV = "ANTHROPIC_BASE_URL"
_EXCERPT_CHARS = 600
_TOOL_NAME_CHARS = 64
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_SYSTEM_PROMPT = (
    "You gather context for a user's question from several MCP servers; you do not answer the "
    "question yourself. Call the search tools (several in one turn when useful) to find material "
    "that helps answer it. Tools marked literal match text literally: give them one or two "
    "keywords, not a sentence. Every result you see has an id such as r3. When you have enough, "
    f"call {SUBMIT_TOOL} with the ids of the relevant results, most relevant first."
)
_SUBMIT_TOOL_SPEC: ToolParam = {
    "name": SUBMIT_TOOL,
    "description": "Finish: the ids of the results that help answer the question, most relevant first.",
    "input_schema": {
        "type": "object",
        "properties": {"result_ids": {"type": "array", "items": {"type": "string"}}},
        "required": ["result_ids"],
    },
}


@dataclass(slots=True)
class AgentOutcome:
    """What the agent did: the servers it asked (in first-asked order), every result it
    saw, and the ones it chose, best first (empty when it ended without choosing)."""

    asked: dict[str, ServerQuery] = field(default_factory=dict)
    seen: list[RawResult] = field(default_factory=list)
    chosen: list[RawResult] = field(default_factory=list)
    turns: int = 0


@dataclass(frozen=True, slots=True)
class AgentTool:
    """One server's query tool as the model sees it."""

    name: str
    target: QueryTarget
    plan: QueryPlan

    def spec(self) -> ToolParam:
        how = (
            "It matches text literally: pass one or two keywords."
            if self.plan.style == "literal"
            else "Pass the question or a focused rephrasing of it."
        )
        about = f" {self.plan.description.strip()}" if self.plan.description.strip() else ""
        return {
            "name": self.name,
            "description": f"Search the server {self.target.name!r} (its tool {self.plan.tool!r}).{about} {how}",
            "input_schema": {
                "type": "object",
                "properties": {"query": {"type": "string", "description": "what to search for"}},
                "required": ["query"],
            },
        }


class LlmAgent:
    """Runs the agent loop for one query at a time; holds no connection between queries."""

    def __init__(
        self,
        settings: LlmSettings,
        *,
        environ: Mapping[str, str],
        server_timeout_secs: float,
        clock: Callable[[], datetime],
        max_chars: int,
    ) -> None:
        self._settings = settings
        self._environ = environ
        self._server_timeout = server_timeout_secs
        self._clock = clock
        self._max_chars = max_chars

    async def run(
        self, question: str, max_results: int, servers: Sequence[tuple[QueryTarget, QueryPlan]]
    ) -> AgentOutcome:
        """Let the model query ``servers`` about ``question``.

        Raises:
            LlmAgentError: the reason the heuristic mode must answer instead.
        """
        api_key = self._environ.get(self._settings.api_key_env)
        if not api_key:
            raise LlmAgentError(f"no API key ({self._settings.api_key_env} is not set)")
        if not servers:
            raise LlmAgentError("no selected server has a usable query tool")
        tools = agent_tools(servers)
        outcome = AgentOutcome()
        base_url = self._settings.base_url or self._environ.get(BASE_URL_ENV) or None
        # Imported on first use: the SDK costs ~70 MB and most of a second at start, and
        # only the LLM-agent mode needs it.
        import anthropic

        try:
            with anyio.fail_after(self._settings.timeout_secs):
                async with anthropic.AsyncAnthropic(
                    api_key=api_key,
                    base_url=base_url,
                    timeout=self._settings.request_timeout_secs,
                    max_retries=0,
                ) as client:
                    await self._loop(client, question, max_results, tools, outcome)
        except TimeoutError as exc:
            raise LlmAgentError(f"timeout after {self._settings.timeout_secs:g}s") from exc
        except anthropic.APITimeoutError as exc:
            limit = self._settings.request_timeout_secs
            raise LlmAgentError(f"Messages API request timed out after {limit:g}s") from exc
        except anthropic.APIStatusError as exc:
            raise LlmAgentError(f"Messages API error {exc.status_code}: {_api_message(exc)}") from exc
        except anthropic.AnthropicError as exc:
            raise LlmAgentError(f"Messages API failure: {_short(str(exc))}") from exc
        if not outcome.asked:
            raise LlmAgentError("the model queried no server")
        if all(server.error is not None for server in outcome.asked.values()):
            raise LlmAgentError("every server the model queried failed")
        return outcome

    async def _loop(
        self,
        client: anthropic.AsyncAnthropic,
        question: str,
        max_results: int,
        tools: Sequence[AgentTool],
        outcome: AgentOutcome,
    ) -> None:
        by_name = {tool.name: tool for tool in tools}
        specs = [tool.spec() for tool in tools] + [_SUBMIT_TOOL_SPEC]
        messages: list[MessageParam] = [{"role": "user", "content": question}]
        ids: dict[str, RawResult] = {}
        for turn in range(self._settings.max_turns):
            # The last allowed turn must end the loop with a choice.
            last = turn == self._settings.max_turns - 1
            choice: ToolChoiceParam = {"type": "tool", "name": SUBMIT_TOOL} if last else {"type": "auto"}
            response = await client.messages.create(
                model=self._settings.model,
                max_tokens=self._settings.max_tokens,
                system=_SYSTEM_PROMPT,
                tools=specs,
                tool_choice=choice,
                messages=messages,
            )
            outcome.turns = turn + 1
            uses = [block for block in response.content if block.type == "tool_use"]
            submitted = next((use for use in uses if use.name == SUBMIT_TOOL), None)
            if submitted is not None:
                outcome.chosen = _chosen(submitted.input, ids)
                return
            if not uses:
                return
            messages.append({"role": "assistant", "content": response.content})
            replies: dict[str, ToolResultBlockParam | list[RawResult]] = {}
            async with anyio.create_task_group() as tg:
                for use in uses:
                    tg.start_soon(self._call, use.id, use.name, use.input, by_name, max_results, outcome, replies)
            # Results are numbered in the order the model asked, not the order the servers
            # answered: the same conversation gives the same ids every time.
            content = [_numbered(use.id, replies[use.id], ids, outcome) for use in uses]
            messages.append({"role": "user", "content": content})

    async def _call(
        self,
        use_id: str,
        name: str,
        arguments: object,
        by_name: Mapping[str, AgentTool],
        max_results: int,
        outcome: AgentOutcome,
        replies: dict[str, ToolResultBlockParam | list[RawResult]],
    ) -> None:
        tool = by_name.get(name)
        query = arguments.get("query") if isinstance(arguments, Mapping) else None
        if tool is None or not isinstance(query, str) or not query.strip():
            why = f"unknown tool {name!r}" if tool is None else "give a non-empty 'query' string"
            replies[use_id] = _tool_result(use_id, why, is_error=True)
            return
        server = outcome.asked.get(tool.target.name)
        if server is None:
            server = outcome.asked[tool.target.name] = ServerQuery(
                tool.target, tool.plan, clock=self._clock, max_chars=self._max_chars, max_results=max_results
            )
        # Like the heuristic fan-out's per-server guard: one adapter's bug must not sink the
        # other calls of the turn, and the model is told the call failed.
        try:
            found, error = await server.ask_within(query, self._server_timeout)
        except Exception as exc:
            logger.exception("aggregator LLM mode: unexpected error from server %s", tool.target.name)
            found, error = [], f"internal error ({type(exc).__name__})"
            server.errors.append(error)
        if error is not None:
            replies[use_id] = _tool_result(use_id, error, is_error=True)
            return
        replies[use_id] = list(found)


def _numbered(
    use_id: str, reply: ToolResultBlockParam | list[RawResult], ids: dict[str, RawResult], outcome: AgentOutcome
) -> ToolResultBlockParam:
    """A call's results as the model reads them, each with its id (a result seen before
    keeps the id it had); an error reply as it is."""
    if not isinstance(reply, list):
        return reply
    lines = []
    for item in reply:
        result_id = next((key for key, seen in ids.items() if seen.content == item.content), None)
        if result_id is None:
            result_id = f"r{len(ids) + 1}"
            ids[result_id] = item
            outcome.seen.append(item)
        lines.append(f"[{result_id}] {_excerpt(item.content)}")
    return _tool_result(use_id, "\n".join(lines) or "no results")


def agent_tools(servers: Sequence[tuple[QueryTarget, QueryPlan]]) -> list[AgentTool]:
    """One tool per server, named ``<server>__<tool>`` within the API's name rules, unique."""
    tools: list[AgentTool] = []
    used: set[str] = set()
    for target, plan in servers:
        base = _UNSAFE_NAME_CHARS.sub("_", f"{target.name}__{plan.tool}")[:_TOOL_NAME_CHARS]
        name, n = base, 1
        while name in used or name == SUBMIT_TOOL:
            n += 1
            name = f"{base[: _TOOL_NAME_CHARS - len(str(n)) - 1]}_{n}"
        used.add(name)
        tools.append(AgentTool(name, target, plan))
    return tools


def _chosen(arguments: object, ids: Mapping[str, RawResult]) -> list[RawResult]:
    raw_ids = arguments.get("result_ids") if isinstance(arguments, Mapping) else None
    if not isinstance(raw_ids, list):
        return []
    chosen: list[RawResult] = []
    for result_id in raw_ids:
        item = ids.get(str(result_id).strip("[] "))
        if item is not None and item not in chosen:
            chosen.append(item)
    return chosen


def _tool_result(use_id: str, text: str, *, is_error: bool = False) -> ToolResultBlockParam:
    return {"type": "tool_result", "tool_use_id": use_id, "content": text, "is_error": is_error}


def _excerpt(content: str) -> str:
    flat = " ".join(content.split())
    return flat if len(flat) <= _EXCERPT_CHARS else flat[: _EXCERPT_CHARS - 1] + "…"


def _api_message(exc: anthropic.APIStatusError) -> str:
    """The API's own error message (``{"error": {"message": ...}}``), else the SDK's."""
    body = exc.body
    error = body.get("error") if isinstance(body, Mapping) else None
    message = error.get("message") if isinstance(error, Mapping) else None
    return _short(message if isinstance(message, str) else exc.message)


def _short(message: str) -> str:
    return " ".join(message.split())[:200]
