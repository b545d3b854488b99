"""Bridging a 2026-07-28 client to an upstream that asks back in the middle of a call.

A modern client cannot be sent a request while its call runs: it expects an
``InputRequiredResult`` and retries with ``inputResponses``. A 2025-11-25 upstream, or a
facade call, asks back mid-call instead. So the call runs on in a task of its own, parked
here; each question it asks is answered to the client as an ``InputRequiredResult`` whose
``requestState`` names the parked call, and the client's retry delivers the answers to the
waiting upstream request and waits for the next question or the result.

Parked calls live in this process: behind a load balancer the retry must reach the same
replica. With a ``StateSeal`` (HTTP with sealed sessions) the state is sealed and names its
replica and the address it is reached at, so a retry that reaches another one is sent on to
it (``Forward``, given by the server the retry came to); one whose replica cannot be reached
(it died) or named no address is refused at once with an error telling the client to call
again without ``requestState``; it never waits.
A call whose client never comes back is given up after ``ttl_secs``: its pending questions
are answered with an error, which the upstream sees.
"""

from __future__ import annotations

import logging
import math
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import anyio
import mcp_types as types
from anyio.abc import TaskGroup, TaskStatus

from mcp_aggregator.errors import InvalidInputError
from mcp_aggregator.sessions.request_state_seal import OpenedState, StateOwner

logger = logging.getLogger(__name__)

STATE_PREFIX: Final = "mcp-aggregator/parked/"
"""Marks a ``requestState`` the gateway issued (an upstream's own state passes untouched)."""

Work = Callable[["ParkedCall"], Awaitable[Any]]
Forward = Callable[[str], Awaitable[Any]]
"""Sends a retry on to the replica reached at the given base URL; answers what that replica
answered, or ``None`` when it cannot be reached."""

RESTART = "call the tool again, without requestState and inputResponses"


class StateSeal(Protocol):
    """Seals a parked call's token into its ``requestState`` (``sessions.RequestStateSeal``)."""

    def seal(self, token: str) -> str: ...

    def open(self, sealed: str) -> OpenedState: ...


@dataclass
class _Question:
    request: types.InputRequest
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: types.InputResponse | types.ErrorData | None = None


class ParkedCall:
    """One call running for a modern client, and the questions it has asked."""

    def __init__(self, token: str, ttl_secs: float, state: str | None = None) -> None:
        self.token = token
        self.state = state or STATE_PREFIX + token
        self._ttl = ttl_secs
        self._questions: dict[str, _Question] = {}
        self._unsent: list[str] = []
        self._changed = anyio.Event()
        self._done = False
        self._result: Any = None
        self._error: BaseException | None = None
        self.collected = anyio.Event()

    async def ask(self, request: types.InputRequest) -> types.InputResponse | types.ErrorData:
        """Called by the running call: queue a question and wait for the client's answer."""
        key = f"q{len(self._questions) + 1}"
        question = _Question(request)
        self._questions[key] = question
        self._unsent.append(key)
        self._wake()
        with anyio.move_on_after(self._ttl):
            await question.answered.wait()
        if question.answer is None:
            return types.ErrorData(code=types.INTERNAL_ERROR, message="the client did not answer in time")
        return question.answer

    def finish(self, result: Any = None, error: BaseException | None = None) -> None:
        self._done, self._result, self._error = True, result, error
        self._wake()

    def deliver(self, responses: types.InputResponses | None) -> None:
        """The client's answers, keyed as the questions it was sent; unknown keys are refused."""
        for key, answer in (responses or {}).items():
            question = self._questions.get(key)
            if question is None:
                raise InvalidInputError(f"inputResponses.{key}", "no such pending input request")
            if not question.answered.is_set():
                question.answer = answer
                question.answered.set()

    async def next_outcome(self) -> Any:
        """The result, or an ``InputRequiredResult`` with every question not yet sent.

        Raises what the call raised.
        """
        while True:
            if self._unsent:
                keys, self._unsent = self._unsent, []
                requests = {k: self._questions[k].request for k in keys}
                return types.InputRequiredResult(input_requests=requests, request_state=self.state)
            if self._done:
                if self._error is not None:
                    raise self._error
                return self._result
            changed = self._changed
            await changed.wait()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()


class ParkedCalls:
    """Runs parked calls in a task group of their own; ``run`` it in the server's task group."""

    def __init__(self, *, ttl_secs: float = 300.0) -> None:
        self._ttl = ttl_secs
        self.seal: StateSeal | None = None
        self._calls: dict[str, ParkedCall] = {}
        self._tg: TaskGroup | None = None

    async def run(self, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
        async with anyio.create_task_group() as tg:
            self._tg = tg
            task_status.started()
            try:
                await anyio.sleep(math.inf)
            finally:
                self._tg = None

    @property
    def running(self) -> bool:
        return self._tg is not None

    def __len__(self) -> int:
        return len(self._calls)

    async def start(self, work: Work) -> Any:
        """Run ``work(call)`` parked; return its result, or its first ``InputRequiredResult``."""
        if self._tg is None:
            raise RuntimeError("ParkedCalls is not running")
        token = secrets.token_urlsafe(18)
        state = STATE_PREFIX + self.seal.seal(token) if self.seal is not None else None
        call = ParkedCall(token, self._ttl, state)
        self._calls[call.token] = call
        self._tg.start_soon(self._drive, call, work)
        return await self._outcome(call)

    async def resume(
        self, state: str, responses: types.InputResponses | None, *, forward: Forward | None = None
    ) -> Any:
        """Deliver a modern client's retry to its parked call; one whose call waits on another
        replica goes there through ``forward``. Raises ``InvalidInputError``."""
        token = state.removeprefix(STATE_PREFIX)
        if self.seal is not None:
            opened = self.seal.open(token)
            if opened.owner is StateOwner.ELSEWHERE and opened.home is not None and forward is not None:
                answered = await forward(opened.home)
                if answered is not None:
                    return answered
            if opened.owner is StateOwner.ELSEWHERE:
                raise InvalidInputError(
                    "requestState",
                    "the call it continues waits on another gateway replica (gone, or the retry was "
                    f"balanced away from it) and cannot go on here: {RESTART}",
                )
            if opened.owner is StateOwner.NOBODY or opened.token is None:
                raise InvalidInputError("requestState", f"not one this gateway issued, or expired: {RESTART}")
            token = opened.token
        call = self._calls.get(token)
        if call is None:
            raise InvalidInputError("requestState", f"unknown or expired request state: {RESTART}")
        call.deliver(responses)
        return await self._outcome(call)

    async def _outcome(self, call: ParkedCall) -> Any:
        try:
            outcome = await call.next_outcome()
        except BaseException:
            self._forget(call)
            raise
        if not isinstance(outcome, types.InputRequiredResult):
            self._forget(call)
        return outcome

    def _forget(self, call: ParkedCall) -> None:
        self._calls.pop(call.token, None)
        call.collected.set()

    async def _drive(self, call: ParkedCall, work: Work) -> None:
        try:
            result = await work(call)
        except Exception as exc:  # boundary: the error belongs to the client's retry, not to this task
            call.finish(error=exc)
        else:
            call.finish(result)
        # Keep an answer nobody collected for one TTL, then forget it.
        with anyio.move_on_after(self._ttl):
            await call.collected.wait()
        self._forget(call)


def is_parked_state(state: str | None) -> bool:
    return state is not None and state.startswith(STATE_PREFIX)
