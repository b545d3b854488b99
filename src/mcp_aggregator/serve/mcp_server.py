"""The MCP server LLM clients talk to (stdio or streamable HTTP), built on the SDK's server.

Each handler turns the SDK's request context into a ``Caller`` (the client's era,
capabilities and back-channel) and hands the request to the gateway's one call pipeline;
nothing here talks to an upstream session directly. Errors from the core become JSON-RPC
errors in ``error_mapping`` only.
"""

from __future__ import annotations

import logging
import secrets
import warnings
import weakref
from collections.abc import Callable
from typing import Any, TypeVar, cast, get_args

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.connection import Connection, allowed_log_levels
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp.shared.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, ToolsListChanged
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from mcp_aggregator import __version__
from mcp_aggregator.apps import relayed_extensions
from mcp_aggregator.errors import AggregatorError, ToolNotFoundError, UpstreamError
from mcp_aggregator.identity import DEFAULT_PROFILE, ClientIdentity
from mcp_aggregator.relay import Caller, ParkedCalls, current_caller, is_parked_state
from mcp_aggregator.relay.caller import Ask
from mcp_aggregator.relay.parked_calls import Forward
from mcp_aggregator.relay.task_relay import TaskRelay
from mcp_aggregator.serve.client_auth import identity_of
from mcp_aggregator.serve.error_mapping import to_mcp_error
from mcp_aggregator.serve.fast_call import log_level_shown
from mcp_aggregator.serve.listing_filter import ListingFilter
from mcp_aggregator.serve.profile_gateway import note_outside_call
from mcp_aggregator.serve.replica_forward import FORWARDED_HEADER, forward_call
from mcp_aggregator.serve.request_ids import request_id_of
from mcp_aggregator.serve.serve_gateway import ServeGateway
from mcp_aggregator.serve.task_face import TaskFace
from mcp_aggregator.serve.tool_surface import CallRequest, RefreshingSurface, ToolSurface, without_protocol_meta
from mcp_aggregator.sessions import SessionBook, SessionState
from mcp_aggregator.settings import Exposure
from mcp_aggregator.upstreams.wire_checks import check_encodable

logger = logging.getLogger(__name__)

_INSTRUCTIONS = {
    Exposure.PASSTHROUGH: (
        "mcp-aggregator federates several MCP servers; each tool is named <server>__<tool>. "
        "mcp__proxy__aggregator__query asks several servers one question at once."
    ),
    Exposure.FACADES: (
        "mcp-aggregator federates several MCP servers behind a few tools. To use an upstream "
        "tool: 'tools' {cmd: search}, then {cmd: get, detail: full} for its schema, then "
        "{cmd: execute}. 'servers' shows their state; per-server tools take the tool name as cmd."
    ),
    Exposure.SEARCH: (
        "mcp-aggregator federates several MCP servers. Find a tool with 'tools' {cmd: search}, "
        "read its schema with {cmd: get, detail: full}, run it with {cmd: execute}."
    ),
    Exposure.CODE: (
        "mcp-aggregator federates several MCP servers. Find tools and their Python signatures "
        "with 'tools' {cmd: search}; then write one short script for 'run_code' that calls them "
        "with `await call_tool(name, {...})` and returns only what you need."
    ),
}

_ANSWER_TYPES: dict[str, type[Any]] = {
    "sampling/createMessage": types.CreateMessageResult,
    "elicitation/create": types.ElicitResult,
    "roots/list": types.ListRootsResult,
}


_Listed = TypeVar(
    "_Listed",
    types.ListToolsResult,
    types.ListPromptsResult,
    types.ListResourcesResult,
    types.ListResourceTemplatesResult,
)

# The SDK's own list, most verbose first.
_LOG_LEVELS: tuple[types.LoggingLevel, ...] = get_args(types.LoggingLevel)


def _header(ctx: ServerRequestContext[Any], name: str) -> str | None:
    """An HTTP header of the request (None over stdio, or when it is missing)."""
    headers = getattr(ctx.request, "headers", None)
    value = headers.get(name) if headers is not None else None
    return value if isinstance(value, str) else None


