"""``PolicyStage``: the pipeline's policy stage, refusing the calls a CEL rule denies.

A gate (``GateStage``): it decides before the call goes out and otherwise leaves it alone,
so the fast path's callback lane runs it too (``CallPipeline.admit``). Only ``tools/call``
is judged; what a rule sees as ``tool`` is read from the whole catalogue by the call's
server and upstream tool name, once per catalogue version.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import mcp_types as types

from mcp_aggregator.catalog import Catalog
from mcp_aggregator.catalog.naming import namespace
from mcp_aggregator.errors import PolicyDeniedError
from mcp_aggregator.identity.client_identity import ClientIdentity
from mcp_aggregator.identity.config import PolicyRule
from mcp_aggregator.identity.policies import Policies, Rule, client_facts, tool_facts
from mcp_aggregator.relay.pipeline import Invocation, Next

_TOOLS_CALL = "tools/call"


_MAX_VERDICTS = 4096


def _claims_key(identity: ClientIdentity) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((key, repr(value)) for key, value in identity.claims.items())) if identity.claims else ()


class PolicyStage:
    """Evaluates ``policies`` for every ``tools/call`` (see the module docstring).

    The verdict of the rules that do not read arguments depends on the client, the profile
    and the tool only: it is kept per catalogue version, so a call evaluates nothing but the
    rules that read its arguments."""

    def __init__(self, policies: Policies, catalog: Callable[[], Catalog]) -> None:
        self.policies = policies
        self._catalog = catalog
        self._seen: Catalog | None = None
        self._facts: dict[tuple[str, str], dict[str, Any]] = {}
        self._verdicts: dict[tuple[object, ...], tuple[Rule, str | None] | None] = {}

    async def __call__(self, invocation: Invocation, send: Next) -> Any:
        self.admit(invocation)
        return await send()

    def admit(self, invocation: Invocation) -> None:
        """Raises ``PolicyDeniedError`` naming the first rule that denies the call."""
        if invocation.method != _TOOLS_CALL:
            return
        identity = invocation.caller.identity
        found = self._static(identity, invocation.server, invocation.target)
        if found is None and self.policies.argument_rules:
            tool = self.tool(invocation.server, invocation.target)
            found = self.policies.denial(client_facts(identity), identity.profile, tool, invocation.arguments)
        if found is not None:
            rule, reason = found
            name = namespace(invocation.server, invocation.target)
            raise PolicyDeniedError(rule.name, name, reason=reason, message=rule.message)

    def never_allowed(self, identity: ClientIdentity, server: str, tool: str) -> bool:
        """Whether a rule that does not read arguments denies every call of ``identity`` to the tool."""
        return self._static(identity, server, tool) is not None

    def _static(self, identity: ClientIdentity, server: str, name: str) -> tuple[Rule, str | None] | None:
        tool = self.tool(server, name)  # first: a new catalogue drops the kept verdicts
        key = (server, name, identity.name, identity.subject, identity.profile, _claims_key(identity))
        if key in self._verdicts:
            return self._verdicts[key]
        found = self.policies.denial(client_facts(identity), identity.profile, tool, None, static_only=True)
        if len(self._verdicts) >= _MAX_VERDICTS:
            self._verdicts.clear()
        self._verdicts[key] = found
        return found

    def tool(self, server: str, name: str) -> dict[str, Any]:
        catalog = self._catalog()
        if catalog is not self._seen:
            self._seen, self._facts, self._verdicts = catalog, {}, {}
        facts = self._facts.get((server, name))
        if facts is None:
            entry = catalog.get(namespace(server, name))
            if entry is not None and entry.server == server:
                facts = tool_facts(server, entry.tool)
            else:
                facts = tool_facts(server, types.Tool(name=name, input_schema={"type": "object"}))
            self._facts[(server, name)] = facts
        return facts


def policy_stages(rules: Sequence[PolicyRule], catalog: Callable[[], Catalog]) -> tuple[PolicyStage, ...]:
    """The policy stage for ``rules`` (none when there are no rules: nothing on the call path)."""
    if not rules:
        return ()
    return (PolicyStage(Policies([(r.name, r.deny, r.message) for r in rules]), catalog),)
