"""Pure parts of profiles, overrides, policies and clients: selection, reshaping, verdicts."""

from __future__ import annotations

import hashlib
from typing import Any

import mcp_types as types
import pytest

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.identity import ClientIdentity
from mcp_aggregator.identity.clients import ClientBook
from mcp_aggregator.identity.config import ClaimMatch, ClientSettings, ProfileSettings, ToolOverride
from mcp_aggregator.identity.policies import Policies, client_facts, tool_facts
from mcp_aggregator.identity.profile import Profile, merged_overrides
from mcp_aggregator.settings import settings_from_mapping

TOKEN = "alice-token-0123456789"
BOB_SHA = hashlib.sha256(b"bob-token-0123456789").hexdigest()


@pytest.mark.parametrize(
    ("kind", "server", "name", "taken"),
    [
        ("tool", "vcs", "git_status", True),
        ("tool", "vcs", "git_push", True),
        ("tool", "vcs", "rm", False),
        ("tool", "clock", "anything", True),
        ("prompt", "clock", "anything", True),
        ("prompt", "vcs", "review", True),
        ("prompt", "vcs", "other", False),
        ("resource", "vcs", "file:///repo/README.md", True),
        ("resource", "vcs", "file:///etc/passwd", False),
        ("tool", "clocks", "x", False),
    ],
)
def test_a_profile_takes_whole_servers_and_globbed_items(kind: str, server: str, name: str, taken: bool) -> None:
    spec = ProfileSettings(
        name="mixed",
        servers=["clock"],
        tools=["vcs.git_*"],
        prompts=["vcs.review"],
        resources=["vcs:file:///repo/*"],
    )
    assert Profile.of(spec).takes(kind, server, name) is taken


def test_an_override_hides_an_argument_and_defaults_another() -> None:
    override = merged_overrides(
        [ToolOverride(tool="s.t", description="global", defaults={"limit": 10})],
        [ToolOverride(tool="s.t", name="short", hide={"path": "/srv"})],
    )["s.t"]
    tool = types.Tool(
        name="t",
        description="upstream",
        input_schema={
            "type": "object",
            "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}, "q": {"type": "string"}},
            "required": ["path", "limit", "q"],
        },
    )
    shown = override.tool(tool)
    assert shown.name == "t"  # routing keeps the upstream's name; the profile shows ``short``
    assert override.name == "short"
    assert shown.description == "global"
    assert shown.input_schema == {
        "type": "object",
        "properties": {"limit": {"type": "integer", "default": 10}, "q": {"type": "string"}},
        "required": ["q"],
    }
    assert override.arguments({"q": "x", "path": "/etc"}) == {"limit": 10, "q": "x", "path": "/srv"}
    assert override.arguments({"q": "x", "limit": 3}) == {"limit": 3, "q": "x", "path": "/srv"}


def test_a_rule_reads_client_tool_annotations_and_arguments() -> None:
    policies = Policies(
        [
            ("no-destructive", 'tool.annotations.destructiveHint && client.name != "ops"', None),
            ("no-etc", 'has(arguments.path) && arguments.path.startsWith("/etc")', "not /etc"),
        ]
    )
    destructive = types.ToolAnnotations(destructive_hint=True)
    rm = tool_facts("fs", types.Tool(name="rm", input_schema={}, annotations=destructive))
    cat = tool_facts("fs", types.Tool(name="cat", input_schema={}))
    bob, ops = client_facts(ClientIdentity(name="bob")), client_facts(ClientIdentity(name="ops"))

    def denied(client: dict[str, Any], tool: dict[str, Any], arguments: dict[str, Any]) -> str | None:
        found = policies.denial(client, "default", tool, arguments)
        return None if found is None else found[0].name

    assert denied(bob, rm, {}) == "no-destructive"
    assert denied(ops, rm, {}) is None
    assert denied(bob, cat, {"path": "/etc/passwd"}) == "no-etc"
    assert denied(bob, cat, {"path": "/tmp/x"}) is None
    # Listing: only rules that never read arguments hide a tool.
    assert policies.denial(bob, "default", cat, None, static_only=True) is None


def test_a_rule_that_cannot_be_evaluated_denies() -> None:
    policies = Policies([("claims", '"eng" in client.claims.groups', None)])
    found = policies.denial(client_facts(ClientIdentity(name="x")), "default", {}, {})
    assert found is not None and found[1] is not None  # no ``groups`` claim: an error, so a denial


