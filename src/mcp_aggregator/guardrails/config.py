"""Settings of the guardrails (the ``guardrails:`` section, and a profile's own).

A rule names a detector (``kind``), where it looks (``on``), what it does with a finding
(``action``) and, optionally, the servers, tools and profiles it applies to (globs). With no
``guardrails:`` section at all the gateway masks secrets in results (``DEFAULT_RULES``);
``guardrails: []`` turns every rule off.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from enum import StrEnum
from typing import Any, Final, Self

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator, model_validator

from mcp_aggregator.guardrails.linear_regex import linear


class GuardKind(StrEnum):
    SECRETS = "secrets"
    PII = "pii"
    INJECTION = "injection"
    PATTERN = "pattern"
    WEBHOOK = "webhook"


class GuardPlace(StrEnum):
    RESULTS = "results"
    ARGUMENTS = "arguments"
    DESCRIPTIONS = "descriptions"


class GuardAction(StrEnum):
    MASK = "mask"
    BLOCK = "block"
    FLAG = "flag"


class FailurePolicy(StrEnum):
    OPEN = "open"
    CLOSED = "closed"


class PiiEntity(StrEnum):
    EMAIL_ADDRESS = "EMAIL_ADDRESS"
    PHONE_NUMBER = "PHONE_NUMBER"
    CREDIT_CARD = "CREDIT_CARD"
    IBAN_CODE = "IBAN_CODE"
    IP_ADDRESS = "IP_ADDRESS"


DEFAULT_MAX_JUDGED_CHARS: Final = 64 << 20
"""As much as an upstream may answer with by default (``serve.max_result_bytes``): by default
every result is read whole."""
_NAME: Final = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")


class GuardrailRule(BaseModel):
    """One rule; see the module docstring. Fields that belong to another kind are refused."""

    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True)

    name: str
    kind: GuardKind
    on: tuple[GuardPlace, ...] = Field(default=(GuardPlace.RESULTS,), min_length=1)
    action: GuardAction = GuardAction.MASK
    entities: tuple[PiiEntity, ...] = ()
    """``pii`` only; empty: every entity."""
    region: str = "US"
    """``pii`` only: the country whose national phone format is read (``+`` numbers always are)."""
    patterns: tuple[str, ...] = ()
    """``pattern`` only: the operator's regular expressions (RE2: Python's syntax less
    lookaround and backreferences, so matching is linear in the text)."""
    url: HttpUrl | None = None
    """``webhook`` only: where the call or result is posted as JSON."""
    timeout_secs: float = Field(2.0, gt=0, le=60)
    failure: FailurePolicy | None = None
    """``webhook`` only: what a webhook that cannot be asked means; default ``closed`` for a
    ``block`` rule (the call is refused), else ``open``."""
    max_judged_chars: int = Field(DEFAULT_MAX_JUDGED_CHARS, ge=1024, le=1 << 30)
    """How much of one value (a result, arguments, a definition) the rule reads: its strings'
    characters, in order. The rest counts as a finding labelled ``unjudged``: a ``block``
    rule refuses the value, ``mask`` replaces the rest, ``flag`` records it."""
    servers: tuple[str, ...] = ("*",)
    tools: tuple[str, ...] = ("*",)
    profiles: tuple[str, ...] = ("*",)

    @model_validator(mode="before")
    @classmethod
    def _yaml_on(cls, data: Any) -> Any:
        """YAML 1.1 (PyYAML) reads a bare ``on:`` key as the boolean true: take it as ``on``."""
        if isinstance(data, dict) and True in data and "on" not in data:
            data = {("on" if key is True else key): value for key, value in data.items()}
        return data

    @field_validator("name")
    @classmethod
    def _name(cls, value: str) -> str:
        if not _NAME.match(value):
            raise ValueError("a name of letters, digits, '_', '.' or '-' (at most 64)")
        return value

    @field_validator("patterns")
    @classmethod
    def _patterns(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        for index, pattern in enumerate(value):
            try:
                compiled = linear(pattern)
            except ValueError as exc:
                raise ValueError(
                    f"patterns[{index}] is not a regular expression RE2 takes (no lookaround or"
                    f" backreferences: matching must be linear in the text): {exc}"
                ) from None
            if compiled.fullmatch("") is not None:
                raise ValueError(
                    f"patterns[{index}] {pattern!r} matches the empty string, so at every character:"
                    " write what a match must contain (e.g. '+' for '*')"
                )
        return value

    @model_validator(mode="after")
    def _fields_of_kind(self) -> Self:
        kind = self.kind
        if self.entities and kind is not GuardKind.PII:
            raise ValueError("entities: only a pii rule takes entities")
        if self.patterns and kind is not GuardKind.PATTERN:
            raise ValueError("patterns: only a pattern rule takes patterns")
        if kind is GuardKind.PATTERN and not self.patterns:
            raise ValueError("patterns: a pattern rule needs at least one pattern")
        if (self.url is not None or self.failure is not None) and kind is not GuardKind.WEBHOOK:
            raise ValueError("url: only a webhook rule takes url and failure")
        if kind is GuardKind.WEBHOOK and self.url is None:
            raise ValueError("url: a webhook rule needs the url of its service")
        if kind is GuardKind.WEBHOOK and GuardPlace.DESCRIPTIONS in self.on:
            raise ValueError("on: a webhook rule judges arguments and results, not descriptions")
        if GuardPlace.DESCRIPTIONS in self.on and self.profiles != ("*",):
            raise ValueError("profiles: descriptions are judged once for every profile; drop the filter")
        return self

    @property
    def failure_policy(self) -> FailurePolicy:
        if self.failure is not None:
            return self.failure
        return FailurePolicy.CLOSED if self.action is GuardAction.BLOCK else FailurePolicy.OPEN


DEFAULT_RULES: Final = (GuardrailRule(name="secrets", kind=GuardKind.SECRETS, on=(GuardPlace.RESULTS,)),)


def effective_rules(
    rules: tuple[GuardrailRule, ...] | None, profiles: Mapping[str, tuple[GuardrailRule, ...]]
) -> tuple[GuardrailRule, ...]:
    """The global rules (``DEFAULT_RULES`` when the section is absent), then each profile's
    own rules limited to that profile (``check_profile_rules`` refused any other filter, so
    this copy, which skips validation, loses nothing)."""
    out = list(DEFAULT_RULES if rules is None else rules)
    for profile, own in profiles.items():
        out.extend(rule.model_copy(update={"profiles": (profile,)}) for rule in own)
    return tuple(out)


def check_profile_rules(rules: tuple[GuardrailRule, ...] | None, profiles: Sequence[tuple[GuardrailRule, ...]]) -> None:
    """Raises ``ValueError`` naming the field of a profile's rule that could not do what it
    says: one on descriptions (judged once for every profile), one with its own ``profiles``
    filter (it applies to its profile), one named as a global rule (the audit and the metrics
    tell rules by name). ``profiles``: each profile's rules, in the order of ``profiles:``."""
    default = rules is None
    global_names = {rule.name: index for index, rule in enumerate(DEFAULT_RULES if default else rules or ())}
    for p_index, own in enumerate(profiles):
        for index, rule in enumerate(own):
            where = f"profiles[{p_index}].guardrails[{index}]"
            if GuardPlace.DESCRIPTIONS in rule.on:
                raise ValueError(
                    f"{where}.on: descriptions rules apply to every profile; put them in the top-level guardrails"
                )
            if rule.profiles != ("*",):
                raise ValueError(
                    f"{where}.profiles: a profile's own rule applies to that profile only; drop the filter"
                )
            if rule.name in global_names:
                also = (
                    "the default rule, in force while there is no guardrails: section"
                    if default
                    else f"guardrails[{global_names[rule.name]}]"
                )
                raise ValueError(f"{where}.name: duplicate rule name {rule.name!r} (also {also})")


def check_rule_names(rules: tuple[GuardrailRule, ...], where: str) -> None:
    """Raises ``ValueError`` naming the duplicate: a rule's name is what the audit records."""
    seen: dict[str, int] = {}
    for index, rule in enumerate(rules):
        if rule.name in seen:
            raise ValueError(
                f"{where}[{index}].name: duplicate rule name {rule.name!r} (also {where}[{seen[rule.name]}])"
            )
        seen[rule.name] = index
