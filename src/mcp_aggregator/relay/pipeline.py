"""The one call pipeline: route → policy stages → metrics → the upstream connection.

Every way to an upstream enters here: passthrough calls, facade ``execute``, the
aggregator fan-out, resources, prompts, completion and admin-triggered calls. Policy
(pinned definitions, rate limits, ...) hangs on it as stages, each ``(invocation, next)``,
so a concern is written once and applies to every path.

A 2026-07-28 upstream may answer ``InputRequiredResult``. A client that speaks that era
on a path that can carry it gets it as it is (``requestState`` untouched); for every other
caller the pipeline answers the embedded requests through the caller's back-channel and
retries, which bridges a modern upstream to a 2025-11-25 client.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, Protocol, TypeVar, cast, runtime_checkable

import anyio
import mcp_types as types
from pydantic import TypeAdapter

from mcp_aggregator.apps import shown_result
from mcp_aggregator.catalog import Route
from mcp_aggregator.catalog.feature_catalog import FeatureCatalog, ResourceRoute
from mcp_aggregator.errors import AggregatorError, ResourceNotFoundError, UpstreamCallError, UpstreamError
from mcp_aggregator.relay.caller import NO_CALLER, Caller, current_caller
from mcp_aggregator.upstreams.caller_capabilities import declared
from mcp_aggregator.upstreams.connection import ProgressRelay, UpstreamConnection
from mcp_aggregator.upstreams.wire_checks import upstream_meta

logger = logging.getLogger(__name__)

MAX_INPUT_ROUNDS: Final = 10
_STATE_ONLY_PAUSE_SECS: Final = 0.05

T = TypeVar("T")


class Routes(Protocol):
    """What the pipeline reads from the catalogue and the upstream set (rebuilt per change)."""

    def resolve(self, name: str, server: str | None = None) -> Route:
        """Raises ``ServerUnavailableError`` for a known server that is not serving, else routing errors."""
        ...

    @property
    def features(self) -> FeatureCatalog: ...

    def servers_with(self, capability: str) -> list[str]:
        """Exposed servers whose capabilities include ``capability`` (``prompts``, ``resources``...)."""
        ...

    def connection(self, server: str) -> UpstreamConnection:
        """The live connection; raises ``ServerNotFoundError`` / ``ServerUnavailableError``."""
        ...

    def record_call(self, server: str, *, failed: bool, error: UpstreamError | None = None) -> None:
        """Count one call that reached ``server``; ``error`` is what a failed one ended with
        (its supervisor tells a transport failure from the upstream's own error)."""
        ...


@dataclass(frozen=True)
class Invocation:
    """One request on its way upstream, as policy stages see it."""

    method: str
    server: str
    target: str
    """The tool or prompt name, or resource URI, at the upstream."""
    caller: Caller
    route: Route | None = None
    arguments: Mapping[str, Any] | None = None
    """The call's arguments as the client sent them (tools and prompts): policies and the
    audit read them."""
    resumed: bool = False
    """The retry of a call that asked the client back (it carries ``inputResponses`` or
    ``requestState``): its result is never cached."""


Next = Callable[[], Awaitable[Any]]
Stage = Callable[[Invocation, Next], Awaitable[Any]]
MetaHook = Callable[[types.RequestParamsMeta | None], types.RequestParamsMeta | None]
"""Rewrites the ``_meta`` of a request on its way upstream (tracing puts ``traceparent`` there)."""


@runtime_checkable
class ErrorStage(Protocol):
    """A stage that leaves a successful call alone and only acts on an ``UpstreamError``
    (as ``on_error``, before it is raised on). A pipeline of such stages alone can settle a
    call from a callback (``settled``), without a coroutine per call."""

    async def __call__(self, invocation: Invocation, send: Next) -> Any: ...

    def on_error(self, invocation: Invocation, exc: UpstreamError) -> None: ...


@runtime_checkable
class WatchStage(Protocol):
    """A stage that only watches: it never changes a call or its outcome, and can be told of a
    call answered by callback (``on_settled``, with the ``time.perf_counter()`` it started at)
    as well as wrap one (``__call__``). The audit is one."""

    async def __call__(self, invocation: Invocation, send: Next) -> Any: ...

    def on_settled(self, invocation: Invocation, outcome: object, started: float) -> None: ...


@runtime_checkable
class GateStage(Protocol):
    """A stage that decides before the call whether it may go at all (``admit`` raises an
    ``AggregatorError`` to refuse) and otherwise leaves it alone; a callback-settled call
    passes ``admit`` first."""

    async def __call__(self, invocation: Invocation, send: Next) -> Any: ...

    def admit(self, invocation: Invocation) -> None: ...


@runtime_checkable
class ScreenStage(Protocol):
    """A gate that also judges what comes back (``screen``: the result model, or the raw bytes
    of the upstream's answer on the fast path, or the upstream's ``UpstreamCallError``) and may
    change it or refuse it (raising an ``AggregatorError``). Synchronous, so a callback-settled
    call is screened too; ``screen_async`` the same with a large outcome judged in a worker
    thread, for an outcome ``off_loop`` says is one. The guardrails are one."""

    async def __call__(self, invocation: Invocation, send: Next) -> Any: ...

    def admit(self, invocation: Invocation) -> None: ...

    def screen(self, invocation: Invocation, outcome: T) -> T: ...

    async def screen_async(self, invocation: Invocation, outcome: T) -> T: ...

    def off_loop(self, invocation: Invocation, outcome: object) -> bool: ...


class CallPipeline:
    """Routes and forwards every client request bound for an upstream."""

    def __init__(
        self,
        routes: Routes,
        stages: Sequence[Stage] = (),
        *,
        outgoing_meta: MetaHook | None = None,
        raw_ok: bool = True,
    ) -> None:
        self._routes = routes
        self._stages = tuple(stages)
        self._gates = tuple(stage for stage in self._stages if isinstance(stage, GateStage))
        self._screens = tuple(stage for stage in self._stages if isinstance(stage, ScreenStage))
        # Sorted once: a runtime protocol check per stage and call would show on the fast path.
        self._on_error = tuple(stage for stage in self._stages if isinstance(stage, ErrorStage))
        self._watchers = tuple(stage for stage in self._stages if isinstance(stage, WatchStage))
        self.errors_only = all(isinstance(stage, ErrorStage | GateStage | WatchStage) for stage in self._stages)
        """Whether every stage is an ``ErrorStage``, a ``GateStage`` or a ``WatchStage``: then
        ``admit`` and ``settled`` may stand in for ``through``."""
        self.per_call = any(getattr(stage, "reads_caller", True) for stage in self._watchers)
        """Whether a stage reads the call's own details (caller, arguments): then the fast path
        makes an ``Invocation`` per call instead of reusing its route's. A ``WatchStage`` that
        says ``reads_caller = False`` sees only the route's (server, target, method)."""
        self.timed = bool(self._watchers)
        """Whether a stage wants each call's start time (``settled``'s ``started``)."""
        self.raw_ok = raw_ok
        """False when a stage needs what only the full pipeline gives (a span around the
        upstream request, its ``_meta`` rewritten): the fast path then declines every call."""
        self._outgoing_meta = outgoing_meta

    @property
    def stages(self) -> tuple[Stage, ...]:
        return self._stages

    def admit(self, invocation: Invocation) -> None:
        """Run the gates of a call about to be settled by callback; raises their refusal."""
        for gate in self._gates:
            gate.admit(invocation)

    @property
    def meta_hook(self) -> MetaHook | None:
        """What rewrites the ``_meta`` of requests going upstream (a pipeline over other routes shares it)."""
        return self._outgoing_meta

    def outgoing(
        self, meta: types.RequestParamsMeta | None, caller: Caller = NO_CALLER
    ) -> types.RequestParamsMeta | None:
        """``meta`` as it goes upstream in the current context (changed only by a hook), with
        ``caller``'s capabilities declared (a 2026-07-28 upstream decides by them; see
        ``caller_capabilities``)."""
        out = meta if self._outgoing_meta is None else self._outgoing_meta(meta)
        if caller.capabilities is None:
            return out
        stamped = {**(out or {}), types.CLIENT_CAPABILITIES_META_KEY: declared(caller.capabilities)}
        return cast(types.RequestParamsMeta, stamped)

    def settled(
        self, invocation: Invocation, outcome: T | AggregatorError, started: float = 0.0
    ) -> T | AggregatorError:
        """What ``through`` would have made of a call that ended with ``outcome``, for a call
        answered by callback (only while ``errors_only``): counted for metrics, an
        ``UpstreamError`` passed through the stages' ``on_error``, and every outcome shown to
        the ``WatchStage``s (``started``: the call's ``time.perf_counter()`` at its start).
        A result, or the upstream's own error, goes through the ``ScreenStage``s first (it may
        come back changed, or refused)."""
        if self._screens and (not isinstance(outcome, AggregatorError) or isinstance(outcome, UpstreamCallError)):
            try:
                for screen in self._screens:
                    outcome = screen.screen(invocation, outcome)
            except AggregatorError as exc:
                outcome = exc
        return self._counted(invocation, outcome, started)

    @property
    def screening(self) -> bool:
        """Whether a stage judges results (then a callback-settled call may be settled later)."""
        return bool(self._screens)

    def settles_later(self, invocation: Invocation, outcome: object) -> bool:
        """Whether a screen would judge ``outcome`` off the event loop: then a call answered by
        callback is settled by ``settled_later``, from a task, not by ``settled``."""
        return any(screen.off_loop(invocation, outcome) for screen in self._screens)

    async def settled_later(
        self, invocation: Invocation, outcome: T | AggregatorError, started: float = 0.0
    ) -> T | AggregatorError:
        """``settled``, with the screens judging in a worker thread what is large."""
        try:
            for screen in self._screens:
                outcome = await screen.screen_async(invocation, outcome)
        except AggregatorError as exc:
            outcome = exc
        return self._counted(invocation, outcome, started)

    def _counted(self, invocation: Invocation, outcome: T | AggregatorError, started: float) -> T | AggregatorError:
        if isinstance(outcome, UpstreamError):
            for stage in self._on_error:
                stage.on_error(invocation, outcome)
            self._routes.record_call(invocation.server, failed=True, error=outcome)
        elif not isinstance(outcome, AggregatorError):
            self._routes.record_call(invocation.server, failed=False)
        for watcher in self._watchers:
            watcher.on_settled(invocation, outcome, started)
        return outcome

    async def through(self, invocation: Invocation, send: Next) -> Any:
        """Run ``send`` behind the policy stages, counted for metrics (the raw fast path enters here too)."""

        stages = self._stages

        async def step(i: int) -> Any:
            if i == len(stages):
                return await send()
            return await stages[i](invocation, lambda: step(i + 1))

        token = current_caller.set(invocation.caller)
        try:
            # One stage (the usual: error scrubbing) takes ``send`` itself: a relayed call is
            # short enough that a coroutine and a closure per call show.
            result = await (stages[0](invocation, send) if len(stages) == 1 else step(0))
        except UpstreamError as exc:
            self._routes.record_call(invocation.server, failed=True, error=exc)
            raise
        finally:
            current_caller.reset(token)
        self._routes.record_call(invocation.server, failed=False)
        return result

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        server: str | None = None,
        caller: Caller = NO_CALLER,
        progress: ProgressRelay | None = None,
        meta: types.RequestParamsMeta | None = None,
        input_responses: types.InputResponses | None = None,
        request_state: str | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """One ``tools/call`` by any of its names. Raises routing and ``UpstreamError``s."""
        route = self._routes.resolve(name, server)
        conn = self._routes.connection(route.server)
        relay = progress or caller.progress
        asks_back = caller.asks_back

        async def send(responses: types.InputResponses | None, state: str | None) -> Any:
            return await conn.call_tool(
                route.tool,
                arguments,
                progress=relay,
                meta=self.outgoing(meta, caller),
                input_responses=responses,
                request_state=state,
                tag=caller,
                asks_back=asks_back,
            )

        resumed = input_responses is not None or request_state is not None
        invocation = Invocation("tools/call", route.server, route.tool, caller, route, arguments, resumed)
        result: types.CallToolResult | types.InputRequiredResult = await self.through(
            invocation, lambda: self._settle(conn.name, caller, send, input_responses, request_state)
        )
        if isinstance(result, types.CallToolResult):
            result = shown_result(result, functools.partial(self._routes.features.shown_uri, route.server))
        return result

    async def call_tool_result(
        self, name: str, arguments: dict[str, Any] | None = None, **kw: Any
    ) -> types.CallToolResult:
        """``call_tool`` for paths that need a final result (the caller cannot take ``InputRequiredResult``)."""
        caller: Caller = kw.pop("caller", NO_CALLER)
        if caller.relay_input_required:
            caller = dataclasses.replace(caller, relay_input_required=False)
        result = await self.call_tool(name, arguments, caller=caller, **kw)
        assert isinstance(result, types.CallToolResult)  # _settle answers every InputRequiredResult
        return result

    async def read_resource(
        self,
        uri: str,
        *,
        caller: Caller = NO_CALLER,
        meta: types.RequestParamsMeta | None = None,
        input_responses: types.InputResponses | None = None,
        request_state: str | None = None,
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        """``resources/read`` by the URI a client saw; contents come back under that URI."""
        route = self._route_resource(uri)
        conn = self._routes.connection(route.server)

        async def send(responses: types.InputResponses | None, state: str | None) -> Any:
            params = types.ReadResourceRequestParams(
                uri=route.uri,
                input_responses=responses,
                request_state=state,
                _meta=upstream_meta(self.outgoing(meta, caller), modern=conn.modern),
            )
            return await conn.send(types.ReadResourceRequest(params=params), _READ_RESULT, tag=caller)

        invocation = Invocation("resources/read", route.server, route.uri, caller)
        result = await self.through(
            invocation, lambda: self._settle(conn.name, caller, send, input_responses, request_state)
        )
        if isinstance(result, types.ReadResourceResult) and route.uri != uri:
            contents = [c.model_copy(update={"uri": uri}) if str(c.uri) == route.uri else c for c in result.contents]
            result = result.model_copy(update={"contents": contents})
        return result  # type: ignore[no-any-return]

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, str] | None = None,
        *,
        caller: Caller = NO_CALLER,
        meta: types.RequestParamsMeta | None = None,
        input_responses: types.InputResponses | None = None,
        request_state: str | None = None,
    ) -> types.GetPromptResult | types.InputRequiredResult:
        """``prompts/get`` by exposed, canonical or the upstream's own (unique) name."""
        route = self._routes.features.route_prompt(name)
        conn = self._routes.connection(route.server)

        async def send(responses: types.InputResponses | None, state: str | None) -> Any:
            params = types.GetPromptRequestParams(
                name=route.name,
                arguments=arguments,
                input_responses=responses,
                request_state=state,
                _meta=upstream_meta(self.outgoing(meta, caller), modern=conn.modern),
            )
            return await conn.send(types.GetPromptRequest(params=params), _PROMPT_RESULT, tag=caller)

        invocation = Invocation("prompts/get", route.server, route.name, caller, None, arguments)
        result: types.GetPromptResult | types.InputRequiredResult = await self.through(
            invocation, lambda: self._settle(conn.name, caller, send, input_responses, request_state)
        )
        return result

    async def complete(
        self, params: types.CompleteRequestParams, *, caller: Caller = NO_CALLER
    ) -> types.CompleteResult:
        """``completion/complete``, routed by its reference (a prompt, or a resource template)."""
        ref = params.ref
        new_ref: types.PromptReference | types.ResourceTemplateReference
        if isinstance(ref, types.PromptReference):
            prompt = self._routes.features.route_prompt(ref.name)
            server, target = prompt.server, prompt.name
            new_ref = ref.model_copy(update={"name": prompt.name})
        else:
            owner = self._routes.features.route_template(ref.uri)
            if owner is not None:
                server, target, new_ref = owner, ref.uri, ref
            else:
                route = self._route_resource(ref.uri)
                server, target = route.server, route.uri
                new_ref = ref.model_copy(update={"uri": route.uri})
        conn = self._routes.connection(server)
        request = types.CompleteRequest(params=params.model_copy(update={"ref": new_ref}))
        invocation = Invocation("completion/complete", server, target, caller)
        result: types.CompleteResult = await self.through(
            invocation, lambda: conn.send(request, types.CompleteResult, tag=caller)
        )
        return result

    async def subscribe(self, uri: str, *, subscribed: bool, caller: Caller = NO_CALLER) -> None:
        """Watch a resource (by the URI the client saw) on the server that owns it."""
        route = self._route_resource(uri)
        conn = self._routes.connection(route.server)
        method = "resources/subscribe" if subscribed else "resources/unsubscribe"
        invocation = Invocation(method, route.server, route.uri, caller)
        await self.through(invocation, lambda: conn.set_subscription(route.uri, subscribed=subscribed, tag=caller))

    async def forward(self, server: str, request: types.ClientRequest, result_type: type[T], *, what: str) -> T:
        """A request to one named server (subscriptions, logging levels) through the stages."""
        conn = self._routes.connection(server)
        invocation = Invocation(request.method, server, what, NO_CALLER)
        result: T = await self.through(invocation, lambda: conn.send(request, result_type))
        return result

    def _route_resource(self, uri: str) -> ResourceRoute:
        route = self._routes.features.route_resource(uri, self._routes.servers_with("resources"))
        if route.server not in self._routes.servers_with("resources"):
            raise ResourceNotFoundError(uri)
        return route

    async def _settle(
        self,
        server: str,
        caller: Caller,
        send: Callable[[types.InputResponses | None, str | None], Awaitable[Any]],
        responses: types.InputResponses | None,
        state: str | None,
    ) -> Any:
        """Send, then answer ``InputRequiredResult`` rounds unless the caller takes them itself."""
        result = await send(responses, state)
        rounds = 0
        while isinstance(result, types.InputRequiredResult) and not caller.relay_input_required:
            rounds += 1
            if rounds > MAX_INPUT_ROUNDS:
                raise UpstreamCallError(
                    server, f"asked for input more than {MAX_INPUT_ROUNDS} rounds", code=types.INTERNAL_ERROR
                )
            requests = result.input_requests or {}
            if not requests:
                await anyio.sleep(_STATE_ONLY_PAUSE_SECS)  # the upstream is working; poll politely
            answers = await _answer_all(server, caller, requests)
            result = await send(answers or None, result.request_state)
        return result


async def _answer_all(server: str, caller: Caller, requests: types.InputRequests) -> types.InputResponses:
    answers: dict[str, types.InputResponse | types.ErrorData] = {}

    async def one(key: str, request: types.InputRequest) -> None:
        answers[key] = await caller.answer(request)

    async with anyio.create_task_group() as tg:
        for key, request in requests.items():
            tg.start_soon(one, key, request)
    out: dict[str, types.InputResponse] = {}
    for key, answer in answers.items():
        if isinstance(answer, types.ErrorData):
            raise UpstreamCallError(
                server, f"{requests[key].method} could not be answered: {answer.message}", code=answer.code
            )
        out[key] = answer
    return out


_READ_RESULT: TypeAdapter[types.ReadResourceResult | types.InputRequiredResult] = TypeAdapter(
    types.ReadResourceResult | types.InputRequiredResult
)
_PROMPT_RESULT: TypeAdapter[types.GetPromptResult | types.InputRequiredResult] = TypeAdapter(
    types.GetPromptResult | types.InputRequiredResult
)
