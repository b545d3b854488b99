"""A plain passthrough request (``tools/call``, ``prompts/get``, ``resources/read``,
``completion/complete``) planned from raw JSON and answered with raw bytes.

Both faces of the gateway (streamable HTTP in ``fast_path``, stdio in ``stdio_face``) use
this: it reads only what routing needs (``method``, ``id``, the name, URI or completion
reference and the ``_meta`` flags), forwards the upstream's answer with the client's id put back and the
gateway's own ``serverInfo`` stamp in place of the upstream's, and says "not mine" for
everything that needs the full pipeline: a progress token, a log-level opt-in, a client
that declared sampling, elicitation or roots, a retry carrying ``inputResponses`` or
``requestState``, a message the fast parser refuses, a name or URI it cannot route (the
full pipeline words that error), a resource read under a namespaced URI (its contents must
come back under that URI), a tool its server's ``cache:`` covers (the result cache is a
stage of the full pipeline), a tool bound to an MCP App (its result may name the app's
``ui://`` address, which the full pipeline shows as clients read it), or an upstream
session that cannot take raw calls. Policy stages run on both paths.

A handshake-era (2025-11-25 and earlier) session on stdio is served too, once its handshake
has shown a client that declared none of sampling, elicitation and roots: its answer is
shaped as the SDK shapes a handshake-era result (no ``resultType``, no ``_meta`` stamp,
fields of that version only), an upstream that asks back mid-call (a 2026-07-28
``InputRequiredResult``) gets the full pipeline's answer for such a client, and the
upstream's log messages during the call reach the client before the answer, as the full
pipeline relays them (such a client gets every level unless it set one). Its prompts and
resource reads to a 2026-07-28 upstream take the full pipeline.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import AsyncIterator, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, Final, Protocol, get_args

import mcp_types as types
import orjson
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS, find_invalid_x_mcp_header, x_mcp_header_map
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcp_aggregator.approvals.approval_stage import ApprovalStage
from mcp_aggregator.apps import binds_app
from mcp_aggregator.catalog import Catalog
from mcp_aggregator.catalog.feature_catalog import FeatureCatalog
from mcp_aggregator.errors import AggregatorError, UpstreamCallError, UpstreamError
from mcp_aggregator.identity import DEFAULT_PROFILE, ClientIdentity
from mcp_aggregator.identity.profile import Profile
from mcp_aggregator.relay import Caller, Invocation
from mcp_aggregator.relay.pipeline import GateStage
from mcp_aggregator.serve.error_mapping import to_mcp_error
from mcp_aggregator.serve.request_head import Routing
from mcp_aggregator.serve.serve_gateway import ServeGateway
from mcp_aggregator.serve.tool_surface import protocol_free, without_protocol_meta
from mcp_aggregator.settings import Exposure
from mcp_aggregator.upstreams.connection import UpstreamConnection
from mcp_aggregator.upstreams.stdio_pipe import LogSink

logger = logging.getLogger(__name__)

_ASKING_CAPABILITIES: Final = frozenset(("sampling", "elicitation", "roots"))
_ERROR_HEAD: Final = b'"error":{'
_ERROR_HEAD_WITHIN: Final = 256
"""An answer the gateway encodes puts ``error`` right after ``jsonrpc`` and ``id``."""
_TOOLS_CALL: Final = "tools/call"
_PROMPTS_GET: Final = "prompts/get"
_RESOURCES_READ: Final = "resources/read"
_COMPLETE: Final = "completion/complete"
_TARGET_KEYS: Final = {_TOOLS_CALL: "name", _PROMPTS_GET: "name", _RESOURCES_READ: "uri", _COMPLETE: "ref"}
"""The methods the fast path takes, each with the param that names what it goes to."""
FAST_METHODS: Final = tuple(f'"{method}"'.encode() for method in _TARGET_KEYS)
"""The methods as they appear in a raw message: a line without one is not looked at."""
# Read on every call: module constants, not attribute lookups on ``mcp_types``.
_LOG_LEVEL_KEY: Final = types.LOG_LEVEL_META_KEY
_VERSION_KEY: Final = types.PROTOCOL_VERSION_META_KEY
_CAPABILITIES_KEY: Final = types.CLIENT_CAPABILITIES_META_KEY
_MODERN: Final = MODERN_PROTOCOL_VERSIONS  # a tuple: a client's unhashable value is just "not in"
_RESPONSE_HEAD = re.compile(rb'\A\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*"agw:\d+"')
# Read where the head ends, not on a slice of the rest: a result may be tens of megabytes.
_RESULT_NEXT = re.compile(rb'\s*,\s*"result"')
_STAMP_KEY: Final = types.SERVER_INFO_META_KEY.encode()
# The upstream's serverInfo stamp as the last entry of the result's ``_meta``, which ends
# the message (how SDK servers write it): replaced in place without parsing a large result.
# Anything else (braces inside ``_meta``, another order) takes the parsing route.
_STAMP_AT_END = re.compile(
    rb'"_meta"\s*:\s*\{[^{}]*"' + re.escape(_STAMP_KEY) + rb'"\s*:\s*(?P<stamp>\{[^{}]*\})\s*\}\s*\}\s*\}\s*\Z'
)
_TAIL: Final = 4096
_RESULT_MODELS: Final[Mapping[str, type[types.Result]]] = {
    _TOOLS_CALL: types.CallToolResult,
    _PROMPTS_GET: types.GetPromptResult,
    _RESOURCES_READ: types.ReadResourceResult,
    _COMPLETE: types.CompleteResult,
}
MAX_FAST_BODY: Final = 4 << 20
"""Requests larger than this go to the full pipeline: the fast path holds a request whole."""


_LOG_LEVEL_ORDER: Final[Mapping[str, int]] = {name: i for i, name in enumerate(get_args(types.LoggingLevel))}


def log_level_shown(message: str, client: str | None) -> bool:
    """Whether a log message at ``message`` reaches a handshake-era client that set ``client``
    with ``logging/setLevel`` (None: it set none, every level reaches it). An upstream logs at
    the most verbose level any client asked for, so each client's own is applied here."""
    if client is None:
        return True
    return _LOG_LEVEL_ORDER.get(message, 0) >= _LOG_LEVEL_ORDER.get(client, 0)


