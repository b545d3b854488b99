"""A plain passthrough ``tools/call`` planned from raw JSON and answered with raw bytes.

Both faces of the gateway (streamable HTTP in ``fast_path``, stdio in ``stdio_face``) use
this: it reads only what routing needs (``method``, ``id``, ``params.name`` and the
``_meta`` flags), forwards the upstream's answer with the client's id put back and the
gateway's own ``serverInfo`` stamp in place of the upstream's, and says "not mine" for
everything that needs the full pipeline: a progress token, a log-level opt-in, a client
that declared sampling, elicitation or roots, a retry carrying ``inputResponses`` or
``requestState``, a message the fast parser refuses, a tool it cannot route or whose
upstream session cannot take raw calls. Policy stages run on both paths.

A handshake-era (2025-11-25 and earlier) session on stdio is served too, once its handshake
has shown a client that declared none of sampling, elicitation and roots: its answer is
shaped as the SDK shapes a handshake-era result (no ``resultType``, no ``_meta`` stamp,
fields of that version only), an upstream that asks back mid-call (a 2026-07-28
``InputRequiredResult``) gets the full pipeline's answer for such a client, and the
upstream's log messages during the call reach the client before the answer, as the full
pipeline relays them (such a client gets every level unless it set one).
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import mcp_types as types
import orjson
from mcp_types.methods import serialize_server_result
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from mcp_aggregator.catalog import Catalog
from mcp_aggregator.errors import AggregatorError, UpstreamCallError, UpstreamError
from mcp_aggregator.relay import NO_CALLER, Caller, Invocation
from mcp_aggregator.serve.error_mapping import to_mcp_error
from mcp_aggregator.serve.request_head import Routing
from mcp_aggregator.serve.serve_gateway import ServeGateway
from mcp_aggregator.serve.tool_surface import protocol_free, without_protocol_meta
from mcp_aggregator.settings import Exposure
from mcp_aggregator.upstreams.connection import UpstreamConnection
from mcp_aggregator.upstreams.stdio_pipe import LogSink

logger = logging.getLogger(__name__)

_ASKING_CAPABILITIES: Final = frozenset(("sampling", "elicitation", "roots"))
_TOOLS_CALL: Final = b"tools/call"
# Read on every call: module constants, not attribute lookups on ``mcp_types``.
_LOG_LEVEL_KEY: Final = types.LOG_LEVEL_META_KEY
_VERSION_KEY: Final = types.PROTOCOL_VERSION_META_KEY
_CAPABILITIES_KEY: Final = types.CLIENT_CAPABILITIES_META_KEY
_MODERN: Final = MODERN_PROTOCOL_VERSIONS  # a tuple: a client's unhashable value is just "not in"
_RESPONSE_HEAD = re.compile(rb'\A\s*\{\s*"jsonrpc"\s*:\s*"2\.0"\s*,\s*"id"\s*:\s*"agw:\d+"')
_STAMP_KEY: Final = types.SERVER_INFO_META_KEY.encode()
# The upstream's serverInfo stamp as the last entry of the result's ``_meta``, which ends
# the message (how SDK servers write it): replaced in place without parsing a large result.
# Anything else (braces inside ``_meta``, another order) takes the parsing route.
_STAMP_AT_END = re.compile(
    rb'"_meta"\s*:\s*\{[^{}]*"' + re.escape(_STAMP_KEY) + rb'"\s*:\s*(?P<stamp>\{[^{}]*\})\s*\}\s*\}\s*\}\s*\Z'
)
_TAIL: Final = 4096
MAX_FAST_BODY: Final = 4 << 20
"""Requests larger than this go to the full pipeline: the fast path holds a request whole."""


class Withdrawable(Protocol):
    """A call answered by callback that the client may give up on."""

    def withdraw(self) -> None: ...


class _Settled:
    """A call already answered (with its error) when ``answer_soon`` returned: nothing to
    withdraw."""

    def withdraw(self) -> None:
        pass


SETTLED: Final = _Settled()


def log_notification(params: dict[str, Any]) -> bytes | None:
    """An upstream's log message during a fast call as the full pipeline relays it to a
    handshake-era client (the SDK's model of it, dumped), or None when it is malformed."""
    try:
        model = types.LoggingMessageNotificationParams.model_validate(params)
    except ValidationError:
        logger.debug("dropped a malformed log message from an upstream: %s", str(params)[:200])
        return None
    shown = model.model_dump(by_alias=True, mode="json", exclude_unset=True)
    return orjson.dumps({"jsonrpc": "2.0", "method": "notifications/message", "params": shown})


def asks_mid_call(capabilities: object) -> bool:
    """Whether a client with these capabilities may be asked something while a call runs
    (then its calls take the full pipeline, which can relay the question)."""
    return not isinstance(capabilities, dict) or not _ASKING_CAPABILITIES.isdisjoint(capabilities)


@dataclass(frozen=True, slots=True)
class _Route:
    """Where an exposed name goes, with what each call there needs made once per catalogue."""

    server: str
    tool: str
    invocation: Invocation
    what: str


@dataclass(slots=True)  # not frozen: a frozen init sets each field through object.__setattr__
class FastPlan:
    """A call the fast path takes: the client's id, where it goes, and the upstream message."""

    client_id: Any
    route: _Route
    connection: UpstreamConnection
    upstream: dict[str, Any]
    headers: dict[str, str]
    handshake_version: str | None = None
    """The handshake-era version to shape the answer for; None for a 2026-07-28 request."""
    modern_version: str | None = None
    """The 2026-07-28 (or later) version of a request that carried the envelope."""

    @property
    def server(self) -> str:
        return self.route.server

    @property
    def tool(self) -> str:
        return self.route.tool


class FastCalls:
    """Plans and answers fast ``tools/call``s for one gateway; see the module docstring."""

    def __init__(self, gateway: ServeGateway, server_info: Mapping[str, Any]) -> None:
        self.gateway = gateway
        serve = gateway.settings.serve
        self.enabled = serve.fast_path and serve.exposure is Exposure.PASSTHROUGH
        self._stamp = orjson.dumps(server_info)
        self._server_info = dict(server_info)
        self._catalog: Catalog | None = None
        self._routes: Mapping[str, _Route] = {}
        self.forwarded = 0
        """Calls answered by the fast path (the rest went to the full pipeline)."""

    def _route(self, name: str) -> _Route | None:
        catalog = self.gateway.catalog
        if catalog is not self._catalog:
            # Rebuilt once per catalogue change, never per call.
            routes = {}
            for entry in catalog.entries:
                server, tool = entry.server, entry.original_name
                invocation = Invocation("tools/call", server, tool, NO_CALLER)
                routes[entry.exposed] = routes[entry.canonical] = _Route(
                    server, tool, invocation, f"calling tool {tool!r}"
                )
            self._routes, self._catalog = routes, catalog
        return self._routes.get(name)

    def plan(
        self,
        body: bytes | str,
        *,
        routing: Routing | None = None,
        handshake_version: str | None = None,
        log_level: str | None = None,
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
        caller of ``answer`` then relays the upstream's log messages.
        """
        if not self.enabled:
            return None
        try:
            message = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None  # the SDK answers with the proper parse error
        if not isinstance(message, dict) or message.get("method") != "tools/call" or "id" not in message:
            return None
        params = message.get("params")
        if not isinstance(params, dict) or "inputResponses" in params or "requestState" in params:
            return None
        name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta") or {}
        if not isinstance(name, str) or not isinstance(meta, dict) or not isinstance(arguments, dict | None):
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
                routing.version != version.encode() or routing.method != _TOOLS_CALL or routing.name != name.encode()
            ):
                return None
        if asks_mid_call(meta.get(_CAPABILITIES_KEY) or {}):
            return None
        # The routes come from the current catalogue, which holds exposed servers only.
        route = self._route(name)
        if route is None:
            return None
        upstream_params: dict[str, Any] = {"name": route.tool, "arguments": arguments or {}}
        kept = protocol_free(meta)
        if kept:
            upstream_params["_meta"] = kept
        upstream = {"jsonrpc": "2.0", "id": None, "method": "tools/call", "params": upstream_params}
        try:
            # A server whose state refuses calls, or whose session just ended: the full
            # pipeline says so in its own words.
            connection = self.gateway.connection(route.server)
            if not connection.raw_capable:
                return None
            if handshake_version is not None and connection.modern:
                # A 2026-07-28 upstream logs only what a request opts into.
                upstream_params.setdefault("_meta", {})[_LOG_LEVEL_KEY] = log_level or "debug"
            headers = connection.stamp(upstream)
        except AggregatorError:
            return None
        modern_version = None if handshake_version is not None else meta[_VERSION_KEY]
        return FastPlan(message["id"], route, connection, upstream, headers, handshake_version, modern_version)

    async def answer(self, plan: FastPlan, on_log: LogSink | None = None) -> bytes:
        """The JSON-RPC response to send the client (an error response when the call failed).

        ``on_log`` takes the params of the upstream's log messages while the call runs.
        """
        self.forwarded += 1
        route, connection = plan.route, plan.connection
        try:
            line: bytes = await self.gateway.pipeline.through(
                route.invocation,
                lambda: connection.call_raw(plan.upstream, plan.headers, what=route.what, on_log=on_log),
            )
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
        this instant, a policy stage that must wrap the call, or a handshake-era call whose
        2026-07-28 upstream may ask back mid-call. Errors come back as error responses,
        through ``deliver`` too.
        """
        connection = plan.connection
        pipeline = self.gateway.pipeline
        if not pipeline.errors_only or (plan.handshake_version is not None and connection.modern):
            return None
        route = plan.route

        def settle(outcome: bytes | UpstreamError) -> None:
            # Runs in the upstream reader's callback: whatever goes wrong here must fail this
            # call only, never the reader every other call on that upstream depends on.
            try:
                settled = pipeline.settled(route.invocation, outcome)
                if isinstance(settled, bytes):
                    shaped = self._relayed(settled, plan)
                    # Only a modern upstream asks back, and such a call does not take this lane.
                    assert shaped is not None
                    answer = shaped
                else:
                    answer = self._error(plan, settled)
            except Exception:
                logger.exception("tools/call %s: the upstream's answer could not be relayed", plan.tool)
                answer = self.internal_error(plan)
            deliver(answer)

        try:
            call = connection.submit_raw(plan.upstream, plan.headers, what=route.what, settle=settle, on_log=on_log)
        except AggregatorError as exc:
            self.forwarded += 1
            deliver(self._error(plan, pipeline.settled(route.invocation, exc)))
            return SETTLED
        if call is None:
            return None  # no pooled connection free this instant: ``answer`` waits for one
        self.forwarded += 1
        return call

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
        if match is not None and line[match.end() :].lstrip(b" \t\r\n,").startswith(b'"result"'):
            restamped = self._restamped(line)
            if restamped is not None:
                # Only the id and the stamp change: the result's bytes go through untouched.
                head = match.group(0)
                return head[: head.rindex(b'"agw:')] + orjson.dumps(plan.client_id) + restamped[match.end() :]
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
        logger.warning("tools/call %s failed: %s", plan.tool, exc)
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
        data = {**result, "resultType": "complete", "_meta": kept}
        try:
            shaped = serialize_server_result("tools/call", plan.modern_version, data)
        except ValidationError:
            logger.exception("tools/call %s: the upstream's result does not fit %s", plan.tool, plan.modern_version)
            return self.invalid_result(plan)
        shaped["_meta"] = {**kept, types.SERVER_INFO_META_KEY: self._server_info}
        return orjson.dumps({"jsonrpc": "2.0", "id": plan.client_id, "result": shaped})

    async def _asked_back(self, plan: FastPlan) -> bytes:
        """A handshake-era client cannot be asked mid-call: the full pipeline answers the
        upstream's questions for it (refusals, or a retry for a state-only round). MRTR
        retries re-run the tool anyway, so the call starts again there."""
        try:
            model: types.CallToolResult = await self.gateway.pipeline.call_tool_result(
                plan.tool,
                plan.upstream["params"]["arguments"],
                server=plan.server,
                caller=Caller(capabilities=types.ClientCapabilities()),
                meta=plan.upstream["params"].get("_meta"),
            )
        except AggregatorError as exc:
            return self._error(plan, exc)
        result = without_protocol_meta(model).model_dump(by_alias=True, mode="json", exclude_none=True)
        return self._handshake_result(plan, result)

    def _handshake_result(self, plan: FastPlan, result: dict[str, Any]) -> bytes:
        assert plan.handshake_version is not None
        try:
            shaped = serialize_server_result("tools/call", plan.handshake_version, result)
        except ValidationError:
            logger.exception("tools/call %s: the upstream's result does not fit %s", plan.tool, plan.handshake_version)
            return self.invalid_result(plan)
        return orjson.dumps({"jsonrpc": "2.0", "id": plan.client_id, "result": shaped})

    def _restamped(self, line: bytes) -> bytes | None:
        """``line`` with the gateway's serverInfo stamp where the upstream's was, or None
        when the stamp is not where this can replace it without parsing."""
        tail_start = max(0, len(line) - _TAIL)
        found = _STAMP_AT_END.search(line, tail_start)
        if found is None:
            return None
        start, end = found.span("stamp")
        return b"".join((line[:start], self._stamp, line[end:]))

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
