"""A wrong ``guardrails:`` section is refused at start, naming the field; no section means
secrets masked in results."""

from __future__ import annotations

import pytest

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.guardrails import DEFAULT_RULES, GuardKind, GuardPlace
from mcp_aggregator.guardrails.guard import guard_for
from mcp_aggregator.settings import parse_settings


@pytest.mark.parametrize(
    ("yaml", "named"),
    [
        ("guardrails:\n  - {name: x, kind: magic}", "guardrails[0].kind"),
        ("guardrails:\n  - {name: x, kind: pii, entities: [SSN]}", "guardrails[0].entities[0]"),
        ("guardrails:\n  - {name: x, kind: secrets, colour: red}", "guardrails[0].colour: unknown field"),
        ("guardrails:\n  - {name: x, kind: secrets, on: [replies]}", "guardrails[0].on[0]"),
        ("guardrails:\n  - {name: x, kind: secrets, action: shred}", "guardrails[0].action"),
        ("guardrails:\n  - {name: x, kind: secrets, entities: [EMAIL_ADDRESS]}", "entities: only a pii rule"),
        ("guardrails:\n  - {name: x, kind: pattern}", "patterns: a pattern rule needs"),
        ("guardrails:\n  - {name: x, kind: pattern, patterns: ['(']}", "patterns[0] is not a regular expression"),
        (
            "guardrails:\n  - {name: x, kind: pattern, patterns: ['a(?=b)']}",
            "patterns[0] is not a regular expression RE2 takes (no lookaround",
        ),
        ("guardrails:\n  - {name: x, kind: secrets, max_judged_chars: 10}", "max_judged_chars"),
        ("guardrails:\n  - {name: x, kind: secrets, max_judged_chars: many}", "max_judged_chars"),
        ("guardrails:\n  - {name: x, kind: webhook}", "url: a webhook rule needs"),
        ("guardrails:\n  - {name: x, kind: webhook, url: 'not a url'}", "guardrails[0].url"),
        ("guardrails:\n  - {name: x, kind: secrets, failure: open}", "url: only a webhook rule"),
        ("guardrails:\n  - {name: 'a b', kind: secrets}", "guardrails[0].name"),
        ("guardrails:\n  - {name: x, kind: secrets}\n  - {name: x, kind: pii}", "guardrails[1].name: duplicate"),
        (
            "guardrails:\n  - {name: x, kind: injection, on: [descriptions], profiles: [ops]}",
            "profiles: descriptions are judged once",
        ),
        (
            "profiles:\n  - name: ops\n    servers: ['*']\n"
            "    guardrails:\n      - {name: x, kind: pii, entities: [DNA]}",
            "profiles[0].guardrails[0].entities[0]",
        ),
        (
            "profiles:\n  - name: ops\n    servers: ['*']\n    guardrails:\n      - {name: s, kind: secrets}\n"
            "      - {name: p, kind: injection, on: [descriptions], action: block}",
            "profiles[0].guardrails[1].on: descriptions rules apply to every profile; "
            "put them in the top-level guardrails",
        ),
        (
            "profiles:\n  - name: ops\n    servers: ['*']\n"
            "    guardrails:\n      - {name: mail, kind: pii, profiles: [support]}",
            "profiles[0].guardrails[0].profiles: a profile's own rule applies to that profile only",
        ),
        (
            "guardrails:\n  - {name: s, kind: secrets}\n  - {name: mail, kind: pii}\n"
            "profiles:\n  - name: ops\n    servers: ['*']\n    guardrails:\n      - {name: mail, kind: pii}",
            "profiles[0].guardrails[0].name: duplicate rule name 'mail' (also guardrails[1])",
        ),
        (
            "profiles:\n  - name: ops\n    servers: ['*']\n    guardrails:\n      - {name: secrets, kind: secrets}",
            "profiles[0].guardrails[0].name: duplicate rule name 'secrets' (also the default rule",
        ),
    ],
)
def test_a_bad_rule_is_refused_naming_the_field(yaml: str, named: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_settings(yaml)
    assert named in str(info.value)


def test_without_a_section_secrets_are_masked_in_results_and_nothing_else() -> None:
    settings = parse_settings("servers: []")
    assert settings.guardrails is None
    guard = guard_for(settings.guardrails, {})
    assert [c.rule for c in guard.rules] == list(DEFAULT_RULES)
    [rule] = DEFAULT_RULES
    assert rule.kind is GuardKind.SECRETS and rule.on == (GuardPlace.RESULTS,) and rule.action.value == "mask"


def test_an_empty_section_turns_every_rule_off() -> None:
    guard = guard_for(parse_settings("guardrails: []").guardrails, {})
    assert guard.rules == ()
    assert not any(guard.watches(place) for place in GuardPlace)


def test_a_profiles_rules_apply_to_that_profile_only() -> None:
    settings = parse_settings(
        "profiles:\n  - name: support\n    servers: ['*']\n"
        "    guardrails:\n      - {name: mail, kind: pii, entities: [EMAIL_ADDRESS]}"
    )
    guard = guard_for(settings.guardrails, {p.name: p.guardrails for p in settings.profiles})
    assert [c.rule.name for c in guard.applying(GuardPlace.RESULTS, "crm", "find", "support")] == ["secrets", "mail"]
    assert [c.rule.name for c in guard.applying(GuardPlace.RESULTS, "crm", "find", "default")] == ["secrets"]


def test_server_and_tool_filters_take_globs_and_namespaced_names() -> None:
    settings = parse_settings(
        "guardrails:\n  - {name: s, kind: secrets, servers: ['git*'], tools: ['read_*', 'vcs.log']}"
    )
    guard = guard_for(settings.guardrails, {})
    assert guard.applying(GuardPlace.RESULTS, "github", "read_file", "default")
    assert not guard.applying(GuardPlace.RESULTS, "github", "write_file", "default")
    assert not guard.applying(GuardPlace.RESULTS, "files", "read_file", "default")
    assert guard.applying(GuardPlace.RESULTS, "vcs", "log", "default") == ()  # the server glob fails


def test_a_bare_yaml_on_key_is_read_as_on() -> None:
    settings = parse_settings("guardrails:\n  - name: s\n    kind: secrets\n    on: [arguments]")
    assert settings.guardrails is not None and settings.guardrails[0].on == (GuardPlace.ARGUMENTS,)
