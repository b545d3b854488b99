"""``ApprovalRules``: which calls a person must approve, decided by pure functions.

``covers`` answers from the server, the tool and the profile alone (kept per name, so a call
under no rule pays a dictionary look-up); ``holding`` then evaluates the rules' CEL ``when``
over the call's arguments. A ``when`` that fails to evaluate holds the call: a rule that
cannot be read never lets a call through unseen.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import TYPE_CHECKING, Any, Final

from mcp_aggregator.identity.policies import compile_cel

if TYPE_CHECKING:
    import cel

    from mcp_aggregator.approvals.config import ApprovalRule

VARIABLES: Final = frozenset({"args", "arguments", "client", "profile", "tool"})
_PROBE: Final = {
    "args": {},
    "arguments": {},
    "client": {"name": "probe", "subject": None, "claims": {}},
    "profile": "default",
    "tool": {"name": "s.t", "server": "s"},
}
_MAX_KEPT: Final = 4096


def compile_when(expression: str) -> cel.Program:
    """The compiled ``when``; raises ``ValueError`` saying what is wrong with it."""
    return compile_cel(expression, VARIABLES, _PROBE)


@dataclass(frozen=True, slots=True)
class CompiledRule:
    rule: ApprovalRule
    profile: str | None
    """The profile whose own rule this is (None: a top-level rule)."""
    when: cel.Program | None

    def covers(self, server: str, tool: str, profile: str) -> bool:
        """Whether the rule may hold ``server``'s ``tool`` for ``profile`` (``when`` not asked)."""
        rule = self.rule
        if self.profile is not None and self.profile != profile:
            return False
        if rule.profiles and not any(fnmatchcase(profile, glob) for glob in rule.profiles):
            return False
        if rule.servers and not any(fnmatchcase(server, glob) for glob in rule.servers):
            return False
        named = f"{server}.{tool}"
        return not rule.tools or any(fnmatchcase(named, glob) for glob in rule.tools)

    def holds(self, context: Mapping[str, Any]) -> bool:
        """Whether ``when`` holds the call (no ``when``, or one that fails to evaluate: it does)."""
        if self.when is None:
            return True
        try:
            verdict = self.when.execute(dict(context))
        except (KeyError, TypeError, ValueError, RuntimeError):
            return True
        return verdict is not False


class ApprovalRules:
    """The configured rules compiled once: the top-level ones, then each profile's own."""

    def __init__(self, rules: Sequence[ApprovalRule], by_profile: Mapping[str, Sequence[ApprovalRule]]) -> None:
        compiled = [CompiledRule(rule, None, _when(rule)) for rule in rules]
        for profile, own in by_profile.items():
            compiled.extend(CompiledRule(rule, profile, _when(rule)) for rule in own)
        self.rules: tuple[CompiledRule, ...] = tuple(compiled)
        self._covering: dict[tuple[str, str, str], tuple[CompiledRule, ...]] = {}

    def __bool__(self) -> bool:
        return bool(self.rules)

    def covering(self, server: str, tool: str, profile: str) -> tuple[CompiledRule, ...]:
        """The rules that may hold the tool for the profile (kept: a pure function of the names)."""
        key = (server, tool, profile)
        found = self._covering.get(key)
        if found is None:
            if len(self._covering) >= _MAX_KEPT:
                self._covering.clear()
            found = self._covering[key] = tuple(r for r in self.rules if r.covers(server, tool, profile))
        return found

    def covers(self, server: str, tool: str, profile: str) -> bool:
        return bool(self.rules) and bool(self.covering(server, tool, profile))

    def holding(
        self, server: str, tool: str, profile: str, client: Mapping[str, Any], arguments: Mapping[str, Any] | None
    ) -> ApprovalRule | None:
        """The first rule that holds this call, or None."""
        covering = self.covering(server, tool, profile)
        if not covering:
            return None
        args = dict(arguments or {})
        context = {
            "args": args,
            "arguments": args,
            "client": client,
            "profile": profile,
            "tool": {"name": f"{server}.{tool}", "server": server},
        }
        for compiled in covering:
            if compiled.holds(context):
                return compiled.rule
        return None


def _when(rule: ApprovalRule) -> cel.Program | None:
    return compile_when(rule.when) if rule.when is not None else None
