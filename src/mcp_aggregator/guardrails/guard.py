"""``Guard``: the rules compiled, and the pure decisions they make on arguments, results and
tool definitions.

Results are judged in their JSON form, whichever path they came by: the full pipeline's
result model is written as JSON, the fast path's raw answer is JSON already, and both are
judged by ``judge``. That is what makes the two paths agree. Parsing JSON costs a tenth of
one look for the secrets' hints, so a result is parsed, its strings looked at once, and
(when nothing is found) passed on as it came.
"""

from __future__ import annotations

import importlib
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from typing import Any, Final

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.guardrails.config import GuardAction, GuardKind, GuardPlace, GuardrailRule, effective_rules
from mcp_aggregator.guardrails.decision import Decision
from mcp_aggregator.guardrails.finding import UNJUDGED, Detector, Finding, Reading, labels, masked
from mcp_aggregator.guardrails.injection_detector import InjectionDetector
from mcp_aggregator.guardrails.json_text import rewritten, strings
from mcp_aggregator.guardrails.pattern_detector import PatternDetector
from mcp_aggregator.guardrails.secret_detector import SecretDetector

_MAX_KEPT: Final = 4096
_UNJUDGED: Final = "past the characters the rule reads of one value (max_judged_chars)"


@dataclass(frozen=True, slots=True)
class CompiledRule:
    rule: GuardrailRule
    detector: Detector | None
    """None for a webhook rule (its service decides)."""

    def applies(self, server: str, tool: str | None, profile: str) -> bool:
        """Whether the rule judges ``server``'s ``tool`` for ``profile`` (``tool`` None: a tool
        not known, as a task's result; then its ``tools:`` filter is not asked)."""
        rule = self.rule
        named = f"{server}.{tool}"
        return (
            any(fnmatchcase(server, glob) for glob in rule.servers)
            and (tool is None or any(fnmatchcase(tool, glob) or fnmatchcase(named, glob) for glob in rule.tools))
            and any(fnmatchcase(profile, glob) for glob in rule.profiles)
        )


@dataclass(slots=True)
class Verdict:
    """What the rules made of one value: the decisions taken, the value as it goes on
    (``value``: changed by ``mask``), and the ``block`` that stops it, if any."""

    value: Any
    decisions: list[Decision] = field(default_factory=list)
    blocked: Decision | None = None

    @property
    def changed(self) -> bool:
        return any(d.action is GuardAction.MASK for d in self.decisions)


def _detector(rule: GuardrailRule) -> Detector | None:
    kind = rule.kind
    if kind is GuardKind.SECRETS:
        return SecretDetector()
    if kind is GuardKind.PII:
        try:
            # Its libraries come with the ``pii`` extra: a gateway without pii rules never loads them.
            module = importlib.import_module("mcp_aggregator.guardrails.pii_detector")
        except ModuleNotFoundError as exc:
            raise ConfigError(
                f"guardrails: rule {rule.name!r} (kind pii) needs {exc.name}: pip install 'mcp-aggregator[pii]'"
            ) from exc
        detector: Detector = module.PiiDetector(rule.entities, rule.region)
        return detector
    if kind is GuardKind.INJECTION:
        return InjectionDetector(blobs=GuardPlace.DESCRIPTIONS in rule.on)
    if kind is GuardKind.PATTERN:
        return PatternDetector(rule.name, rule.patterns)
    return None