def test_named_static_tokens_and_digests_find_their_clients() -> None:
    book = ClientBook(
        [
            ClientSettings(name="alice", token="${ALICE}", profiles=["default"]),
            ClientSettings(name="bob", token_sha256=BOB_SHA, profiles=["x"]),
        ],
        ["unnamed-token-0123456789"],
        env={"ALICE": TOKEN},
    )
    alice, bob, unnamed = (book.by_token(t) for t in (TOKEN, "bob-token-0123456789", "unnamed-token-0123456789"))
    assert alice is not None and alice.name == "alice" and alice.may_use("default")
    assert bob is not None and bob.name == "bob" and not bob.may_use("default")
    assert unnamed is not None and unnamed.name is None and unnamed.profiles == {"default"}
    assert book.by_token("${ALICE}") is None


def test_an_unset_token_variable_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError, match=r"clients\[0\]\.token: \$\{NOPE\} is not set"):
        ClientBook([ClientSettings(name="a", token="${NOPE}", profiles=["default"])], env={})


def test_oauth_claims_map_to_clients_and_profiles() -> None:
    book = ClientBook(
        [
            ClientSettings(name="eng", match=ClaimMatch(groups=["engineers"]), profiles=["code"]),
            ClientSettings(name="admins", match=ClaimMatch(sub=["u-1"], scopes=["admin"]), profiles=["default"]),
        ]
    )
    eng = book.by_claims("u-2", [], {"groups": ["engineers", "x"]})
    assert (eng.name, eng.profiles) == ("eng", {"code"})
    both = book.by_claims("u-1", ["admin"], {"groups": ["engineers"]})
    assert (both.name, both.profiles) == ("eng", {"code", "default"})
    assert book.by_claims("u-1", [], {}).profiles == frozenset()  # rules exist, none matched: no profile
    assert ClientBook([]).by_claims("u-9", [], {}).profiles == {"default"}  # no rules: default, named by sub


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ({"profiles": [{"name": "Bad Name"}]}, "profiles[0].name: must match"),
        ({"profiles": [{"name": "a", "tools": ["x y"]}]}, "profiles[0].tools: [0]: a name or glob without spaces"),
        ({"profiles": [{"name": "a", "exposure": "everything"}]}, "profiles[0].exposure"),
        ({"profiles": [{"name": "a", "overrides": [{"tool": "notcanonical"}]}]}, "profiles[0].overrides[0].tool"),
        (
            {"profiles": [{"name": "a", "overrides": [{"tool": "s.t", "hide": {"x": 1}, "defaults": {"x": 2}}]}]},
            "profiles[0].overrides[0].defaults: x also hidden",
        ),
        ({"tool_overrides": [{"tool": "s.t", "name": "bad name"}]}, "tool_overrides[0].name"),
        ({"clients": [{"name": "a", "token": TOKEN, "profiles": ["nope"]}]}, "clients[0].profiles[0]: no profile"),
        ({"clients": [{"name": "a", "profiles": ["default"]}]}, "clients[0].token: give exactly one"),
        ({"clients": [{"name": "a", "token_sha256": "abc", "profiles": ["default"]}]}, "clients[0].token_sha256"),
        (
            {"clients": [{"name": "a", "match": {"groups": ["g"]}, "profiles": ["default"]}]},
            "clients[0].match: claims come from OAuth tokens",
        ),
        ({"clients": [{"name": "a", "match": {}, "profiles": ["default"]}]}, "clients[0].match: give at least one"),
        ({"clients": [{"name": "a", "token": TOKEN, "profiles": []}]}, "clients[0].profiles"),
        ({"policies": [{"name": "p", "deny": "tool.name =="}]}, "policies[0].deny: not a valid CEL expression"),
        ({"policies": [{"name": "p", "deny": "user.name == 'x'"}]}, "policies[0].deny: unknown variable user"),
        ({"policies": [{"name": "p", "deny": "nosuch(tool)"}]}, "policies[0].deny: Undefined variable or function"),
        (
            {"policies": [{"name": "p", "deny": "false"}, {"name": "p", "deny": "true"}]},
            "policies[1].name: duplicate name",
        ),
    ],
)
def test_a_wrong_identity_setting_is_refused_naming_the_field(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_mapping(raw)
    assert message in str(caught.value)


@pytest.mark.parametrize("serve", [{"admin_token": TOKEN}, {"mcp_tokens": [TOKEN]}])
def test_a_client_whose_token_sha256_hashes_a_shared_token_is_refused(serve: dict[str, Any]) -> None:
    digest = hashlib.sha256(TOKEN.encode()).hexdigest()
    raw = {"serve": serve, "clients": [{"name": "a", "token_sha256": digest, "profiles": ["default"]}]}
    with pytest.raises(ConfigError) as caught:
        settings_from_mapping(raw)
    assert "clients[0].token_sha256: the hash of a token in serve.mcp_tokens or serve.admin_token" in str(caught.value)
