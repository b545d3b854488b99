"""``PolicyStage``: the pipeline's policy stage, refusing the calls a CEL rule denies.

A gate (``GateStage``): it decides before the call goes out and otherwise leaves it alone,
so the fast path's callback lane runs it too (``CallPipeline.admit``). Only ``tools/call``
is judged; what a rule sees as ``tool`` is read from the whole catalogue by the call's
server and upstream tool name, once per catalogue version.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mcp_aggregator.catalog import Catalog
from mcp_aggregator.catalog.naming import namespace
from mcp_aggregator.errors import PolicyDeniedError
from mcp_aggregator.identity.client_identity import ClientIdentity
from mcp_aggregator.identity.config import PolicyRule
from mcp_aggregator.identity.policies import Policies, client_facts, tool_facts
from mcp_aggregator.relay.pipeline import Invocation, Next

_TOOLS_CALL = "tools/call"


class PolicyStage:
    """Evaluates ``policies`` for every ``tools/call`` (see the module docstring)."""

    def __init__(self, policies: Policies, catalog: Callable[[], Catalog]) -> None:
        self.policies = policies
        self._catalog = catalog
        self._seen: Catalog | None = None
        self._facts: dict[tuple[str, str], dict[str, Any]] = {}

    async def __call__(self, invocation: Invocation, send: Next) -> Any:
        self.admit(invocation)
        return await send()

    def admit(self, invocation: Invocation) -> None:
        """Raises ``PolicyDeniedError`` naming the first rule that denies the call."""
        if invocation.method != _TOOLS_CALL:
            return
        tool = self.tool(invocation.server, invocation.target)
        identity = invocation.caller.identity
        found = self.policies.denial(client_facts(identity), identity.profile, tool, invocation.arguments)
        if found is not None:
            rule, reason = found
            raise PolicyDeniedError(rule.name, tool["name"], reason=reason, message=rule.message)

    def never_allowed(self, identity: ClientIdentity, client: Mapping[str, Any], server: str, tool: str) -> bool:
        """Whether a rule that does not read arguments denies every call of ``identity`` to the tool."""
        facts = self.tool(server, tool)
        return self.policies.denial(client, identity.profile, facts, None, static_only=True) is not None

    def tool(self, server: str, name: str) -> dict[str, Any]:
        catalog = self._catalog()
        if catalog is not self._seen:
            self._seen, self._facts = catalog, {}
        facts = self._facts.get((server, name))
        if facts is None:
            entry = catalog.get(namespace(server, name))
            if entry is not None and entry.server == server:
                facts = tool_facts(server, entry.tool)
            else:
                facts = {"name": f"{server}.{name}", "server": server, "original_name": name, "annotations": {}}
            self._facts[(server, name)] = facts
        return facts


def policy_stages(rules: Sequence[PolicyRule], catalog: Callable[[], Catalog]) -> tuple[PolicyStage, ...]:
    """The policy stage for ``rules`` (none when there are no rules: nothing on the call path)."""
    if not rules:
        return ()
    return (PolicyStage(Policies([(r.name, r.deny, r.message) for r in rules]), catalog),)