class Guard:
    """The rules of one gateway; see the module docstring."""

    def __init__(self, rules: Sequence[GuardrailRule]) -> None:
        compiled = [CompiledRule(rule, _detector(rule)) for rule in rules]
        self.rules = tuple(compiled)
        self._by_place = {place: tuple(c for c in compiled if place in c.rule.on) for place in GuardPlace}
        self._applying: dict[tuple[GuardPlace, str, str | None, str], tuple[CompiledRule, ...]] = {}
        self.counts: defaultdict[tuple[str, str, str, str], int] = defaultdict(int)
        """Decisions since start by (rule, action, kind, where): the metrics."""

    def watches(self, place: GuardPlace) -> bool:
        return bool(self._by_place[place])

    @property
    def hooked(self) -> bool:
        """Whether a webhook rule asks a service (then results and arguments need the awaiting path)."""
        return any(c.detector is None for c in self.rules)

    def applying(self, place: GuardPlace, server: str, tool: str | None, profile: str) -> tuple[CompiledRule, ...]:
        """The rules that judge ``place`` of calls to ``server``'s ``tool`` by ``profile`` (kept
        per triple; ``tool`` None: whatever the tool)."""
        key = (place, server, tool, profile)
        found = self._applying.get(key)
        if found is None:
            if len(self._applying) >= _MAX_KEPT:
                self._applying.clear()
            found = self._applying[key] = tuple(c for c in self._by_place[place] if c.applies(server, tool, profile))
        return found

    def count(self, decisions: Sequence[Decision]) -> None:
        for d in decisions:
            self.counts[(d.rule, d.action.value, d.kind.value, d.where.value)] += 1

    def judge(self, rules: Sequence[CompiledRule], value: Any, where: GuardPlace) -> Verdict:
        """Run the local ``rules`` over every string of the JSON ``value``: masks applied,
        flags and blocks recorded (the first ``block`` stops the value)."""
        verdict = Verdict(value)
        for compiled in rules:
            detector = compiled.detector
            if detector is None:
                continue
            found: list[Finding] = []
            masking = compiled.rule.action is GuardAction.MASK
            budget = [compiled.rule.max_judged_chars]
            # A block or flag decision names the kinds found, not where: the first of each will do.
            reading = Reading(every=masking)

            def rewrite(
                text: str,
                detector: Detector = detector,
                found: list[Finding] = found,
                masking: bool = masking,
                budget: list[int] = budget,
                reading: Reading = reading,
            ) -> str | None:
                hits = _bounded_find(detector, text, budget, reading)
                found.extend(hits)
                return masked(text, hits) if hits and masking else None

            if masking:
                verdict.value = rewritten(verdict.value, rewrite)
            else:
                for text in strings(verdict.value):
                    rewrite(text)
            if not found:
                continue
            rule = compiled.rule
            reasons = tuple(dict.fromkeys(f.reason for f in found if f.reason))
            decision = Decision(rule.name, rule.action, rule.kind, where, tuple(labels(found)), reasons)
            verdict.decisions.append(decision)
            if rule.action is GuardAction.BLOCK:
                verdict.blocked = decision
                break
        return verdict

    def judge_definition(self, server: str, definition: Mapping[str, Any]) -> Verdict:
        """The description rules over a tool's definition (wire JSON, its name left out)."""
        rules = self.applying(GuardPlace.DESCRIPTIONS, server, str(definition.get("name", "")), "*")
        judged = {key: value for key, value in definition.items() if key != "name"}
        verdict = self.judge(rules, judged, GuardPlace.DESCRIPTIONS)
        if verdict.changed:
            verdict.value = {**definition, **verdict.value}
        else:
            verdict.value = definition
        return verdict


def _bounded_find(detector: Detector, text: str, budget: list[int], reading: Reading) -> list[Finding]:
    """``detector``'s findings in as much of ``text`` as ``budget[0]`` characters allow (then
    spent), and an ``unjudged`` finding over the rest: the work on one value is bounded
    whatever its size, and what was not read is not passed as if it had been."""
    left = budget[0]
    if len(text) <= left:
        budget[0] = left - len(text)
        return detector.find(text, reading)  # each detector's find looks cheaply first
    budget[0] = 0
    hits = detector.find(text[:left], reading) if left else []
    hits.append(Finding(UNJUDGED, left, len(text), _UNJUDGED))
    return hits


def guard_for(rules: tuple[GuardrailRule, ...] | None, profiles: Mapping[str, tuple[GuardrailRule, ...]]) -> Guard:
    """The guard of the ``guardrails:`` section (None: absent, the defaults) and the profiles'
    own rules. Raises ``ConfigError`` for a pii rule without the ``pii`` extra installed."""
    return Guard(effective_rules(rules, {name: own for name, own in profiles.items() if own}))