def _for_handshake_era(request: types.InputRequest) -> types.InputRequest:
    """A 2026-07-28 embedded request made valid for a 2025-11-25 client.

    URL elicitations embedded in ``InputRequiredResult`` carry no ``elicitationId``; the
    older era requires one (it correlates ``notifications/elicitation/complete``).
    """
    params = request.params
    if isinstance(params, types.ElicitRequestURLParams) and params.elicitation_id is None:
        params = params.model_copy(update={"elicitation_id": secrets.token_urlsafe(12)})
        return types.ElicitRequest(params=params)
    return request


class GatewayServer:
    """Adapts the gateway and a ``ToolSurface`` to the SDK's low-level ``Server``."""

    def __init__(
        self,
        gateway: ServeGateway,
        surface: ToolSurface,
        *,
        name: str = "mcp-aggregator",
        profile: str = DEFAULT_PROFILE,
        exposure: Exposure | None = None,
    ) -> None:
        """``exposure`` is the one ``surface`` was built for (its instructions); default ``serve.exposure``."""
        self.gateway = gateway
        self.surface = surface
        self.profile = profile
        self._anonymous = ClientIdentity(profile=profile)
        """Who calls when the transport names nobody (stdio, or an open HTTP endpoint)."""
        self.listing = ListingFilter(gateway)
        self.bus = InMemorySubscriptionBus()
        self.parked = ParkedCalls(ttl_secs=gateway.settings.serve.input_wait_secs)
        self._legacy_connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._legacy_sessions: weakref.WeakValueDictionary[str, Connection] = weakref.WeakValueDictionary()
        """Handshake-era connections over streamable HTTP, by session id (for the fast path)."""
        self._subscribers: dict[str, weakref.WeakSet[Connection]] = {}
        self._log_levels: weakref.WeakKeyDictionary[Connection, types.LoggingLevel] = weakref.WeakKeyDictionary()
        self._changed = anyio.Event()
        self.sessions: SessionBook | None = None
        """Where a sealed session's log level and subscriptions are recorded (HTTP with sealed
        session ids; None: they live in this process only)."""
        with warnings.catch_warnings():
            # logging/setLevel is deprecated at 2026-07-28 but 2025-11-25 clients still send it.
            warnings.simplefilter("ignore", MCPDeprecationWarning)
            self.server: Server[Any] = Server(
                name,
                version=__version__,
                instructions=_INSTRUCTIONS[exposure or gateway.settings.serve.exposure],
                on_list_tools=self._list_tools,
                on_call_tool=self._call_tool,
                on_list_resources=self._list_resources,
                on_list_resource_templates=self._list_templates,
                on_read_resource=self._read_resource,
                on_subscribe_resource=self._subscribe,
                on_unsubscribe_resource=self._unsubscribe,
                on_list_prompts=self._list_prompts,
                on_get_prompt=self._get_prompt,
                on_completion=self._complete,
                on_set_logging_level=self._set_level,
                on_subscriptions_listen=ListenHandler(self.bus),
            )
        self.tasks: TaskFace | None = None
        """2025-11-25 tasks, relayed where tools keep their upstream names (passthrough)."""
        if (exposure or gateway.settings.serve.exposure) is Exposure.PASSTHROUGH:
            self.tasks = TaskFace(
                TaskRelay(gateway.pipeline, gateway),
                caller_of=self._caller,
                meta_of=self._log_meta,
                canonical_of=self._canonical,
            )
            self.tasks.install(self.server)
        self._declare_extensions()
        self._unsubscribe_changes: Callable[[], None] = gateway.on_change(self._on_change)
        self._unsubscribe_updates: Callable[[], None] = gateway.on_resource_updated(self.resource_updated)

    def _on_change(self) -> None:
        self._declare_extensions()
        self.tools_changed()

    def _declare_extensions(self) -> None:
        """Declare the extensions the exposed upstreams declare and the gateway relays (MCP
        Apps), as each ``initialize`` or ``server/discover`` answer reads them from then on."""
        capabilities = []
        for server in self.gateway.exposed_servers():
            try:
                capabilities.append(self.gateway.connection(server).capabilities)
            except AggregatorError:
                continue  # gone between the two reads: the next change declares again
        self.server.extensions = relayed_extensions(capabilities)

    # -- lifecycle ------------------------------------------------------------------------

    async def run(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """The server's background work: parked calls and change notifications."""
        async with anyio.create_task_group() as tg:
            await tg.start(self.parked.run)
            await tg.start(self.run_notifier)
            if isinstance(self.surface, RefreshingSurface):
                await tg.start(self.surface.run, self.tools_changed)
            task_status.started()

    def tools_changed(self) -> None:
        """Tell the connected clients to list again (the notifier sends the notifications)."""
        self._changed.set()

    async def run_notifier(self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Tell connected clients when tools, prompts or resources changed (both protocol eras)."""
        task_status.started()
        try:
            while True:
                await self._changed.wait()
                self._changed = anyio.Event()
                for event in (ToolsListChanged(), PromptsListChanged(), ResourcesListChanged()):
                    await self.bus.publish(event)
                for connection in list(self._legacy_connections):
                    try:
                        await connection.send_tool_list_changed()
                        await connection.send_prompt_list_changed()
                        await connection.send_resource_list_changed()
                    except (anyio.ClosedResourceError, anyio.BrokenResourceError, MCPError):
                        self._legacy_connections.discard(connection)
        finally:
            self._unsubscribe_changes()
            self._unsubscribe_updates()

    async def resource_updated(self, server: str, uri: str) -> None:
        """An upstream's resource changed: tell the clients subscribed to it (as they named it)."""
        shown = self.gateway.features.shown_uri(server, uri)
        await self.bus.publish(ResourceUpdated(uri=shown))
        for connection in list(self._subscribers.get(shown, ())):
            try:
                await connection.send_resource_updated(shown)
            except (anyio.ClosedResourceError, anyio.BrokenResourceError, MCPError):
                self._subscribers[shown].discard(connection)

    async def restore_session(self, connection: Connection, state: SessionState) -> None:
        """A sealed session resumed here: serve it as if it had always been (``SessionHost``).

        Its subscriptions are made again upstream (this replica's upstream sessions never
        had them) and its log level applied; an upstream refusing either is logged, not
        raised: the session's other requests must go on.
        """
        self._legacy_connections.add(connection)
        if connection.session_id is not None:
            self._legacy_sessions[connection.session_id] = connection
        if state.subscriptions:
            # A replica just started may still be connecting the upstreams that serve them.
            await self.gateway.wait_settled(self.gateway.settings.serve.list_wait_secs)
        for uri in state.subscriptions:
            self._subscribers.setdefault(uri, weakref.WeakSet()).add(connection)
            try:
                await self.gateway.pipeline.subscribe(uri, subscribed=True)
            except AggregatorError as exc:
                logger.info("resumed session: resources/subscribe %s failed: %s", uri, exc)
        level = state.log_level
        if level in _LOG_LEVELS:
            self._log_levels[connection] = level
            await self._forward_level(level)

    async def _record_session(self, connection: Connection | None, **changes: Any) -> None:
        if self.sessions is not None and connection is not None and connection.session_id is not None:
            await self.sessions.record(connection.session_id, **changes)

    def _subscriptions_of(self, connection: Connection) -> list[str]:
        return sorted(uri for uri, connections in self._subscribers.items() if connection in connections)

    # -- who is calling -------------------------------------------------------------------

    def _remember(self, ctx: ServerRequestContext[Any]) -> Connection | None:
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return None
        # Handlers get a per-request ServerSession; notifications must go to the connection
        # it wraps, which lives as long as the client stays connected.
        connection = getattr(ctx.session, "_connection", None)
        if isinstance(connection, Connection):
            self._legacy_connections.add(connection)
            if connection.session_id is not None:
                self._legacy_sessions[connection.session_id] = connection
            return connection
        return None

    def handshake_session(self, session_id: str) -> tuple[Connection, types.LoggingLevel | None] | None:
        """A handshake-era HTTP session this server has served a request of (its connection
        is known from then on), with the log level its client set (None: none)."""
        connection = self._legacy_sessions.get(session_id)
        if connection is None:
            return None
        return connection, self._log_levels.get(connection)

    def _caller(self, ctx: ServerRequestContext[Any], *, ask: Ask | None = None) -> Caller:
        modern = ctx.protocol_version in MODERN_PROTOCOL_VERSIONS
        levels = allowed_log_levels(ctx.protocol_version, self._log_meta(ctx))
        related = ServerMessageMetadata(related_request_id=ctx.request_id)

        async def ask_client(request: types.InputRequest) -> types.InputResponse | types.ErrorData:
            request = _for_handshake_era(request)
            try:
                answer: types.InputResponse = await ctx.session.send_request(
                    request, _ANSWER_TYPES[request.method], metadata=related
                )
            except MCPError as exc:
                return exc.error
            return answer

        async def log(params: types.LoggingMessageNotificationParams) -> None:
            # A handshake-era client's own level, read as the message comes (it may change
            # mid-call): its upstreams log at the most verbose level any client asked for.
            shown = params.level in levels if modern else log_level_shown(params.level, self._level_of(ctx))
            if shown:
                notification = types.LoggingMessageNotification(params=params)
                await ctx.session.send_notification(notification, related_request_id=ctx.request_id)

        async def progress(done: float, total: float | None, message: str | None) -> None:
            await ctx.session.report_progress(done, total, message)

        return Caller(
            capabilities=ctx.session.client_capabilities,
            ask=ask if modern else ask_client,
            log=log,
            progress=progress,
            relay_input_required=modern,
            meta=ctx.meta,
            request_id=ctx.request_id,
            http_request_id=request_id_of(getattr(ctx.request, "scope", None)),
            session_id=_header(ctx, "mcp-session-id"),
            traceparent=_header(ctx, "traceparent"),
            identity=self.identity(ctx),
        )

    def identity(self, ctx: ServerRequestContext[Any]) -> ClientIdentity:
        """The client the HTTP face admitted for this request; on stdio, this server's profile."""
        request = ctx.request
        scope = getattr(request, "scope", None)
        found = identity_of(scope) if isinstance(scope, dict) else None
        return found or self._anonymous

    def _level_of(self, ctx: ServerRequestContext[Any]) -> types.LoggingLevel | None:
        """The level a handshake-era client set with ``logging/setLevel`` (None: none yet)."""
        connection = getattr(ctx.session, "_connection", None)
        return self._log_levels.get(connection) if isinstance(connection, Connection) else None

    def _log_meta(self, ctx: ServerRequestContext[Any]) -> types.RequestParamsMeta | None:
        """The request's ``_meta`` with its client's log level made a 2026-07-28 opt-in.

        A 2026-07-28 upstream logs only for requests that opt in; a 2025-11-25 client never
        does (it used ``logging/setLevel``, or nothing: every level). So its level, or
        ``debug``, is stamped on its requests; ``upstream_meta`` passes it to modern upstreams only.
        """
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return ctx.meta
        connection = getattr(ctx.session, "_connection", None)
        level = self._log_levels.get(connection, "debug") if isinstance(connection, Connection) else "debug"
        return cast(types.RequestParamsMeta, {**(ctx.meta or {}), types.LOG_LEVEL_META_KEY: level})

    # -- lists: SEP-2549 hints -------------------------------------------------------------

    def _with_cache_hint(self, ctx: ServerRequestContext[Any], result: _Listed) -> _Listed:
        """A list for a 2026-07-28 client, with how long it may keep it and who may share it.

        ``private`` when what is listed depends on who asks: a profile's endpoint, or policy
        rules that hide tools per client. The gateway's ``list_changed`` (on
        ``subscriptions/listen``) evicts it before ``ttlMs`` when the catalogue changes, a
        tool held by its pin included.
        """
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            return result
        per_client = self.profile != DEFAULT_PROFILE or self.listing.stage is not None
        ttl_ms = int(self.gateway.settings.serve.list_ttl_secs * 1000)
        return result.model_copy(update={"ttl_ms": ttl_ms, "cache_scope": "private" if per_client else "public"})

    # -- tools ----------------------------------------------------------------------------

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        self._remember(ctx)
        # A client usually lists tools once at start: give upstreams that are still
        # connecting a bounded chance to appear, instead of answering with a partial list
        # (none in a large start, where the whole list is a minute away: see list_wait_secs).
        await self.gateway.wait_settled(self.gateway.list_wait_secs())
        result = types.ListToolsResult(tools=self.listing.visible(self.surface.list_tools(), self.identity(ctx)))
        return self._with_cache_hint(ctx, result)

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        self._remember(ctx)
        try:
            check_encodable(params.arguments, "arguments")
            handler = self.surface.handler(params.name)
            if handler is None:
                # A client may call a tool it knows from an earlier session without listing
                # first (or list one gateway and call through another): give upstreams still
                # making their first connection the same bounded chance as tools/list.
                await self.gateway.wait_settled(self.gateway.settings.serve.list_wait_secs)
                handler = self.surface.handler(params.name)
            if handler is None:
                note_outside_call(self.gateway, params.name, self._caller(ctx), params.arguments)
                raise ToolNotFoundError(params.name)
            arguments = dict(params.arguments or {})
            if is_parked_state(params.request_state):
                result: types.CallToolResult | types.InputRequiredResult = await self.parked.resume(
                    params.request_state or "", params.input_responses, forward=self._forwarder(ctx, params)
                )
                return result

            async def run(ask: Ask | None) -> types.CallToolResult | types.InputRequiredResult:
                caller = self._caller(ctx, ask=ask)
                token = current_caller.set(caller)
                try:
                    return await handler(
                        arguments,
                        CallRequest(caller, self._log_meta(ctx), params.input_responses, params.request_state),
                    )
                finally:
                    current_caller.reset(token)

            if self._parks(ctx):
                # The call may ask the client back mid-way; a modern client can only take
                # that as an InputRequiredResult, so the call runs on where it can wait.
                result = await self.parked.start(lambda call: run(call.ask))
                return result
            return await run(None)
        except AggregatorError as exc:
            if isinstance(exc, UpstreamError):
                # Given: a handshake-era session's handler runs outside the request's context.
                request_id = request_id_of(getattr(ctx.request, "scope", None))
                logger.warning("tools/call %s failed: %s", params.name, exc, extra={"request_id": request_id})
            raise to_mcp_error(exc) from exc

    def _forwarder(self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> Forward | None:
        """How this retry reaches the replica its call waits on: over HTTP, unless it was
        itself forwarded (None: it is answered here, or refused)."""
        scope = getattr(ctx.request, "scope", None)
        headers = getattr(ctx.request, "headers", None)
        if not isinstance(scope, dict) or headers is None or FORWARDED_HEADER in headers:
            return None
        path = f"{scope.get('root_path', '')}{scope['path']}"
        wait = self.gateway.settings.serve.input_wait_secs

        async def forward(home: str) -> types.CallToolResult | types.InputRequiredResult | None:
            return await forward_call(home, path, dict(headers), params, timeout_secs=wait)

        return forward

    async def _canonical(self, name: str) -> str | None:
        """The canonical name of a tool this server serves as ``name`` (None: none), with the
        same bounded wait for upstreams still connecting as ``tools/call``."""
        found = self._served_as(name)
        if found is None:
            await self.gateway.wait_settled(self.gateway.settings.serve.list_wait_secs)
            found = self._served_as(name)
        return found

    def _served_as(self, name: str) -> str | None:
        entry = self.gateway.catalog.get(name)
        if entry is not None:
            return entry.canonical
        return name if self.surface.handler(name) is not None else None

    def _parks(self, ctx: ServerRequestContext[Any]) -> bool:
        if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS or not self.parked.running:
            return False
        caps = ctx.session.client_capabilities
        return caps is not None and (caps.sampling or caps.elicitation or caps.roots) is not None

    # -- resources ------------------------------------------------------------------------

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        self._remember(ctx)
        await self.gateway.wait_settled(self.gateway.list_wait_secs())
        return self._with_cache_hint(ctx, types.ListResourcesResult(resources=list(self.gateway.features.resources)))

    async def _list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        self._remember(ctx)
        await self.gateway.wait_settled(self.gateway.list_wait_secs())
        templates = types.ListResourceTemplatesResult(resource_templates=list(self.gateway.features.templates))
        return self._with_cache_hint(ctx, templates)

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        self._remember(ctx)
        try:
            result: types.ReadResourceResult | types.InputRequiredResult = await self.gateway.pipeline.read_resource(
                str(params.uri),
                caller=self._caller(ctx),
                meta=self._log_meta(ctx),
                input_responses=params.input_responses,
                request_state=params.request_state,
            )
        except AggregatorError as exc:
            raise to_mcp_error(exc) from exc
        return without_protocol_meta(result) if isinstance(result, types.ReadResourceResult) else result

    async def _subscribe(
        self, ctx: ServerRequestContext[Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        connection = self._remember(ctx)
        uri = str(params.uri)
        await self._forward_subscription(uri, subscribe=True)
        if connection is not None:
            self._subscribers.setdefault(uri, weakref.WeakSet()).add(connection)
            await self._record_session(connection, subscriptions=self._subscriptions_of(connection))
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        connection = self._remember(ctx)
        uri = str(params.uri)
        subscribers = self._subscribers.get(uri)
        if subscribers is not None and connection is not None:
            subscribers.discard(connection)
        if not subscribers:
            self._subscribers.pop(uri, None)
            await self._forward_subscription(uri, subscribe=False)
        if connection is not None:
            await self._record_session(connection, subscriptions=self._subscriptions_of(connection))
        return types.EmptyResult()

    async def _forward_subscription(self, uri: str, *, subscribe: bool) -> None:
        try:
            await self.gateway.pipeline.subscribe(uri, subscribed=subscribe)
        except AggregatorError as exc:
            raise to_mcp_error(exc) from exc

    # -- prompts, completion, logging -----------------------------------------------------

    async def _list_prompts(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListPromptsResult:
        self._remember(ctx)
        await self.gateway.wait_settled(self.gateway.list_wait_secs())
        return self._with_cache_hint(ctx, types.ListPromptsResult(prompts=list(self.gateway.features.prompts)))

    async def _get_prompt(
        self, ctx: ServerRequestContext[Any], params: types.GetPromptRequestParams
    ) -> types.GetPromptResult | types.InputRequiredResult:
        self._remember(ctx)
        try:
            check_encodable(params.arguments, "arguments")
            result: types.GetPromptResult | types.InputRequiredResult = await self.gateway.pipeline.get_prompt(
                params.name,
                params.arguments,
                caller=self._caller(ctx),
                meta=self._log_meta(ctx),
                input_responses=params.input_responses,
                request_state=params.request_state,
            )
        except AggregatorError as exc:
            raise to_mcp_error(exc) from exc
        return without_protocol_meta(result) if isinstance(result, types.GetPromptResult) else result

    async def _complete(
        self, ctx: ServerRequestContext[Any], params: types.CompleteRequestParams
    ) -> types.CompleteResult:
        try:
            return without_protocol_meta(await self.gateway.pipeline.complete(params, caller=self._caller(ctx)))
        except AggregatorError as exc:
            raise to_mcp_error(exc) from exc

    async def _set_level(
        self, ctx: ServerRequestContext[Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        """The client's own level filters what it is sent; 2025-11-25 upstreams that log get the
        most verbose level any connected client asked for, so one client's ``error`` never
        silences another's ``info``. One upstream that refuses does not fail the others."""
        connection = self._remember(ctx)
        if connection is not None:
            self._log_levels[connection] = params.level
            await self._record_session(connection, log_level=params.level)
        await self._forward_level(params.level)
        return types.EmptyResult()

    async def _forward_level(self, level: types.LoggingLevel) -> None:
        wanted = min(self._log_levels.values(), key=_LOG_LEVELS.index, default=level)
        request = types.SetLevelRequest(params=types.SetLevelRequestParams(level=wanted))
        for server in self.gateway.servers_with("logging"):
            if self.gateway.connection(server).modern:
                continue  # no logging/setLevel at 2026-07-28: the level rides each request

            try:
                await self.gateway.pipeline.forward(server, request, types.EmptyResult, what=level)
            except AggregatorError as exc:
                logger.info("logging/setLevel on %s failed: %s", server, exc)