class Withdrawable(Protocol):
    """A call answered by callback that the client may give up on."""

    def withdraw(self) -> None: ...


class _Settled:
    """A call already answered (with its error) when ``answer_soon`` returned: nothing to
    withdraw."""

    def withdraw(self) -> None:
        pass


SETTLED: Final = _Settled()


class _AskingLane:
    """A call on the callback lane that may be answered by a task: the raw call, then, if a
    2026-07-28 upstream asked a handshake-era client's call back, or its large result is
    judged off the event loop, the task answering for the client, one of ``FastCalls``'s
    tracked tasks (``withdraw`` cancels it)."""

    __slots__ = ("call", "task")

    def __init__(self) -> None:
        self.call: Withdrawable | None = None
        self.task: asyncio.Task[None] | None = None

    def hand_over(self, tasks: set[asyncio.Task[None]], work: Coroutine[Any, Any, None]) -> None:
        """Run ``work`` as a task ``tasks`` holds until it ends. Called from the upstream
        reader's callback, where no task runs: an asyncio task, since anyio's task group
        needs to be called from one."""
        task = self.task = asyncio.get_running_loop().create_task(work)
        tasks.add(task)
        task.add_done_callback(tasks.discard)

    def withdraw(self) -> None:
        if self.task is not None:
            self.task.cancel()
        elif self.call is not None:
            self.call.withdraw()


def log_notification(params: dict[str, Any], level: str | None = None) -> bytes | None:
    """An upstream's log message during a fast call as the full pipeline relays it to a
    handshake-era client (the SDK's model of it, dumped), or None when it is malformed or
    below ``level``, the one the client set with ``logging/setLevel`` (None: every level)."""
    try:
        model = types.LoggingMessageNotificationParams.model_validate(params)
    except ValidationError:
        logger.debug("dropped a malformed log message from an upstream: %s", str(params)[:200])
        return None
    if not log_level_shown(model.level, level):
        return None
    shown = model.model_dump(by_alias=True, mode="json", exclude_unset=True)
    return orjson.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": shown})


def _plain_arguments(method: str, arguments: object) -> bool:
    """Whether ``arguments`` have the shape the SDK's model of ``method`` takes (otherwise the
    full pipeline answers with the SDK's own error)."""
    if method == _TOOLS_CALL:
        return arguments is None or isinstance(arguments, dict)
    if method == _PROMPTS_GET:
        return arguments is None or (
            isinstance(arguments, dict) and all(isinstance(value, str) for value in arguments.values())
        )
    return True


