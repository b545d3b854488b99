"""The downstream client a call is made for: what it can answer, and how to reach it mid-call.

An upstream may ask back during a call (sampling, elicitation, roots) and may log or report
progress. Those belong to the client session that made the call, never to another one: the
``Caller`` carries that client's declared capabilities, its protocol era and its
back-channel. Internal paths (the aggregator fan-out, admin calls) have no caller, and an
upstream that asks back during them gets the error a client without the capability gives.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass, field

import mcp_types as types
from mcp_types import INVALID_REQUEST

from mcp_aggregator.identity import ANONYMOUS, ClientIdentity

Ask = Callable[[types.InputRequest], Awaitable[types.InputResponse | types.ErrorData]]
Log = Callable[[types.LoggingMessageNotificationParams], Awaitable[None]]
Progress = Callable[[float, float | None, str | None], Awaitable[None]]


class AskCount:
    """How many times an upstream asked a client back during its calls (mutable, shared by
    the copies of one ``Caller``'s call): the result cache keeps no result that needed it."""

    __slots__ = ("count",)

    def __init__(self) -> None:
        self.count = 0


@dataclass(frozen=True)
class Caller:
    """One downstream request's client.

    ``ask`` sends a server→client request to the client and waits for its answer; it is
    None when the client cannot be asked mid-call. ``relay_input_required``: the client
    speaks 2026-07-28 and takes an upstream's ``InputRequiredResult`` as it is.
    """

    capabilities: types.ClientCapabilities | None = None
    ask: Ask | None = None
    log: Log | None = None
    progress: Progress | None = None
    relay_input_required: bool = False
    meta: types.RequestParamsMeta | None = None
    identity: ClientIdentity = ANONYMOUS
    """Who the client is and which profile it came in on (anonymous on internal paths)."""
    request_id: str | int | None = None
    """The client's JSON-RPC id of the request (for the audit and traces); None on internal paths."""
    http_request_id: str | None = None
    """The id of the HTTP request the call came in (``X-Request-Id``, the access log's): the
    audit, traces and log lines carry it so the three can be joined. None over stdio."""
    session_id: str | None = None
    """The client's ``Mcp-Session-Id`` (handshake-era HTTP sessions), for traces."""
    traceparent: str | None = None
    """The W3C ``traceparent`` HTTP header the request came with (``_meta.traceparent`` is in ``meta``)."""
    origin: str | None = None
    """Where a call no named client makes comes from (``"admin-api"``): the audit and traces
    name it; policies still see no client."""
    asked: AskCount = field(default_factory=AskCount, compare=False, repr=False)
    """Counts the upstream's requests this caller answered or refused (``answer``)."""

    @property
    def asks_back(self) -> bool:
        """Whether this client can be asked mid-call (it declared sampling, elicitation or roots)."""
        caps = self.capabilities
        return (
            self.ask is not None
            and caps is not None
            and (caps.sampling is not None or caps.elicitation is not None or caps.roots is not None)
        )

    def refusal(self, request: types.InputRequest) -> types.ErrorData | None:
        """The error an upstream gets when this client cannot answer ``request``; None if it can."""
        caps = self.capabilities
        match request:
            case types.CreateMessageRequest():
                if self.ask is None or caps is None or caps.sampling is None:
                    return types.ErrorData(code=INVALID_REQUEST, message="Sampling not supported")
            case types.ElicitRequest(params=params):
                elicitation = caps.elicitation if caps is not None else None
                if self.ask is None or elicitation is None:
                    return types.ErrorData(code=INVALID_REQUEST, message="Elicitation not supported")
                url_mode = isinstance(params, types.ElicitRequestURLParams)
                # A client that declares elicitation without modes supports forms only (spec).
                if url_mode and elicitation.url is None:
                    return types.ErrorData(code=INVALID_REQUEST, message="URL elicitation not supported")
                if not url_mode and elicitation.form is None and elicitation.url is not None:
                    return types.ErrorData(code=INVALID_REQUEST, message="Form elicitation not supported")
            case types.ListRootsRequest():
                if self.ask is None or caps is None or caps.roots is None:
                    return types.ErrorData(code=INVALID_REQUEST, message="List roots not supported")
        return None

    async def answer(self, request: types.InputRequest) -> types.InputResponse | types.ErrorData:
        """Forward ``request`` to the client, or refuse it the way such a client would."""
        self.asked.count += 1
        refusal = self.refusal(request)
        if refusal is not None or self.ask is None:
            return refusal or types.ErrorData(code=INVALID_REQUEST, message="Not supported")
        return await self.ask(request)


NO_CALLER = Caller()

current_caller: ContextVar[Caller | None] = ContextVar("mcp_aggregator_caller", default=None)
"""Set around a relayed call: code running in the caller's task (the SDK's multi-round-trip
driver, our own) finds its client here; callbacks run by a session's reader task do not
and fall back to the connection's in-flight calls."""
