"""``GuardStage``: the guardrails on the call pipeline (arguments on their way out, results
on their way back), the same on the full pipeline and the fast path.

A ``ScreenStage``: ``admit`` judges a call's arguments before it goes, ``screen`` its result
(a result model, or the raw bytes of the upstream's answer), so the fast path's callback lane
applies the same rules without a coroutine. ``mask`` rewrites arguments in place (the call's
own dict, which both paths send), ``block`` refuses arguments with ``GuardrailBlockedError``
and turns a tool's result into an error result naming the rule and the kind of finding.
An upstream's JSON-RPC error reaches the client as a result would: the result rules judge
its message and data too (``screen_error``), masked in place or refused as blocked.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, MutableMapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, TypeVar, cast

import anyio.to_thread
import mcp_types as types
import orjson

from mcp_aggregator.catalog.naming import namespace
from mcp_aggregator.errors import AggregatorError, GuardrailBlockedError, UpstreamCallError
from mcp_aggregator.guardrails.config import GuardPlace
from mcp_aggregator.guardrails.decision import Decision
from mcp_aggregator.guardrails.guard import CompiledRule, Guard, Verdict
from mcp_aggregator.relay.pipeline import Invocation, Next

logger = logging.getLogger(__name__)

T = TypeVar("T")
_TOOLS_CALL: Final = "tools/call"
TASK_RESULT: Final = "tasks/result"
TOOL_RESULTS: Final[frozenset[str]] = frozenset((_TOOLS_CALL, TASK_RESULT))
"""The requests answered with a tool's result: a blocked one becomes an error result."""
_WITH_ARGUMENTS: Final = frozenset((_TOOLS_CALL, "prompts/get"))
_WITH_RESULTS: Final = frozenset((*TOOL_RESULTS, "prompts/get", "resources/read"))

OFF_LOOP_CHARS: Final = 64 << 10
"""A result this long or longer (as JSON) is judged in a worker thread by ``screen_async``:
reading it takes milliseconds that every other call on the event loop would wait."""

DecisionSink = Callable[[Invocation, Sequence[Decision]], None]
"""Told of what the rules decided on a call (the audit notes it)."""


def blocked_text(decision: Decision) -> str:
    return f"Blocked by {decision.explanation}"


def blocked_result(decision: Decision, result: dict[str, Any] | None = None) -> dict[str, Any]:
    """The error result (wire JSON) a tool call gets in place of a blocked ``result``: a
    2026-07-28 result says it is complete, and a task's names its task (``_meta``); the
    error result in its place does too."""
    out: dict[str, Any] = {"content": [{"type": "text", "text": blocked_text(decision)}], "isError": True}
    if result is not None:
        out.update((key, result[key]) for key in ("resultType", "_meta") if key in result)
    return out


def tool_of(invocation: Invocation) -> str | None:
    """The tool whose rules apply to ``invocation``; None (any tool's) for a task's result,
    whose request names the task, not the tool it runs."""
    return None if invocation.method == TASK_RESULT else invocation.target


