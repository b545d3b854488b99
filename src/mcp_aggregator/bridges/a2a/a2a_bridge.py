"""An A2A agent as an MCP server: its card's skills as tools, a call as an A2A message.

Built on a2a-sdk's client (card resolution, JSON-RPC/REST transports, streaming). While a
task works, each status message the agent streams becomes a progress notification, so a
long task keeps the caller informed (and its deadline alive); a client that asks for an MCP
task gets the agent's task as one (``agent_tasks``). Each ``tools/list`` after
the first reads the card again: a changed card reaches the pins, and an agent that no
longer answers fails the health check.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

import httpx
import mcp_types as types
from a2a.client import ClientConfig, ClientFactory
from a2a.client.client import Client as A2AClient
from a2a.client.client import ClientCallContext
from a2a.client.errors import A2AClientError
from a2a.helpers.proto_helpers import new_data_part, new_text_part
from a2a.types import AgentCard, Artifact, Message, Role, SendMessageRequest, StreamResponse, Task
from a2a.utils.errors import A2AError
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError

from mcp_aggregator.bridges.a2a.agent_reply import message_result, task_result
from mcp_aggregator.bridges.a2a.agent_tasks import Agents, AgentTasks
from mcp_aggregator.bridges.a2a.card_security import CARD, access, unknown_in_card
from mcp_aggregator.bridges.a2a.skill_tools import skill_tools
from mcp_aggregator.bridges.agent_card import read_agent_card
from mcp_aggregator.bridges.bridge_server import BridgeServer
from mcp_aggregator.errors import BridgeError

logger = logging.getLogger(__name__)


def _error(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def _merge(task: Task | None, event: StreamResponse) -> Task | None:
    """The task as the events so far tell it (a2a-sdk yields each event as it comes)."""
    kind = event.WhichOneof("payload")
    if kind == "task":
        return event.task
    if task is None:
        task = Task()
    if kind == "status_update":
        task.status.CopyFrom(event.status_update.status)
    elif kind == "artifact_update":
        update = event.artifact_update
        existing = next((a for a in task.artifacts if a.artifact_id == update.artifact.artifact_id), None)
        if existing is not None and update.append:
            existing.parts.extend(update.artifact.parts)
        elif existing is not None:
            existing.CopyFrom(update.artifact)
        else:
            task.artifacts.append(Artifact())
            task.artifacts[-1].CopyFrom(update.artifact)
    return task


class A2ABridge(BridgeServer):
    """One agent's skills, kept current, and the server that offers them."""

    def __init__(
        self,
        name: str,
        base_url: str,
        client: httpx.AsyncClient,
        *,
        secrets: Mapping[str, str] | None = None,
        signed_in: bool = False,
    ) -> None:
        """``secrets``: the ``security`` setting, expanded (scheme name to secret);
        ``signed_in``: ``client`` carries the gateway's OAuth sign-in (``auth: oauth``)."""
        self.name = name
        self._signed_in = signed_in
        self._secrets = dict(secrets or {})
        self._access: dict[str, dict[str, str] | str] = {}
        self._base_url = base_url
        self._http = client
        self._agent: A2AClient | None = None
        self._tools: dict[str, tuple[types.Tool, str | None]] = {}
        self._fresh = False
        self.tasks = AgentTasks(self._message_for, self.call_context)

    async def load(self) -> None:
        """Reads the agent card; raises ``BridgeError`` naming ``base_url`` when it cannot."""
        self._adopt(await read_agent_card(self._http, self._base_url, server=self.name))

    def _adopt(self, card: AgentCard) -> None:
        try:
            agent = ClientFactory(ClientConfig(httpx_client=self._http, streaming=True)).create(card)
            polling = ClientFactory(ClientConfig(httpx_client=self._http, streaming=False, polling=True)).create(card)
        except (A2AClientError, ValueError) as exc:
            raise BridgeError(self.name, f"base_url: the agent card offers no interface to reach it ({exc})") from exc
        unknown = unknown_in_card(card, self._secrets)
        if unknown is not None:
            raise BridgeError(self.name, unknown)
        tools = skill_tools(card)
        sent = frozenset(header.lower() for header in self._http.headers)
        skills = {name: skill for name, (_, skill) in tools.items()}
        known = access(card, skills, self._secrets, server=self.name, sent_headers=sent, signed_in=self._signed_in)
        lacking = sorted({why for why in known.values() if isinstance(why, str)})
        if lacking != sorted({why for why in self._access.values() if isinstance(why, str)}):
            for why in lacking:
                logger.warning("upstream %s: %s", self.name, why)
        self._access = known
        self._agent = agent
        self.tasks.agents = Agents(agent, polling, streams=card.capabilities.streaming)
        self._tools = tools
        self._fresh = True

    def call_context(self, tool: str | None) -> ClientCallContext | None:
        """What a request for ``tool`` (None: the agent's task requests) carries; raises
        ``MCPError`` (INVALID_REQUEST) naming the security scheme when no secret is configured."""
        headers = self._access.get(tool or CARD, self._access.get(CARD, {}))
        if isinstance(headers, str):
            raise MCPError(types.INVALID_REQUEST, headers)
        return ClientCallContext(service_parameters=headers) if headers else None

    async def aclose(self) -> None:
        if self.tasks.agents is not None:
            await self.tasks.agents.streaming.close()
            await self.tasks.agents.polling.close()

    def server(self) -> Server[Any]:
        server = super().server()
        self.tasks.install(server)
        return server

    def _instructions(self) -> str:
        return f"The A2A agent at {self._base_url}: one tool per skill."

    def _listed_tools(self) -> list[types.Tool]:
        return [tool for tool, _ in self._tools.values()]

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        if self._agent is None:
            return _error(f"Unknown tool: {params.name}")
        try:
            message = self._message_for(params)
            context = self.call_context(params.name)
        except MCPError as exc:
            return _error(exc.error.message)
        try:
            return await self._send(ctx, self._agent, message, context)
        except (A2AError, httpx.HTTPError) as exc:
            return _error(f"The agent could not be reached or refused the message: {exc or type(exc).__name__}")

    def _message_for(self, params: types.CallToolRequestParams) -> Message:
        """The A2A message a call of a skill tool sends; raises ``MCPError`` (INVALID_PARAMS)
        for an unknown tool or a missing ``message``."""
        entry = self._tools.get(params.name)
        if entry is None:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name}")
        arguments = params.arguments or {}
        text = arguments.get("message")
        if not isinstance(text, str) or not text:
            raise MCPError(types.INVALID_PARAMS, "missing required argument: message (what to ask the agent)")
        parts = [new_text_part(text)]
        if isinstance(arguments.get("data"), dict):
            parts.append(new_data_part(arguments["data"]))
        message = Message(
            message_id=uuid.uuid4().hex,
            role=Role.ROLE_USER,
            parts=parts,
            context_id=str(arguments.get("context_id") or ""),
            task_id=str(arguments.get("task_id") or ""),
        )
        if entry[1] is not None:
            message.metadata.update({"skill": entry[1]})
        return message

    async def _send(
        self, ctx: ServerRequestContext[Any], agent: A2AClient, message: Message, context: ClientCallContext | None
    ) -> types.CallToolResult:
        task: Task | None = None
        step = 0
        async for event in agent.send_message(SendMessageRequest(message=message), context=context):
            if event.WhichOneof("payload") == "message":
                return message_result(event.message)
            task = _merge(task, event)
            if event.WhichOneof("payload") == "status_update" and event.status_update.status.HasField("message"):
                said = " ".join(p.text for p in event.status_update.status.message.parts if p.text)
                step += 1
                await ctx.session.report_progress(step, None, said or None)
        if task is None:
            return _error("The agent ended the exchange without an answer")
        return task_result(task)
