"""One upstream MCP session, opened, used and closed by the single task that owns it.

The SDK's sessions must be closed by the task that opened them (python-sdk #922,
#1156), so ``run`` holds the ``Client`` for its whole life and everyone else only
sends requests over it. A call never waits on a dead session: the SDK fails
in-flight requests with ``CONNECTION_CLOSED`` as soon as the transport ends, and we
map that to ``UpstreamClosedError`` and stop the owner task.
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import math
import os
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from enum import StrEnum
from typing import Any, Final, NoReturn, Protocol, TypeVar

import anyio
import mcp_types as types
from anyio.abc import TaskStatus
from mcp import Client
from mcp.client.caching import CacheConfig
from mcp.client.session import ClientRequestContext
from mcp.client.subscriptions import PromptsListChanged, ResourcesListChanged, ResourceUpdated, SubscriptionLost
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import TypeAdapter

from mcp_aggregator import __version__
from mcp_aggregator.apps import upstream_extensions
from mcp_aggregator.bridges import RawAnswer
from mcp_aggregator.credentials.upstream_bearer import UpstreamBearer
from mcp_aggregator.errors import (
    BridgeError,
    EnvVarError,
    SandboxError,
    SignInRequiredError,
    UpstreamCallError,
    UpstreamClosedError,
    UpstreamConnectError,
    UpstreamError,
    UpstreamTimeoutError,
)
from mcp_aggregator.sandbox.sandbox_policy import SandboxSite
from mcp_aggregator.settings import ServerConfig, Transport
from mcp_aggregator.upstreams.caller_capabilities import narrowing_stamp
from mcp_aggregator.upstreams.era_choice import (
    INVALID_RESULT,
    Era,
    SideState,
    era_of,
    merge_listings,
    wants_side_session,
)
from mcp_aggregator.upstreams.http_raw import HttpRaw
from mcp_aggregator.upstreams.inflight_calls import Abortable, InflightCalls
from mcp_aggregator.upstreams.listing import list_all_tools, list_features
from mcp_aggregator.upstreams.raw_call import AwaitedRawCall, RawCall, RawSettle
from mcp_aggregator.upstreams.raw_stamp import RawStamps
from mcp_aggregator.upstreams.side_session import SideSession
from mcp_aggregator.upstreams.stdio_pipe import LogSink, StdioPipe
from mcp_aggregator.upstreams.transport_target import enter_target
from mcp_aggregator.upstreams.wire_checks import check_encodable, closed_by_transport, describe_error, upstream_meta

logger = logging.getLogger(__name__)

CLIENT_INFO: Final = types.Implementation(name="mcp-aggregator", version=__version__)
"""Who the gateway says it is to its upstreams (their logs name the caller by it)."""


_TRANSPORT_ERRORS = (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)
ProgressRelay = Callable[[float, float | None, str | None], Awaitable[None]]


ToolsChanged = Callable[["UpstreamConnection"], None]
ResultT = TypeVar("ResultT")


class Backchannel(Protocol):
    """Where an upstream's own requests and notifications go (the relay implements it).

    ``tags`` are the callers of this connection's in-flight requests, oldest first: a
    request or notification that carries no correlation belongs to one of them.
    """

    async def server_request(
        self, connection: UpstreamConnection, request: types.InputRequest
    ) -> types.InputResponse | types.ErrorData: ...

    async def notification(self, connection: UpstreamConnection, notification: types.ServerNotification) -> None: ...


class ConnectionState(StrEnum):
    NEW = "new"
    CONNECTING = "connecting"
    READY = "ready"
    CLOSED = "closed"


class UpstreamConnection:
    """A long-lived session to one upstream server; single use (``run`` once)."""

    def __init__(
        self,
        config: ServerConfig,
        *,
        env: Mapping[str, str] | None = None,
        on_tools_changed: ToolsChanged | None = None,
        on_activity: Callable[[], None] = lambda: None,
        backchannel: Backchannel | None = None,
        max_result_bytes: int = 64 << 20,
        auth: UpstreamBearer | None = None,
        sandbox: SandboxSite | None = None,
    ) -> None:
        self.config = config
        self.sandbox = sandbox
        self.auth = auth
        self.name = config.name
        self.max_result_bytes = max_result_bytes
        self.pipe: StdioPipe | None = None
        self.http_raw: HttpRaw | None = None
        self.bridge_raw: RawAnswer | None = None
        """A bridge's own answer to raw calls (``bridges``): no SDK client and server between."""
        """The stdio pipe, which raw fast-path calls share with the SDK session (None for HTTP/SSE)."""
        self.state = ConnectionState.NEW
        self.tools: tuple[types.Tool, ...] = ()
        self.prompts: tuple[types.Prompt, ...] = ()
        self.resources: tuple[types.Resource, ...] = ()
        self.templates: tuple[types.ResourceTemplate, ...] = ()
        self.backchannel = backchannel
        self.protocol_version: str | None = None
        self.close_reason: str | None = None
        # Kept as given, not copied: the gateway's environment also opens ``${sealed:...}``.
        self._env: Mapping[str, str] = dict(os.environ) if env is None else env
        self._on_tools_changed = on_tools_changed
        self._on_activity = on_activity
        self._client: Client | None = None
        self._stop = anyio.Event()
        self._closed = anyio.Event()
        self._refresh = anyio.Event()
        self._calls = InflightCalls(on_activity)
        self._raw_ids = itertools.count(1)
        self._stamps = RawStamps()
        self._refresh_features = anyio.Event()
        self._watched: set[str] = set()
        self._relisten = anyio.Event()
        self.side: SideSession | None = None
        """The 2025-11-25 session beside a 2026-07-28 one (see ``era_choice``)."""
        self._round_trip_tools: set[str] = set()
        """Tools the side session refused because they answer the multi-round-trip way."""

    @property
    def pending_requests(self) -> int:
        return len(self._calls)

    @property
    def modern(self) -> bool:
        """Whether this session speaks 2026-07-28 (no handshake, per-request envelope)."""
        return self.protocol_version in MODERN_PROTOCOL_VERSIONS

    def inflight_tags(self) -> list[object]:
        """The tags (callers) of in-flight requests, oldest first."""
        return self._calls.tags()

    @property
    def capabilities(self) -> types.ServerCapabilities | None:
        return self._client.server_capabilities if self._client else None

    @property
    def era(self) -> Era:
        """The era spoken to this upstream, why, and the side session's state."""
        side = self.side
        return era_of(
            self.protocol_version,
            mode=self.config.protocol,
            side=side.state if side is not None else SideState.NONE,
            side_error=side.error if side is not None else None,
            capabilities=self.capabilities,
            url_checked=self.config.health_check_url is not None,
        )

    @property
    def supports_list_changed(self) -> bool:
        caps = self._client.server_capabilities if self._client else None
        return bool(caps and caps.tools and caps.tools.list_changed)

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        """Connect, report readiness, then serve until ``close`` or the session dies.

        Raises ``UpstreamConnectError``/``EnvVarError`` only before readiness is reported;
        afterwards it always returns normally so one upstream can never take the gateway down.
        """
        if self.state is not ConnectionState.NEW:
            raise RuntimeError(f"connection to {self.name} cannot be run twice")
        self.state = ConnectionState.CONNECTING
        started = False
        # The deadline scope encloses the exit stack: a timeout scope opened inside it would
        # be exited while the client's task group is still open, which anyio refuses.
        deadline = anyio.CancelScope(deadline=anyio.current_time() + self.config.connect_timeout_secs)
        try:
            with deadline:
                async with AsyncExitStack() as stack:
                    client = await self._connect(stack)
                    deadline.deadline = math.inf
                    self._client = client
                    self.state = ConnectionState.READY
                    started = True
                    task_status.started()
                    await self._serve(client)
        except (EnvVarError, UpstreamConnectError, SignInRequiredError):
            raise
        except Exception as exc:  # boundary: closing a broken transport may raise anything
            if not started:
                raise UpstreamConnectError(self.name, describe_error(exc)) from exc
            logger.warning("upstream %s closed with an error: %s", self.name, describe_error(exc))
        finally:
            self._client = None
            self.state = ConnectionState.CLOSED
            self._closed.set()
        if not started:
            raise UpstreamConnectError(self.name, f"connect timeout after {self.config.connect_timeout_secs:g}s")

    async def _connect(self, stack: AsyncExitStack) -> Client:
        try:
            target = await enter_target(
                stack,
                self.config,
                self._env,
                max_message_bytes=self.max_result_bytes,
                auth=self.auth,
                sandbox=self.sandbox,
            )
            self.pipe = target.pipe
            self.bridge_raw = target.bridge_raw
            client = Client(
                target.client_target,
                mode=target.mode or self.config.protocol,
                # SEP-2549: a 2026-07-28 upstream's list marked fresh (``ttlMs``) is not asked
                # for again until it goes stale or its ``list_changed`` evicts it.
                cache=CacheConfig(),
                client_info=CLIENT_INFO,
                extensions=upstream_extensions(),
                message_handler=self._on_message,
                sampling_callback=self._on_sampling,
                elicitation_callback=self._on_elicitation,
                list_roots_callback=self._on_list_roots,
                logging_callback=self._on_log,
            )
            client = await stack.enter_async_context(client)
            self.protocol_version = client.protocol_version
            # The SDK stamps the session's capabilities on every request; each must say its caller's.
            client.session._stamp = narrowing_stamp(client.session._stamp)
            # Raw calls carry fixed headers; an OAuth upstream's bearer changes, so its calls take the SDK's way.
            if self.config.transport is Transport.HTTP and self.modern and self.config.base_url and self.auth is None:
                # Stateless era: a raw call is a plain POST, pooled beside the SDK's client.
                raw = HttpRaw(
                    self.config.base_url, target.headers, name=self.name, max_message_bytes=self.max_result_bytes
                )
                stack.push_async_callback(raw.aclose)
                self.http_raw = raw
            if wants_side_session(
                self.protocol_version, transport=self.config.transport.value, mode=self.config.protocol
            ):
                self.side = SideSession(
                    self.name,
                    self._open_side,
                    connect_timeout_secs=self.config.connect_timeout_secs,
                    describe=describe_error,
                )
            async with anyio.create_task_group() as tg:
                tg.start_soon(self._discover_tools, client)
                tg.start_soon(self._discover_features, client)
            return client
        except (EnvVarError, SignInRequiredError, SandboxError, BridgeError):
            raise
        except Exception as exc:  # boundary: transports raise OS, HTTP, protocol and group errors
            text = describe_error(exc)
            if text == "connection closed":
                text = "connection closed during the handshake (did the server exit?)"
            raise UpstreamConnectError(self.name, text) from exc

    async def _open_side(self, stack: AsyncExitStack) -> Client:
        """The side session's client: a second transport to the same upstream, at 2025-11-25."""
        target = await enter_target(
            stack, self.config, self._env, max_message_bytes=self.max_result_bytes, sandbox=self.sandbox
        )
        client = Client(
            target.client_target,
            mode="legacy",
            cache=None,
            client_info=CLIENT_INFO,
            extensions=upstream_extensions(),
            message_handler=self._on_message,
            sampling_callback=self._on_sampling,
            elicitation_callback=self._on_elicitation,
            list_roots_callback=self._on_list_roots,
            logging_callback=self._on_log,
        )
        return await stack.enter_async_context(client)

    async def _discover_tools(self, client: Client) -> None:
        self.tools = await list_all_tools(client)

    async def _discover_features(self, client: Client) -> None:
        self.prompts, self.resources, self.templates = await list_features(self.name, client)

    async def _serve(self, client: Client) -> None:
        async with anyio.create_task_group() as tg:
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                caps = client.server_capabilities
                wants = {
                    "tools": bool(caps.tools and caps.tools.list_changed),
                    "prompts": bool(caps.prompts and caps.prompts.list_changed),
                    "resources": bool(caps.resources and caps.resources.list_changed),
                }
                tg.start_soon(self._listen_loop, client, wants)
            tg.start_soon(self._refresh_loop, client)
            tg.start_soon(self._feature_refresh_loop, client)
            if self.side is not None:
                tg.start_soon(self.side.run)
            await self._stop.wait()
            tg.cancel_scope.cancel()

    async def _listen_loop(self, client: Client, wants: dict[str, bool]) -> None:
        """One ``subscriptions/listen`` stream at a time, reopened when the watched URIs change."""
        while True:
            relisten = self._relisten = anyio.Event()
            uris = tuple(sorted(self._watched))
            if any(wants.values()) or uris:
                async with anyio.create_task_group() as tg:
                    tg.start_soon(self._listen_for_changes, client, wants, uris)
                    await relisten.wait()
                    tg.cancel_scope.cancel()
            else:
                await relisten.wait()

    async def set_subscription(self, uri: str, *, subscribed: bool, tag: object = None) -> None:
        """Watch (or stop watching) a resource upstream, the way this session's era does it.

        2025-11-25: ``resources/subscribe`` / ``unsubscribe``. 2026-07-28 has neither: the
        URI joins the ``subscriptions/listen`` stream, which is reopened with the new set.
        """
        if not self.modern:
            request: types.SubscribeRequest | types.UnsubscribeRequest
            if subscribed:
                request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
            else:
                request = types.UnsubscribeRequest(params=types.UnsubscribeRequestParams(uri=uri))
            await self.send(request, types.EmptyResult, tag=tag)
            return
        self._require_client()
        before = set(self._watched)
        if subscribed:
            self._watched.add(uri)
        else:
            self._watched.discard(uri)
        if self._watched != before:
            self._relisten.set()

    async def _listen_for_changes(self, client: Client, wants: dict[str, bool], uris: tuple[str, ...]) -> None:
        try:
            listen = client.listen(
                tools_list_changed=wants["tools"],
                prompts_list_changed=wants["prompts"],
                resources_list_changed=wants["resources"],
                resource_subscriptions=uris,
            )
            async with listen as subscription:
                async for event in subscription:
                    if isinstance(event, PromptsListChanged | ResourcesListChanged):
                        self._refresh_features.set()
                    elif isinstance(event, ResourceUpdated):
                        await self._forward_notification(
                            types.ResourceUpdatedNotification(
                                params=types.ResourceUpdatedNotificationParams(uri=event.uri)
                            )
                        )
                    else:
                        self._refresh.set()
        except (MCPError, SubscriptionLost, *_TRANSPORT_ERRORS) as exc:
            logger.info("upstream %s: change subscription ended: %s", self.name, describe_error(exc))

    async def _feature_refresh_loop(self, client: Client) -> None:
        while True:
            await self._refresh_features.wait()
            self._refresh_features = anyio.Event()
            try:
                await self._discover_features(client)
            except _TRANSPORT_ERRORS as exc:
                logger.warning("upstream %s: re-listing prompts/resources failed: %s", self.name, describe_error(exc))
                continue
            if self._on_tools_changed is not None:
                self._on_tools_changed(self)

    async def _refresh_loop(self, client: Client) -> None:
        while True:
            await self._refresh.wait()
            self._refresh = anyio.Event()
            try:
                self.tools = await self._list_tools_everywhere(client)
            except (MCPError, *_TRANSPORT_ERRORS) as exc:
                logger.warning("upstream %s: re-discovery failed: %s", self.name, describe_error(exc))
                continue
            if self._on_tools_changed is not None:
                self._on_tools_changed(self)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._refresh.set()
        elif isinstance(message, types.PromptListChangedNotification | types.ResourceListChangedNotification):
            self._refresh_features.set()
        elif isinstance(message, types.ResourceUpdatedNotification):
            await self._forward_notification(message)

    async def _forward_notification(self, notification: types.ServerNotification) -> None:
        if self.backchannel is not None:
            await self.backchannel.notification(self, notification)

    async def _ask_back(self, request: types.InputRequest) -> types.InputResponse | types.ErrorData:
        if self.backchannel is None:
            return types.ErrorData(code=types.INVALID_REQUEST, message=f"{request.method} not supported")
        return await self.backchannel.server_request(self, request)

    async def _on_sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.CreateMessageResultWithTools | types.ErrorData:
        answer = await self._ask_back(types.CreateMessageRequest(params=params))
        if isinstance(answer, types.ErrorData | types.CreateMessageResult | types.CreateMessageResultWithTools):
            return answer
        return types.ErrorData(code=types.INTERNAL_ERROR, message="the client answered sampling with another result")

    async def _on_elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        answer = await self._ask_back(types.ElicitRequest(params=params))
        if isinstance(answer, types.ErrorData | types.ElicitResult):
            return answer
        return types.ErrorData(code=types.INTERNAL_ERROR, message="the client answered elicitation with another result")

    async def _on_list_roots(self, context: ClientRequestContext) -> types.ListRootsResult | types.ErrorData:
        answer = await self._ask_back(types.ListRootsRequest())
        if isinstance(answer, types.ErrorData | types.ListRootsResult):
            return answer
        return types.ErrorData(code=types.INTERNAL_ERROR, message="the client answered roots/list with another result")

    async def _on_log(self, params: types.LoggingMessageNotificationParams) -> None:
        await self._forward_notification(types.LoggingMessageNotification(params=params))

    async def _list_tools_everywhere(self, client: Client) -> tuple[types.Tool, ...]:
        """The main session's tools, merged with the side session's when it is open."""
        tools = await list_all_tools(client)
        side = self.side.client if self.side is not None else None
        if side is None:
            return tools
        try:
            return merge_listings(tools, await list_all_tools(side))
        except (MCPError, *_TRANSPORT_ERRORS) as exc:
            assert self.side is not None
            self.side.fail(describe_error(exc))
            return tools

    async def relist(self, timeout_secs: float = 5.0) -> bool:
        """List tools (every page, both sessions), prompts and resources again, as a change
        announcement would; report a difference like one. Returns whether anything changed.

        Never relying on announcements alone: an upstream may change without announcing, or
        announce in a way the era spoken drops. Raises ``UpstreamError``s.
        """
        before = (self.tools, self.prompts, self.resources, self.templates)

        async def listing(client: Client) -> tuple[types.Tool, ...]:
            version = self.protocol_version
            try:
                async with anyio.create_task_group() as tg:
                    if self.modern and version is not None:
                        # Lists the upstream marked fresh are served from the client's cache, so
                        # the check asks ``server/discover`` too: it still reaches the upstream.
                        tg.start_soon(client.session.send_discover, version)
                    tg.start_soon(self._discover_features, client)
                    tools = await self._list_tools_everywhere(client)
            except BaseExceptionGroup as group:
                # One listing refused (e.g. a bridge's document gone): report that error, mapped
                # like any request's, not an opaque group.
                if len(group.exceptions) == 1 and isinstance(group.exceptions[0], Exception):
                    raise group.exceptions[0] from group
                raise
            return tools

        self.tools = await self.request("health check", listing, timeout_secs=timeout_secs)
        changed = (self.tools, self.prompts, self.resources, self.templates) != before
        if changed and self._on_tools_changed is not None:
            self._on_tools_changed(self)
        return changed

    def abandon(self, reason: str) -> None:
        """Give the session up without draining (it is believed dead); the owner task closes it."""
        self.close_reason = reason
        self._stop.set()

    def request_refresh(self) -> None:
        self._refresh.set()

    async def close(self) -> None:
        """Ask the owner task to close the session and wait until it has."""
        self._stop.set()
        if self.state is not ConnectionState.NEW:
            await self._closed.wait()

    async def wait_closed(self) -> None:
        await self._closed.wait()

    async def drain(self, grace_secs: float, *, force: bool = False) -> int:
        """Let in-flight calls finish (up to ``grace_secs``), then abort the rest.

        Returns how many calls were aborted; each gets ``UpstreamClosedError``.
        """
        return await self._calls.drain(grace_secs, force=force)

    def _require_client(self) -> Client:
        if self._client is None or self._stop.is_set():
            raise UpstreamClosedError(self.name, self.close_reason or f"not connected ({self.state.value})")
        return self._client

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        timeout_secs: float | None = None,
        progress: ProgressRelay | None = None,
        meta: types.RequestParamsMeta | None = None,
        input_responses: types.InputResponses | None = None,
        request_state: str | None = None,
        tag: object = None,
        asks_back: bool = False,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Call ``name`` upstream. The timeout restarts on every progress notification.

        A 2026-07-28 upstream may answer ``InputRequiredResult``; it is returned as it is
        (the relay decides whether the client takes it or the gateway answers it).
        ``tag`` marks the call's caller for server→client requests that carry no correlation.
        ``asks_back``: the caller can be asked mid-call; such a call goes to the side session
        when there is one (see ``era_choice``).
        Raises ``InvalidInputError`` for arguments that cannot be sent, ``UpstreamError``s.
        """
        check_encodable(arguments, "arguments")
        check_encodable(meta, "_meta")
        if asks_back and input_responses is None and request_state is None:
            side = await self._side_for(name)
            if side is not None:
                answered = await self._call_on_side(side, name, arguments, timeout_secs, progress, meta, tag)
                if answered is not None:
                    return answered
        meta = upstream_meta(meta, modern=self.modern)
        if input_responses:
            check_encodable({k: v.model_dump(mode="json") for k, v in input_responses.items()}, "inputResponses")
        limit = timeout_secs if timeout_secs is not None else self.config.tool_timeout_secs
        scope = anyio.CancelScope(deadline=anyio.current_time() + limit)

        relay = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            scope.deadline = anyio.current_time() + limit
            if relay is not None:
                await relay(progress, total, message)

        progress_callback: ProgressFnT = on_progress
        result: types.CallToolResult | types.InputRequiredResult = await self._guarded(
            f"calling tool {name!r}",
            scope,
            limit,
            lambda client: client.session.call_tool(
                name,
                arguments,
                progress_callback=progress_callback,
                meta=meta,
                input_responses=input_responses,
                request_state=request_state,
                allow_input_required=True,
            ),
            tag,
        )
        return result

    async def _side_for(self, tool: str) -> Client | None:
        if self.side is None or tool in self._round_trip_tools:
            return None
        return await self.side.get()

    async def _call_on_side(
        self,
        side: Client,
        name: str,
        arguments: dict[str, Any] | None,
        timeout_secs: float | None,
        progress: ProgressRelay | None,
        meta: types.RequestParamsMeta | None,
        tag: object,
    ) -> types.CallToolResult | None:
        """The call on the side session; None when the tool answers the multi-round-trip way
        (it is remembered, and the call goes to the main session: such a handler is re-run on
        every round by design, so the refused run cost one round trip)."""
        limit = timeout_secs if timeout_secs is not None else self.config.tool_timeout_secs
        scope = anyio.CancelScope(deadline=anyio.current_time() + limit)

        relay = progress

        async def on_progress(progress: float, total: float | None, message: str | None) -> None:
            scope.deadline = anyio.current_time() + limit
            if relay is not None:
                await relay(progress, total, message)

        callback: ProgressFnT = on_progress
        what = f"calling tool {name!r}"
        self._calls.track(scope, what, tag)
        result: types.CallToolResult | None = None
        try:
            with scope:
                result = await side.session.call_tool(
                    name, arguments, progress_callback=callback, meta=upstream_meta(meta, modern=False)
                )
        except MCPError as exc:
            if exc.error.code == types.INTERNAL_ERROR and exc.error.message == INVALID_RESULT:
                self._round_trip_tools.add(name)
                return None
            if closed_by_transport(exc):
                raise self._side_broke(what, "connection closed") from exc
            raise UpstreamCallError(self.name, exc.error.message, code=exc.error.code, data=exc.error.data) from exc
        except _TRANSPORT_ERRORS as exc:
            raise self._side_broke(what, describe_error(exc)) from exc
        finally:
            self.untrack(scope)
        if result is None:
            self._raise_aborted(scope, what, limit)
        return result

    def _side_broke(self, what: str, detail: str) -> UpstreamClosedError:
        """The side session ended under a call: that call fails, the main session goes on."""
        assert self.side is not None
        self.side.fail(f"side session went away ({detail})")
        return UpstreamClosedError(self.name, f"the 2025-11-25 side session went away ({detail}) while {what}")

    def stamp(self, message: dict[str, Any]) -> Mapping[str, str]:
        """Give a raw request the envelope this session's SDK client would; return its HTTP headers.

        Uses the SDK session's own stamping so a raw call is indistinguishable from one the
        SDK sends (the 2026-07-28 ``_meta`` envelope; nothing for a handshake session).
        """
        over_http = self.pipe is None and self.bridge_raw is None
        return self._stamps.apply(self._require_client().session, message, over_http=over_http)

    @property
    def raw_capable(self) -> bool:
        """Whether raw calls can go beside this session (stdio: the shared pipe; 2026-07-28 HTTP: a
        POST; a bridge that answers them itself)."""
        lanes = (self.pipe, self.http_raw, self.bridge_raw)
        return any(lane is not None for lane in lanes) and self._client is not None

    def submit_raw(
        self,
        message: dict[str, Any],
        headers: Mapping[str, str],
        *,
        what: str,
        settle: RawSettle,
        on_log: LogSink | None = None,
    ) -> RawCall | None:
        """``call_raw`` answered by callback instead of awaited: ``settle`` runs once, from the
        upstream's reader (or the timeout, or a drain), unless the returned call is withdrawn
        first. None where it cannot go now (an HTTP upstream with no pooled connection free:
        nothing was sent, ``call_raw`` instead). Raises ``UpstreamClosedError`` when it cannot
        be sent, ``InvalidInputError`` for a header that cannot."""
        self._require_client()
        if self.bridge_raw is not None:
            return None  # answered in the caller's task: ``call_raw``
        call = RawCall(self, what, settle)
        if self.pipe is not None:
            ident = self.pipe.submit(message, call.answered, on_log)
            withdraw: Callable[[], None] = functools.partial(self.pipe.withdraw, ident)
        elif self.http_raw is not None:
            message["id"] = f"agw:{next(self._raw_ids)}"
            exchange = self.http_raw.submit(message, headers, call.answered, on_log)
            if exchange is None:
                return None
            withdraw = exchange.withdraw
        else:
            raise UpstreamClosedError(self.name, "raw calls need a stdio or 2026-07-28 HTTP session")
        self._calls.track(call, what)
        call.start(withdraw, self.config.tool_timeout_secs)
        return call

    async def call_raw(
        self, message: dict[str, Any], headers: Mapping[str, str], *, what: str, on_log: LogSink | None = None
    ) -> bytes:
        """Send a stamped JSON-RPC request over the shared pipe; the answer line, untouched.

        ``on_log`` takes the params of the log messages the upstream sends during the call.
        Tracked for drain and bounded by the tool timeout like any call. Raises ``UpstreamError``s.
        """
        self._require_client()
        task = asyncio.current_task()
        assert task is not None
        if self.pipe is not None:
            sending = self.pipe.call(message, on_log)
        elif self.http_raw is not None:
            message["id"] = f"agw:{next(self._raw_ids)}"
            sending = self.http_raw.call(message, headers, on_log)
        elif self.bridge_raw is not None:
            message["id"] = f"agw:{next(self._raw_ids)}"
            sending = self.bridge_raw(message)
        else:
            raise UpstreamClosedError(self.name, "raw calls need a stdio or 2026-07-28 HTTP session")
        limit = self.config.tool_timeout_secs
        call = AwaitedRawCall(task)
        self._calls.track(call, what)
        timer = task.get_loop().call_later(limit, call.cancel)
        try:
            answer = await sending
        except asyncio.CancelledError:
            # Only our own cancellation (timeout or drain) becomes an error; the caller's goes on.
            if not call.cancelled or task.uncancel() > 0:
                raise
            self._raise_aborted(call, what, limit)
        except MCPError as exc:
            raise self._map_mcp_error(exc, what) from exc
        except _TRANSPORT_ERRORS as exc:
            raise self._closed_error(what, describe_error(exc)) from exc
        finally:
            timer.cancel()
            self.untrack(call)
        return answer

    async def send(
        self,
        request: types.ClientRequest,
        result_type: type[ResultT] | TypeAdapter[ResultT],
        *,
        timeout_secs: float | None = None,
        tag: object = None,
    ) -> ResultT:
        """Send any other request (resources, prompts, completion, logging) with the same mapping."""
        params = request.params.model_dump(mode="json", by_alias=True, exclude_none=True) if request.params else None
        check_encodable(params, "params")
        limit = timeout_secs if timeout_secs is not None else self.config.tool_timeout_secs
        scope = anyio.CancelScope(deadline=anyio.current_time() + limit)
        result: ResultT = await self._guarded(
            request.method, scope, limit, lambda client: client.session.send_request(request, result_type), tag
        )
        return result

    async def request(
        self,
        what: str,
        send: Callable[[Client], Awaitable[Any]],
        timeout_secs: float = 60.0,
        *,
        tag: object = None,
    ) -> Any:
        """Send any other request through the SDK client, with the same error mapping."""
        scope = anyio.CancelScope(deadline=anyio.current_time() + timeout_secs)
        return await self._guarded(what, scope, timeout_secs, send, tag)

    async def _guarded(
        self,
        what: str,
        scope: anyio.CancelScope,
        limit: float,
        send: Callable[[Client], Awaitable[Any]],
        tag: object = None,
    ) -> Any:
        """Run ``send`` under ``scope``, tracked for drain, with upstream errors mapped."""
        client = self._require_client()
        self._calls.track(scope, what, tag)
        done = False
        try:
            with scope:
                result = await send(client)
                done = True
        except MCPError as exc:
            raise self._map_mcp_error(exc, what) from exc
        except _TRANSPORT_ERRORS as exc:
            raise self._closed_error(what, describe_error(exc)) from exc
        finally:
            self.untrack(scope)
        if not done:
            self._raise_aborted(scope, what, limit)
        return result

    def _raise_aborted(self, scope: Abortable, what: str, limit: float) -> NoReturn:
        raise self.aborted_error(scope, what, limit)

    def aborted_error(self, scope: Abortable, what: str, limit: float) -> UpstreamError:
        """Why ``scope`` was cancelled: a drain's reason, or else its timeout."""
        reason = self._calls.abort_reason(scope)
        if reason is not None:
            return UpstreamClosedError(self.name, f"{reason} while {what}")
        return UpstreamTimeoutError(self.name, f"timeout after {limit:g}s while {what}")

    async def ping(self, timeout_secs: float = 5.0) -> None:
        """The health check: a liveness probe that works in both eras and re-lists what the
        upstream offers (``relist``), so a silent change is held by the next check."""
        await self.relist(timeout_secs)

    def untrack(self, scope: Abortable) -> None:
        self._calls.untrack(scope)

    def _map_mcp_error(self, exc: MCPError, what: str) -> UpstreamError:
        if closed_by_transport(exc):
            return self._closed_error(what, "connection closed")
        return UpstreamCallError(self.name, exc.error.message, code=exc.error.code, data=exc.error.data)

    def closed_by(self, what: str, exc: BaseException) -> UpstreamClosedError:
        """The error for a call whose transport failed with ``exc`` (the session ends)."""
        return self._closed_error(what, describe_error(exc))

    def _closed_error(self, what: str, detail: str) -> UpstreamClosedError:
        self.close_reason = f"upstream went away ({detail})"
        self._stop.set()
        return UpstreamClosedError(self.name, f"{self.close_reason} while {what}")