def _plain_completion(params: dict[str, Any]) -> bool:
    """Whether a completion's reference, argument and context have the shapes the SDK's model
    takes (otherwise the full pipeline answers with the SDK's own error)."""
    ref, argument, context = params.get("ref"), params.get("argument"), params.get("context")
    if not isinstance(ref, dict) or not isinstance(argument, dict):
        return False
    named = ref.get("name") if ref.get("type") == "ref/prompt" else ref.get("uri")
    if ref.get("type") not in ("ref/prompt", "ref/resource") or not isinstance(named, str):
        return False
    if not isinstance(argument.get("name"), str) or not isinstance(argument.get("value"), str):
        return False
    if context is None:
        return True
    given = context.get("arguments") if isinstance(context, dict) else False
    return given is None or (isinstance(given, dict) and all(isinstance(v, str) for v in given.values()))


def http_status(body: bytes) -> int:
    """The HTTP status the SDK's endpoint gives an answer ``body``: 200 for a result, the
    status its table assigns an error's code (400 for -32021, a capability the client did
    not declare), else 200."""
    if _ERROR_HEAD not in body[:_ERROR_HEAD_WITHIN]:
        return 200
    try:
        code = orjson.loads(body).get("error", {}).get("code")
    except (orjson.JSONDecodeError, AttributeError):
        return 200
    return ERROR_CODE_HTTP_STATUS.get(code, 200) if isinstance(code, int) else 200


def asks_mid_call(capabilities: object) -> bool:
    """Whether a client with these capabilities may be asked something while a call runs
    (then its calls take the full pipeline, which can relay the question)."""
    return not isinstance(capabilities, dict) or not _ASKING_CAPABILITIES.isdisjoint(capabilities)


@dataclass(frozen=True, slots=True)
class _Route:
    """Where an exposed name goes, with what each call there needs made once per catalogue."""

    server: str
    target: str
    """The upstream's own tool or prompt name, or resource URI."""
    invocation: Invocation
    what: str
    mirrored: bool = False
    """A tool that mirrors arguments into ``Mcp-Param-*`` headers: over 2026-07-28 HTTP the
    SDK's endpoint holds a call's headers against its arguments, so such calls go there."""
    reshaped: bool = False
    """A tool whose profile override hides or defaults arguments: the full pipeline reshapes them."""

    @property
    def method(self) -> str:
        return self.invocation.method


@dataclass(slots=True)  # not frozen: a frozen init sets each field through object.__setattr__
class FastPlan:
    """A call the fast path takes: the client's id, where it goes, and the upstream message."""

    client_id: Any
    route: _Route
    connection: UpstreamConnection
    upstream: dict[str, Any]
    headers: Mapping[str, str]
    handshake_version: str | None = None
    """The handshake-era version to shape the answer for; None for a 2026-07-28 request."""
    modern_version: str | None = None
    """The 2026-07-28 (or later) version of a request that carried the envelope."""
    invocation: Invocation | None = None
    """What the pipeline's stages see of this call (its client, its arguments, its request
    id); None: the route's own, made once per catalogue."""
    started: float = 0.0
    """``time.perf_counter()`` when the call was planned (only when a stage times calls)."""
    request_id: str | None = None
    """The HTTP request's id (``X-Request-Id``); None over stdio."""

    @property
    def staged(self) -> Invocation:
        return self.invocation or self.route.invocation

    @property
    def server(self) -> str:
        return self.route.server

    @property
    def method(self) -> str:
        return self.route.method

    @property
    def target(self) -> str:
        return self.route.target

    @property
    def label(self) -> str:
        """The request as logs name it: ``tools/call echo``."""
        return f"{self.route.method} {self.route.target}"