class GuardStage:
    """See the module docstring. ``sink`` hears every decision (audit); ``guard.counts`` counts them."""

    def __init__(self, guard: Guard, sink: DecisionSink | None = None) -> None:
        self.guard = guard
        self._sink = sink
        self._arguments = guard.watches(GuardPlace.ARGUMENTS)
        self._results = guard.watches(GuardPlace.RESULTS)

    async def __call__(self, invocation: Invocation, send: Next) -> Any:
        self.admit(invocation)
        return await self.screen_async(invocation, await self.sent(invocation, send))

    async def sent(self, invocation: Invocation, send: Next) -> Any:
        """What ``send`` gives; raises the upstream's JSON-RPC error as ``screen_error`` leaves it."""
        try:
            return await send()
        except UpstreamCallError as exc:
            failure = self.screen_error(invocation, exc)
            if failure is exc:
                raise
        raise failure from None  # the upstream's own error quotes what was blocked: not chained

    def admit(self, invocation: Invocation) -> None:
        """Judge the call's arguments; raises ``GuardrailBlockedError`` for a ``block``."""
        if not self._arguments or invocation.method not in _WITH_ARGUMENTS or not invocation.arguments:
            return
        rules = self.rules(GuardPlace.ARGUMENTS, invocation)
        if not rules:
            return
        arguments = invocation.arguments
        verdict = self.guard.judge(rules, dict(arguments), GuardPlace.ARGUMENTS)
        self.decided(invocation, verdict.decisions)
        if verdict.blocked is not None:
            raise GuardrailBlockedError(
                verdict.blocked.rule, namespace(invocation.server, invocation.target), verdict.blocked.explanation
            )
        if verdict.changed and isinstance(arguments, MutableMapping):
            arguments.clear()
            arguments.update(verdict.value)

    def screen(self, invocation: Invocation, outcome: T) -> T:
        """``outcome`` as the client gets it: unchanged, masked, or turned into an error result;
        raises ``GuardrailBlockedError`` for a blocked prompt or resource. ``outcome`` is a
        result model (full pipeline), the raw bytes of the upstream's answer (fast path) or
        a result's wire JSON (a task's result, as the task relay has it). Judged here, on
        the caller's thread: ``screen_async`` takes a large one off the event loop."""
        if isinstance(outcome, UpstreamCallError):
            return self._screened_error(invocation, outcome)
        judging = self._judging(invocation, outcome)
        if judging is None:
            return outcome
        verdict, judged = judging.run()
        return self._settled(invocation, verdict, cast(T, judged))

    async def screen_async(self, invocation: Invocation, outcome: T) -> T:
        """``screen``, with a result of ``OFF_LOOP_CHARS`` or more judged in a worker thread:
        while it is read every other client's call goes on."""
        if isinstance(outcome, UpstreamCallError):
            return self._screened_error(invocation, outcome)
        judging = self._judging(invocation, outcome)
        if judging is None:
            return outcome
        if judging.size < OFF_LOOP_CHARS:
            verdict, judged = judging.run()
        else:
            verdict, judged = await anyio.to_thread.run_sync(judging.run)
        return self._settled(invocation, verdict, cast(T, judged))

    def off_loop(self, invocation: Invocation, outcome: object) -> bool:
        """Whether ``screen_async`` would judge ``outcome`` (an upstream's raw answer) in a
        worker thread: then a callback-settled call must be settled by a task instead."""
        return (
            isinstance(outcome, bytes)
            and len(outcome) >= OFF_LOOP_CHARS
            and self._results
            and invocation.method in _WITH_RESULTS
            and bool(self.rules(GuardPlace.RESULTS, invocation))
        )

    def rules(self, place: GuardPlace, invocation: Invocation) -> tuple[CompiledRule, ...]:
        return self.guard.applying(place, invocation.server, tool_of(invocation), invocation.caller.identity.profile)

    def decided(self, invocation: Invocation, decisions: Sequence[Decision]) -> None:
        if not decisions:
            return
        self.guard.count(decisions)
        for decision in decisions:
            logger.info(
                "%s %s: %s (%s)",
                invocation.method,
                namespace(invocation.server, invocation.target),
                decision.explanation,
                decision.action.value,
            )
        if self._sink is not None:
            self._sink(invocation, decisions)

    def screen_error(self, invocation: Invocation, exc: UpstreamCallError) -> AggregatorError:
        """The error the client gets for the upstream's JSON-RPC error ``exc``: ``exc`` itself,
        its message and data masked in place, or the ``GuardrailBlockedError`` of a block. An
        upstream's error text reaches the client as its result would, so the result rules judge it."""
        rules = self.rules(GuardPlace.RESULTS, invocation)
        if not rules:
            return exc
        verdict = self.guard.judge(rules, {"message": str(exc), "data": exc.data}, GuardPlace.RESULTS)
        self.decided(invocation, verdict.decisions)
        blocked = verdict.blocked
        if blocked is not None:
            return GuardrailBlockedError(
                blocked.rule, namespace(invocation.server, invocation.target), blocked.explanation
            )
        if verdict.changed:
            exc.args = (verdict.value["message"],)
            exc.data = verdict.value["data"]
        return exc

    def _screened_error(self, invocation: Invocation, outcome: T) -> T:
        if not self._results or invocation.method not in _WITH_RESULTS:
            return outcome
        assert isinstance(outcome, UpstreamCallError)
        failure = self.screen_error(invocation, outcome)
        if failure is not outcome:
            raise failure
        return outcome

    def _judging(self, invocation: Invocation, outcome: object) -> _Judging | None:
        """The work of judging ``outcome``, or None when no rule reads it."""
        if not self._results or invocation.method not in _WITH_RESULTS:
            return None
        rules = self.rules(GuardPlace.RESULTS, invocation)
        if not rules:
            return None
        method = invocation.method
        if isinstance(outcome, bytes):
            return _Judging(len(outcome), lambda: self._raw_judged(method, rules, outcome))
        if isinstance(outcome, types.Result) and not isinstance(outcome, types.InputRequiredResult):
            # Written as JSON and read back: the very form the fast path judges (and cheaper
            # than a model dump); a detector's own look for its hints decides whether it reads on.
            raw = outcome.__pydantic_serializer__.to_json(outcome, by_alias=True, exclude_none=True)
            return _Judging(len(raw), lambda: self._model_judged(method, rules, outcome, raw))
        if isinstance(outcome, dict) and method == TASK_RESULT:
            # Only the task's result: a task-augmented tools/call's own answer names the task.
            # Its size is not known without writing it out: judged off the loop.
            return _Judging(OFF_LOOP_CHARS, lambda: self._result_judged(method, rules, outcome, outcome))
        return None

    def _settled(self, invocation: Invocation, verdict: Verdict | None, outcome: T) -> T:
        """``outcome`` once judged: the decisions told; raises ``GuardrailBlockedError`` for a
        blocked prompt or resource (a tool's result was made an error result already)."""
        if verdict is None:
            return outcome
        self.decided(invocation, verdict.decisions)
        blocked = verdict.blocked
        if blocked is not None and invocation.method not in TOOL_RESULTS:
            raise GuardrailBlockedError(
                blocked.rule, namespace(invocation.server, invocation.target), blocked.explanation
            )
        return outcome

    # The ``*_judged`` methods are pure (no decision told, nothing raised): they may run in a
    # worker thread. Each gives the verdict (None: nothing judged) and the outcome as it goes on.

    def _raw_judged(self, method: str, rules: Sequence[CompiledRule], line: bytes) -> tuple[Verdict | None, bytes]:
        try:
            answer = orjson.loads(line)
        except orjson.JSONDecodeError:
            return None, line  # not JSON: the fast path fails the call in the full pipeline's words
        result = answer.get("result") if isinstance(answer, dict) else None
        if not isinstance(result, dict):
            return None, line
        verdict, changed = self._result_judged(method, rules, result, None)
        if changed is None:
            return verdict, line
        answer["result"] = changed
        return verdict, orjson.dumps(answer)

    def _model_judged(
        self, method: str, rules: Sequence[CompiledRule], result: types.Result, raw: bytes
    ) -> tuple[Verdict | None, types.Result]:
        verdict, changed = self._result_judged(method, rules, orjson.loads(raw), None)
        return verdict, result if changed is None else type(result).model_validate(changed)

    def _result_judged(
        self, method: str, rules: Sequence[CompiledRule], result: dict[str, Any], unchanged: T
    ) -> tuple[Verdict | None, dict[str, Any] | T]:
        """The verdict on a result's JSON, and what the client gets: ``unchanged`` when the
        rules change nothing, an error result in place of a blocked tool's result."""
        if result.get("resultType") == "input_required":
            return None, unchanged
        verdict = self.guard.judge(rules, result, GuardPlace.RESULTS)
        blocked = verdict.blocked
        if blocked is not None:
            return verdict, blocked_result(blocked, result) if method in TOOL_RESULTS else unchanged
        return verdict, verdict.value if verdict.changed else unchanged


@dataclass(frozen=True, slots=True)
class _Judging:
    size: int
    """The result's length as JSON: what the rules have to read."""
    run: Callable[[], tuple[Verdict | None, Any]]
    """Pure: the verdict and the outcome as it goes on, of the type judged."""
