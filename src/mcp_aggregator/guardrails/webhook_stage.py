"""``WebhookStage``: guardrails that ask the operator's own service (``kind: webhook``).

The service gets the call (``where: arguments``, with ``arguments``) or its result
(``where: results``, with ``result``) as JSON, with the rule, method, server, tool, client
and profile, and answers ``{"decision": "allow"}``, ``{"decision": "deny", "reason": ...}``
or ``{"decision": "replace", "arguments" | "result": ...}``. A service that does not answer
within ``timeout_secs``, answers an HTTP error or something else follows the rule's failure
policy: ``closed`` (the default for ``block`` rules) refuses, ``open`` lets it pass, recorded.
``deny`` refuses under a ``block`` or ``mask`` rule and is only recorded under ``flag``.

Awaiting a service needs the full pipeline: with a webhook rule the gateway turns the fast
path off (``raw_ok``), and this stage wraps the local rules' ``GuardStage``.
"""

from __future__ import annotations

import logging
from collections.abc import MutableMapping
from typing import Any, Final

import httpx
import mcp_types as types
from pydantic import ValidationError

from mcp_aggregator.catalog.naming import namespace
from mcp_aggregator.errors import GuardrailBlockedError
from mcp_aggregator.guardrails.config import FailurePolicy, GuardAction, GuardKind, GuardPlace
from mcp_aggregator.guardrails.decision import Decision
from mcp_aggregator.guardrails.guard import CompiledRule
from mcp_aggregator.guardrails.guard_stage import TASK_RESULT, TOOL_RESULTS, GuardStage, blocked_result
from mcp_aggregator.relay.pipeline import Invocation, Next

logger = logging.getLogger(__name__)

_WITH_RESULTS: Final = frozenset((*TOOL_RESULTS, "prompts/get", "resources/read"))


class WebhookFailure(Exception):
    """The service could not be asked, or answered something that is not a verdict."""