class FastCalls:
    """Plans and answers fast ``tools/call``s for one gateway; see the module docstring."""

    def __init__(self, gateway: ServeGateway, server_info: Mapping[str, Any], profile: Profile | None = None) -> None:
        self.gateway = gateway
        serve = gateway.settings.serve
        # A stage that needs the full pipeline (tracing) makes every call take it.
        self.enabled = serve.fast_path and serve.exposure is Exposure.PASSTHROUGH and gateway.pipeline.raw_ok
        self._profile = profile
        self._anonymous = Caller(identity=ClientIdentity(profile=profile.name if profile else DEFAULT_PROFILE))
        """The caller of a request whose transport names nobody (stdio, an open endpoint)."""
        self._gated = any(isinstance(stage, GateStage) for stage in gateway.pipeline.stages)
        """A stage decides per call from the client and the arguments: each plan gets its own
        ``Invocation``."""
        self._watched = gateway.pipeline.per_call
        self._approvals = next((s for s in gateway.pipeline.stages if isinstance(s, ApprovalStage)), None)
        """Tools a rule may hold for approval are left out of the routes: their calls wait in
        the full pipeline, and every other call pays nothing for them."""
        """A stage records each call (the audit): each plan gets its own ``Invocation``, with
        the client's request id."""
        self._timed = gateway.pipeline.timed
        """A stage times each call (the audit, the live series): each plan notes when it started."""
        self._stamp = orjson.dumps(server_info)
        self._server_info = dict(server_info)
        self._catalog: Catalog | None = None
        self._routes: Mapping[str, _Route] = {}
        self._features: FeatureCatalog | None = None
        self._prompt_routes: dict[str, _Route] = {}
        self.forwarded = 0
        """Calls answered by the fast path (the rest went to the full pipeline)."""
        self._tasks: set[asyncio.Task[None]] | None = None
        """The tasks answering callback-lane calls a task must finish, while ``serving``."""

    @asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """While entered, a callback-lane call whose answer a task must give (a large result
        judged in a worker thread, a 2026-07-28 upstream's question) gets one, tracked; on
        exit those still running are cancelled and awaited: the server is stopping, and no
        task outlives it. Without it such calls take the awaited lane (``answer_soon``
        returns None)."""
        tasks: set[asyncio.Task[None]] = set()
        self._tasks = tasks
        try:
            yield
        finally:
            self._tasks = None
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)

    def _route(self, name: str) -> _Route | None:
        catalog = self.gateway.catalog
        if catalog is not self._catalog:
            # Rebuilt once per catalogue change, never per call.
            routes = {}
            overrides = self._profile.overrides if self._profile is not None else {}
            supervisors = self.gateway.supervisors
            profile = self._anonymous.identity.profile
            for entry in catalog.entries:
                server, tool = entry.server, entry.original_name
                sup = supervisors.get(server)
                if sup is not None and sup.config.cache is not None and sup.config.cache.covers(tool):
                    continue  # a cacheable tool: the full pipeline's cache stage answers it
                if self._approvals is not None and self._approvals.rules.covers(server, tool, profile):
                    continue
                if binds_app(entry.tool):
                    continue  # its result may name the app, which the full pipeline shows as clients read it
                invocation = Invocation(_TOOLS_CALL, server, tool, self._anonymous)
                schema = entry.tool.input_schema
                mirrored = find_invalid_x_mcp_header(schema) is None and bool(x_mcp_header_map(schema))
                override = overrides.get(entry.canonical)
                reshaped = override is not None and override.changes_arguments
                routes[entry.exposed] = routes[entry.canonical] = _Route(
                    server, tool, invocation, f"calling tool {tool!r}", mirrored, reshaped
                )
            self._routes, self._catalog = routes, catalog
        return self._routes.get(name)

    def _prompt_route(self, name: str) -> _Route | None:
        features = self.gateway.features
        if features is not self._features:
            self._prompt_routes, self._features = {}, features
        route = self._prompt_routes.get(name)
        if route is None:
            try:
                found = features.route_prompt(name)
            except AggregatorError:
                return None  # unknown or ambiguous: the full pipeline says which
            # Bounded: only names that resolve are kept, three at most per prompt.
            invocation = Invocation(_PROMPTS_GET, found.server, found.name, self._anonymous)
            route = self._prompt_routes[name] = _Route(found.server, found.name, invocation, _PROMPTS_GET)
        return route

    def _routed(
        self, method: str, params: dict[str, Any], target: object, arguments: object
    ) -> tuple[_Route, dict[str, Any]] | None:
        """Where the request goes, and its params as that upstream takes them; None when the
        full pipeline must route it (and word the error). The routes come from the current
        catalogues, which hold exposed servers only."""
        if method == _COMPLETE:
            return self._completion(params)
        if not isinstance(target, str):
            return None
        if method == _TOOLS_CALL:
            route = self._route(target)
            return None if route is None else (route, {"name": route.target, "arguments": arguments or {}})
        if method == _PROMPTS_GET:
            route = self._prompt_route(target)
            if route is None:
                return None
            prompt: dict[str, Any] = {"name": route.target}
            if arguments is not None:
                prompt["arguments"] = arguments
            return route, prompt
        route = self._resource_route(target)
        return None if route is None else (route, {"uri": route.target})

    def _completion(self, params: dict[str, Any]) -> tuple[_Route, dict[str, Any]] | None:
        """A completion's route: a prompt's owner, or the server that listed the template
        (else owns the URI); its reference named as that upstream names it."""
        ref: dict[str, Any] = params["ref"]
        if ref["type"] == "ref/prompt":
            prompt = self._prompt_route(ref["name"])
            if prompt is None:
                return None
            server, target, ref = prompt.server, prompt.target, {**ref, "name": prompt.target}
        else:
            target = ref["uri"]
            owner = self.gateway.features.route_template(target)
            if owner is None:
                resource = self._resource_route(target)
                if resource is None:
                    return None
                owner = resource.server
            server = owner
        route = _Route(server, target, Invocation(_COMPLETE, server, target, self._anonymous), _COMPLETE)
        upstream = {"ref": ref, "argument": params["argument"]}
        if params.get("context") is not None:
            upstream["context"] = params["context"]
        return route, upstream

    def _resource_route(self, uri: str) -> _Route | None:
        servers = self.gateway.servers_with("resources")
        try:
            found = self.gateway.features.route_resource(uri, servers)
        except AggregatorError:
            return None
        if found.server not in servers or found.uri != uri:
            # A namespaced URI: its contents must come back under the client's URI, which
            # the full pipeline rewrites.
            return None
        return _Route(
            found.server, uri, Invocation(_RESOURCES_READ, found.server, uri, self._anonymous), _RESOURCES_READ
        )

    def plan(
        self,
        body: bytes | str,
        *,
        routing: Routing | None = None,
        handshake_version: str | None = None,
        log_level: str | None = None,
        identity: ClientIdentity | None = None,
        request_id: str | None = None,
    ) -> FastPlan | None:
        """The plan for ``body``, or None when the full pipeline must take it.

        A 2026-07-28 request is taken only with the whole ``_meta`` envelope (protocol version
        and client capabilities), as the SDK requires. ``routing``: the request came over HTTP
        with these routing headers, which must match the body as the SDK's inbound checks
        demand (otherwise the SDK answers with its error). ``handshake_version``: the request
        belongs to a handshake-era session of that version, whose client declared none of the
        capabilities a call may ask for (the caller has checked); such a request carries no
        envelope, and its session's ``log_level`` (None: it set none, so every level) is
        stamped on the request to a 2026-07-28 upstream as the full pipeline does; the
        caller of ``answer`` then relays the upstream's log messages. ``identity``: the
        client the HTTP face admitted (None: nobody named, this endpoint's profile).
        ``request_id``: the HTTP request's id, which the audit records beside the JSON-RPC id.
        """
        if not self.enabled:
            return None
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None  # the SDK answers with the proper parse error
        if not isinstance(message, dict) or "id" not in message:
            return None
        method = message.get("method")
        if not isinstance(method, str):
            return None
        key = _TARGET_KEYS.get(method)
        params = message.get("params")
        if key is None or not isinstance(params, dict) or "inputResponses" in params or "requestState" in params:
            return None
        if "task" in params:
            return None  # a task-augmented call answers CreateTaskResult: the SDK path relays it
        target, arguments, meta = params.get(key), params.get("arguments"), params.get("_meta") or {}
        if not isinstance(meta, dict) or not _plain_arguments(method, arguments):
            return None
        if method == _COMPLETE:
            if not _plain_completion(params):
                return None
            named = None  # completion names nothing in ``Mcp-Name``
        elif isinstance(target, str):
            named = target.encode()
        else:
            return None
        if "progressToken" in meta or _LOG_LEVEL_KEY in meta:
            return None
        if handshake_version is not None:
            if _VERSION_KEY in meta:
                return None
        else:
            version = meta.get(_VERSION_KEY)
            if version not in _MODERN or _CAPABILITIES_KEY not in meta:
                return None
            if routing is not None and (
                routing.version != version.encode() or routing.method != method.encode() or routing.name != named
            ):
                return None
        if asks_mid_call(meta.get(_CAPABILITIES_KEY) or {}):
            return None
        routed = self._routed(method, params, target, arguments)
        if routed is None or routed[0].reshaped or (routed[0].mirrored and routing is not None):
            return None
        route, upstream_params = routed
        kept = protocol_free(meta)
        if handshake_version is None:
            # The upstream decides by its caller's capabilities (the stamp narrows its own to them).
            kept[_CAPABILITIES_KEY] = meta[_CAPABILITIES_KEY]
        if kept:
            upstream_params["_meta"] = kept
        upstream = {"jsonrpc": "2.0", "id": None, "method": method, "params": upstream_params}
        try:
            # A server whose state refuses calls, or whose session just ended: the full
            # pipeline says so in its own words.
            connection = self.gateway.connection(route.server)
            if not connection.raw_capable:
                return None
            if handshake_version is not None and connection.modern:
                if method != _TOOLS_CALL:
                    # It may ask back mid-request, which only tools/call answers here.
                    return None
                # A 2026-07-28 upstream logs only what a request opts into.
                upstream_params.setdefault("_meta", {})[_LOG_LEVEL_KEY] = log_level or "debug"
            headers = connection.stamp(upstream)
        except AggregatorError:
            return None
        modern_version = None if handshake_version is not None else meta[_VERSION_KEY]
        invocation = None
        started = time.perf_counter() if self._timed else 0.0
        if self._watched:
            caller = Caller(
                identity=self._anonymous.identity if identity is None else identity,
                request_id=message["id"],
                http_request_id=request_id,
            )
            invocation = Invocation(method, route.server, route.target, caller, None, arguments)
        elif identity is not None or self._gated:
            caller = self._anonymous if identity is None else Caller(identity=identity)
            staged = route.invocation
            invocation = Invocation(staged.method, staged.server, staged.target, caller, None, arguments)
        return FastPlan(
            message["id"],
            route,
            connection,
            upstream,
            headers,
            handshake_version,
            modern_version,
            invocation,
            started,
            request_id,
        )

    async def answer(self, plan: FastPlan, on_log: LogSink | None = None) -> bytes:
        """The JSON-RPC response to send the client (an error response when the call failed).

        ``on_log`` takes the params of the upstream's log messages while the call runs.
        """
        self.forwarded += 1
        route, connection = plan.route, plan.connection

        async def send() -> bytes:
            line = await connection.call_raw(plan.upstream, plan.headers, what=route.what, on_log=on_log)
            failure = self._failure(line, plan)
            if failure is not None:
                raise failure
            return line

        try:
            line: bytes = await self.gateway.pipeline.through(plan.staged, send)
        except AggregatorError as exc:
            return self._error(plan, exc)
        shaped = self._relayed(line, plan)
        return shaped if shaped is not None else await self._asked_back(plan)

    def answer_soon(
        self, plan: FastPlan, deliver: Callable[[bytes], None], on_log: LogSink | None = None
    ) -> Withdrawable | None:
        """``answer`` without a task: the call goes out now and ``deliver`` gets the response
        from the upstream reader's callback. Returns the call (``withdraw()`` when the client
        gives up: then nothing is delivered), or None where this lane does not apply and
        ``answer`` must be awaited instead: an HTTP upstream with no pooled connection free
        this instant, or a policy stage that must wrap the call. Errors come back as error
        responses, through ``deliver`` too. A handshake-era client's call whose 2026-07-28
        upstream asks back mid-call gets the full pipeline's answer from a task started then.
        """
        connection = plan.connection
        pipeline = self.gateway.pipeline
        if not pipeline.errors_only:
            return None
        route = plan.route
        invocation = plan.staged
        asking = (
            _AskingLane() if (plan.handshake_version is not None and connection.modern) or pipeline.screening else None
        )
        if asking is not None and self._tasks is None:
            return None  # no task group to hand the answer to (``serving`` is not entered)
        if self._gated:
            try:
                pipeline.admit(invocation)
            except AggregatorError as exc:
                self.forwarded += 1
                deliver(self._error(plan, pipeline.settled(invocation, exc, plan.started)))
                return SETTLED

        def settle(outcome: bytes | UpstreamError) -> None:
            # Runs in the upstream reader's callback: whatever goes wrong here must fail this
            # call only, never the reader every other call on that upstream depends on.
            try:
                if isinstance(outcome, bytes):
                    outcome = self._failure(outcome, plan) or outcome
                if isinstance(outcome, bytes) and pipeline.settles_later(invocation, outcome):
                    # A large result is judged in a worker thread, awaited by a task: not here,
                    # where the upstream's reader (every other call on it) would wait too.
                    assert asking is not None and self._tasks is not None
                    asking.hand_over(self._tasks, self._settled_later(plan, outcome, deliver))
                    return
                settled = pipeline.settled(invocation, outcome, plan.started)
                if isinstance(settled, bytes):
                    shaped = self._relayed(settled, plan)
                    if shaped is None:
                        # Only a 2026-07-28 upstream asks back, and only a handshake-era
                        # client's call is shaped to None: the full pipeline answers for it.
                        assert asking is not None and self._tasks is not None
                        asking.hand_over(self._tasks, self._asked_back_to(plan, deliver))
                        return
                    answer = shaped
                else:
                    answer = self._error(plan, settled)
            except Exception:
                logger.exception("%s: the upstream's answer could not be relayed", plan.label)
                answer = self.internal_error(plan)
            deliver(answer)

        try:
            call = connection.submit_raw(plan.upstream, plan.headers, what=route.what, settle=settle, on_log=on_log)
        except AggregatorError as exc:
            self.forwarded += 1
            deliver(self._error(plan, pipeline.settled(invocation, exc, plan.started)))
            return SETTLED
        if call is None:
            return None  # no pooled connection free this instant: ``answer`` waits for one
        self.forwarded += 1
        if asking is None:
            return call
        asking.call = call
        return asking

    async def _settled_later(self, plan: FastPlan, line: bytes, deliver: Callable[[bytes], None]) -> None:
        try:
            settled = await self.gateway.pipeline.settled_later(plan.staged, line, plan.started)
            if isinstance(settled, bytes):
                shaped = self._relayed(settled, plan)
                answer = shaped if shaped is not None else await self._asked_back(plan)
            else:
                answer = self._error(plan, settled)
        except Exception:
            logger.exception("%s: the upstream's answer could not be relayed", plan.label)
            answer = self.internal_error(plan)
        deliver(answer)

    async def _asked_back_to(self, plan: FastPlan, deliver: Callable[[bytes], None]) -> None:
        try:
            answer = await self._asked_back(plan)
        except Exception:
            logger.exception("%s: answering the upstream's question failed", plan.label)
            answer = self.internal_error(plan)
        deliver(answer)

    @staticmethod
    def _failure(line: bytes, plan: FastPlan) -> UpstreamCallError | None:
        """The upstream's error answer as the error the full pipeline's SDK client raises for
        it (then counted, scrubbed and worded as there), or None for a result."""
        match = _RESPONSE_HEAD.match(line)
        if match is not None and _RESULT_NEXT.match(line, match.end()):
            return None
        try:
            answer = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            text = f"answered with a line that is not JSON: {exc}"
            return UpstreamCallError(plan.server, text, code=types.INTERNAL_ERROR)
        error = answer.get("error") if isinstance(answer, dict) else None
        if not isinstance(error, dict):
            return None
        code, message = error.get("code"), error.get("message")
        if not isinstance(code, int) or isinstance(code, bool) or not isinstance(message, str):
            text = f"answered with a malformed error: {str(error)[:200]}"
            return UpstreamCallError(plan.server, text, code=types.INTERNAL_ERROR)
        return UpstreamCallError(plan.server, message, code=code, data=error.get("data"))

    def _relayed(self, line: bytes, plan: FastPlan) -> bytes | None:
        """``_shaped``, with an answer that is not JSON failing as the upstream's error."""
        try:
            return self._shaped(line, plan)
        except orjson.JSONDecodeError as exc:
            text = f"answered with a line that is not JSON: {exc}"
            return self._error(plan, UpstreamCallError(plan.server, text, code=types.INTERNAL_ERROR))

    def _shaped(self, line: bytes, plan: FastPlan) -> bytes | None:
        """The upstream's answer ``line`` as the client gets it, or None when a handshake-era
        client's upstream asked back mid-call (``_asked_back`` answers then)."""
        if plan.handshake_version is not None:
            return self._for_handshake_era(line, plan)
        if not plan.connection.modern:
            return self._from_handshake_era(line, plan)
        match = _RESPONSE_HEAD.match(line)
        if match is not None and _RESULT_NEXT.match(line, match.end()):
            # Only the id and the stamp change: the result's bytes go through untouched.
            head = match.group(0)
            spliced = self._spliced(line, head[: head.rindex(b'"agw:')] + orjson.dumps(plan.client_id), match.end())
            if spliced is not None:
                return spliced
        return self._reencoded(line, plan.client_id)

    @staticmethod
    def invalid_result(plan: FastPlan) -> bytes:
        """What the SDK's server answers for a result its client's version cannot carry."""
        error = {"code": types.INTERNAL_ERROR, "message": "Handler returned an invalid result"}
        return orjson.dumps({"jsonrpc": "2.0", "id": plan.client_id, "error": error})

    @staticmethod
    def internal_error(plan: FastPlan) -> bytes:
        """The answer for a call the gateway itself failed (a bug, logged where it happened)."""
        error = {"code": types.INTERNAL_ERROR, "message": "internal error in the gateway"}
        return orjson.dumps({"jsonrpc": "2.0", "id": plan.client_id, "error": error})

    def _error(self, plan: FastPlan, exc: AggregatorError) -> bytes:
        # Possibly in an upstream reader's callback, outside the request's context: the id is given.
        logger.warning("%s failed: %s", plan.label, exc, extra={"request_id": plan.request_id})
        error = to_mcp_error(exc).error.model_dump(mode="json", exclude_none=True)
        return orjson.dumps({"jsonrpc": "2.0", "id": plan.client_id, "error": error})

    def _for_handshake_era(self, line: bytes, plan: FastPlan) -> bytes | None:
        """The upstream's answer as the full pipeline gives it to a handshake-era client, or
        None when the upstream asked back mid-call (a 2026-07-28 ``InputRequiredResult``)."""
        assert plan.handshake_version is not None
        answer = orjson.loads(line)
        result = answer.get("result")
        if not isinstance(result, dict):
            return self._reencoded(line, plan.client_id, stamp=False)
        if result.get("resultType") == "input_required" and plan.connection.modern:
            return None
        meta = result.get("_meta")
        if isinstance(meta, dict):
            kept = protocol_free(meta)
            if kept:
                result["_meta"] = kept
            else:
                del result["_meta"]
        return self._handshake_result(plan, result)

    def _from_handshake_era(self, line: bytes, plan: FastPlan) -> bytes:
        """A handshake-era upstream's answer as the full pipeline gives it to a 2026-07-28
        client: the result in that version's shape (``resultType``: such an upstream's result
        is always complete), stamped with the gateway's ``serverInfo``."""
        assert plan.modern_version is not None
        answer = orjson.loads(line)
        result = answer.get("result")
        if not isinstance(result, dict):
            return self._reencoded(line, plan.client_id)
        meta = result.get("_meta")
        kept = protocol_free(meta) if isinstance(meta, dict) else {}
        try:
            # Read as the SDK's client reads it (its defaults filled in: a resource's cache
            # hints, say), then written as its server writes that version.
            model = _RESULT_MODELS[plan.method].model_validate({**result, "_meta": kept}, by_name=False)
            data = model.model_dump(by_alias=True, mode="json", exclude_none=True)
            shaped = serialize_server_result(plan.method, plan.modern_version, data)
        except ValidationError:
            logger.exception("%s: the upstream's result does not fit %s", plan.label, plan.modern_version)
            return self.invalid_result(plan)
        shaped["_meta"] = {**kept, types.SERVER_INFO_META_KEY: self._server_info}
        return orjson.dumps({"jsonrpc": "2.0", "id": plan.client_id, "result": shaped})

    async def _asked_back(self, plan: FastPlan) -> bytes:
        """A handshake-era client cannot be asked mid-call: the full pipeline answers the
        upstream's questions for it (refusals, or a retry for a state-only round). MRTR
        retries re-run the tool anyway, so the call starts again there."""
        try:
            model: types.CallToolResult = await self.gateway.pipeline.call_tool_result(
                plan.target,
                plan.upstream["params"]["arguments"],
                server=plan.server,
                caller=Caller(
                    capabilities=types.ClientCapabilities(),
                    identity=plan.staged.caller.identity,
                    request_id=plan.client_id,
                    http_request_id=plan.request_id,
                ),
                meta=plan.upstream["params"].get("_meta"),
            )
        except AggregatorError as exc:
            return self._error(plan, exc)
        result = without_protocol_meta(model).model_dump(by_alias=True, mode="json", exclude_none=True)
        return self._handshake_result(plan, result)

    def _handshake_result(self, plan: FastPlan, result: dict[str, Any]) -> bytes:
        assert plan.handshake_version is not None
        try:
            shaped = serialize_server_result(plan.method, plan.handshake_version, result)
        except ValidationError:
            logger.exception("%s: the upstream's result does not fit %s", plan.label, plan.handshake_version)
            return self.invalid_result(plan)
        return orjson.dumps({"jsonrpc": "2.0", "id": plan.client_id, "result": shaped})

    def _spliced(self, line: bytes, head: bytes, head_end: int) -> bytes | None:
        """``line`` with ``head`` in place of its first ``head_end`` bytes and the gateway's
        serverInfo stamp where the upstream's was, copied once; None when the stamp is not
        where this can replace it without parsing."""
        found = _STAMP_AT_END.search(line, max(head_end, len(line) - _TAIL))
        if found is None:
            return None
        start, end = found.span("stamp")
        view = memoryview(line)
        return b"".join((head, view[head_end:start], self._stamp, view[end:]))

    def _reencoded(self, line: bytes, client_id: Any, *, stamp: bool = True) -> bytes:
        answer = orjson.loads(line)
        answer["id"] = client_id
        result = answer.get("result")
        if stamp and isinstance(result, dict):
            meta = result.get("_meta")
            meta = meta if isinstance(meta, dict) else {}
            # As the SDK server stamps a 2026-07-28 result: the gateway is the server here.
            result["_meta"] = {**meta, types.SERVER_INFO_META_KEY: self._server_info}
        error = answer.get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            # As on the full pipeline: an upstream's error text may quote its own credentials.
            error["message"] = self.gateway.scrub(error["message"])
        return orjson.dumps(answer)
