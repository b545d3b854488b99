"""A bad approval rule is refused at load, its field named."""

from __future__ import annotations

import pytest

from mcp_aggregator.approvals import ApprovalAsk
from mcp_aggregator.errors import ConfigError
from mcp_aggregator.settings.loader import parse_settings

TIMEOUT = "approvals[0].timeout_secs"


@pytest.mark.parametrize(
    ("yaml", "error"),
    [
        (
            "approvals: [{name: c, tools: [git_commit]}]",
            "approvals[0].tools: [0]: 'git_commit' is not a tool pattern; give a canonical server.tool name",
        ),
        ("approvals: [{name: c, tools: ['Vcs X.commit']}]", "approvals[0].tools: [0]: 'Vcs X.commit' is not a tool"),
        ("approvals: [{name: c, tools: [v.x], when: 'args.m.contains('}]", "approvals[0].when: not a valid CEL"),
        ("approvals: [{name: c, tools: [v.x], when: 'request.m == 1'}]", "approvals[0].when: unknown variable request"),
        ("approvals: [{name: c, tools: [v.x], timeout_secs: 1.5}]", f"{TIMEOUT}: Input should be a valid integer"),
        ("approvals: [{name: c, tools: [v.x], timeout_secs: '60'}]", f"{TIMEOUT}: Input should be a valid integer"),
        ("approvals: [{name: c, tools: [v.x], timeout_secs: 0}]", f"{TIMEOUT}: Input should be greater than 0"),
        ("approvals: [{name: c, tools: [v.x], ask: nobody}]", "approvals[0].ask: Input should be 'client', 'admin' or"),
        ("approvals: [{name: c, tools: [v.x], remember: forever}]", "approvals[0].remember: Input should be 'session'"),
        ("approvals: [{name: c, tools: [v.x], hold: true}]", "approvals[0].hold: unknown field"),
        ("approvals: [{name: 'a b', tools: [v.x]}]", "approvals[0].name: must match"),
        ("approvals: [{name: c}]", "approvals[0].tools: give at least one of tools, servers, profiles"),
        ("approvals: [{name: c, servers: ['']}]", "approvals[0].servers: [0]: a name or glob without spaces"),
        (
            "approvals: [{name: c, servers: [v], profiles: [p, prdo]}]\nprofiles: [{name: p}]",
            "approvals[0].profiles[1]: no profile named 'prdo' (known: default, p)",
        ),
        (
            "approvals: [{name: c, tools: [v.x]}, {name: c, servers: [v]}]",
            "approvals[1].name: duplicate rule name 'c' (also approvals[0])",
        ),
        (
            "profiles: [{name: p, approvals: [{name: c, tools: [v.x], profiles: [q]}]}]",
            "profiles[0].approvals[0].profiles: a profile's own rule holds that profile's calls only",
        ),
        (
            "approvals: [{name: c, tools: [v.x]}]\nprofiles: [{name: p, approvals: [{name: c, tools: [v.y]}]}]",
            "profiles[0].approvals[0].name: duplicate rule name 'c' (also approvals[0])",
        ),
    ],
)  # fmt: skip
def test_a_bad_rule_is_refused_naming_its_field(yaml: str, error: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_settings(yaml)
    assert error in str(refused.value)


def test_a_rule_takes_its_defaults_and_a_profile_its_own_rules() -> None:
    settings = parse_settings(
        "approvals:\n"
        "  - {name: commits, tools: [vcs.git_commit, vcs.git_add], when: 'args.message.contains(\"release\")'}\n"
        "profiles:\n"
        "  - {name: ops, servers: [vcs], approvals: [{name: pushes, servers: [vcs], ask: admin, timeout_secs: 30,"
        " remember: session}]}\n"
    )
    [commits] = settings.approvals
    assert (commits.ask, commits.timeout_secs, commits.remember) == (ApprovalAsk.BOTH, 300, None)
    [pushes] = settings.profiles[0].approvals
    assert (pushes.ask, pushes.timeout_secs, pushes.remember) == (ApprovalAsk.ADMIN, 30, "session")


def test_a_rules_profiles_may_name_default_or_a_glob_that_matches_none_yet() -> None:
    settings = parse_settings("approvals: [{name: c, servers: [v], profiles: [default, 'team-*']}]")
    assert settings.approvals[0].profiles == ("default", "team-*")