class WebhookStage:
    """See the module docstring. ``client`` is the gateway's, closed with it."""

    def __init__(self, local: GuardStage, client: httpx.AsyncClient) -> None:
        self.local = local
        self._client = client

    async def __call__(self, invocation: Invocation, send: Next) -> Any:
        self.local.admit(invocation)
        if invocation.method in ("tools/call", "prompts/get") and invocation.arguments:
            await self._arguments(invocation)
        result = await self.local.screen_async(invocation, await self.local.sent(invocation, send))
        if invocation.method in _WITH_RESULTS and (
            isinstance(result, types.Result) or (isinstance(result, dict) and invocation.method == TASK_RESULT)
        ):
            result = await self._result(invocation, result)
        return result

    async def _arguments(self, invocation: Invocation) -> None:
        arguments = invocation.arguments
        assert arguments is not None
        for rule in self._hooks(GuardPlace.ARGUMENTS, invocation):
            verdict, value = await self._ask(rule, invocation, GuardPlace.ARGUMENTS, {"arguments": dict(arguments)})
            if verdict is None:
                continue
            self.local.decided(invocation, [verdict])
            if verdict.found == ("replaced",) and isinstance(value, dict) and isinstance(arguments, MutableMapping):
                arguments.clear()
                arguments.update(value)
            elif verdict.action is GuardAction.BLOCK:
                raise GuardrailBlockedError(
                    verdict.rule, namespace(invocation.server, invocation.target), verdict.explanation
                )

    async def _result(self, invocation: Invocation, result: types.Result | dict[str, Any]) -> Any:
        """``result`` as the hooks leave it: a model stays a model, a task's wire JSON stays JSON."""
        for rule in self._hooks(GuardPlace.RESULTS, invocation):
            shown = (
                result if isinstance(result, dict) else result.model_dump(mode="json", by_alias=True, exclude_none=True)
            )
            verdict, value = await self._ask(rule, invocation, GuardPlace.RESULTS, {"result": shown})
            if verdict is None:
                continue
            self.local.decided(invocation, [verdict])
            if verdict.found == ("replaced",) and isinstance(value, dict):
                kind = types.CallToolResult if isinstance(result, dict) else type(result)
                try:
                    replaced = kind.model_validate(value)
                except ValidationError:
                    logger.warning("guardrail %r: the webhook's replacement is not a valid result", rule.rule.name)
                    result = self._refused(invocation, verdict, result)
                else:
                    result = value if isinstance(result, dict) else replaced
            elif verdict.action is GuardAction.BLOCK:
                result = self._refused(invocation, verdict, result)
        return result

    def _refused(self, invocation: Invocation, verdict: Decision, result: types.Result | dict[str, Any]) -> Any:
        """The error result in place of a refused tool's ``result`` (in its form); raises for another's."""
        if invocation.method not in TOOL_RESULTS:
            raise GuardrailBlockedError(
                verdict.rule, namespace(invocation.server, invocation.target), verdict.explanation
            )
        if isinstance(result, dict):
            return blocked_result(verdict, result)
        return types.CallToolResult.model_validate(blocked_result(verdict))

    def _hooks(self, place: GuardPlace, invocation: Invocation) -> list[CompiledRule]:
        return [c for c in self.local.rules(place, invocation) if c.rule.kind is GuardKind.WEBHOOK]

    async def _ask(
        self, compiled: CompiledRule, invocation: Invocation, where: GuardPlace, payload: dict[str, Any]
    ) -> tuple[Decision | None, Any]:
        """The decision the service's answer makes (None: allowed) and its replacement value."""
        rule = compiled.rule
        identity = invocation.caller.identity
        body = {
            "rule": rule.name,
            "where": where.value,
            "method": invocation.method,
            "server": invocation.server,
            "tool": invocation.target,
            "client": identity.name,
            "profile": identity.profile,
            **payload,
        }
        try:
            answer = await self._post(str(rule.url), body, rule.timeout_secs)
        except WebhookFailure as exc:
            closed = rule.failure_policy is FailurePolicy.CLOSED
            logger.warning(
                "guardrail %r: the webhook failed (%s); failing %s", rule.name, exc, rule.failure_policy.value
            )
            action = GuardAction.BLOCK if closed else GuardAction.FLAG
            return Decision(rule.name, action, rule.kind, where, ("unreachable",), (str(exc)[:200],)), None
        decision = answer.get("decision")
        if decision == "allow":
            return None, None
        if decision == "deny":
            reason = answer.get("reason")
            reasons = (reason[:500],) if isinstance(reason, str) and reason else ()
            action = GuardAction.FLAG if rule.action is GuardAction.FLAG else GuardAction.BLOCK
            return Decision(rule.name, action, rule.kind, where, ("denied",), reasons), None
        key = "arguments" if where is GuardPlace.ARGUMENTS else "result"
        return Decision(rule.name, GuardAction.MASK, rule.kind, where, ("replaced",)), answer.get(key)

    async def _post(self, url: str, body: dict[str, Any], limit_secs: float) -> dict[str, Any]:
        try:
            response = await self._client.post(url, json=body, timeout=limit_secs)
        except httpx.HTTPError as exc:
            raise WebhookFailure(f"{type(exc).__name__}: {exc}") from exc
        if response.status_code // 100 != 2:
            raise WebhookFailure(f"HTTP {response.status_code}")
        try:
            answer = response.json()
        except ValueError as exc:
            raise WebhookFailure("the answer is not JSON") from exc
        if not isinstance(answer, dict) or answer.get("decision") not in ("allow", "deny", "replace"):
            raise WebhookFailure("the answer has no decision: allow, deny or replace")
        if answer["decision"] == "replace" and not isinstance(answer.get("arguments", answer.get("result")), dict):
            raise WebhookFailure("a replace answer needs an object under arguments or result")
        return answer


def _blocked(invocation: Invocation, verdict: Decision) -> GuardrailBlockedError:
    return GuardrailBlockedError(verdict.rule, namespace(invocation.server, invocation.target), verdict.explanation)
