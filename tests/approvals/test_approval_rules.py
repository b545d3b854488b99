"""Which calls a rule holds, what binds an approval to its call, and what a person is shown: pure."""

from __future__ import annotations

from typing import Any

import mcp_types as types
import pytest

from mcp_aggregator.approvals.approval import ApprovalStatus, approval_digest, shown_arguments
from mcp_aggregator.approvals.approval_question import ClientAnswer, answer_of, question
from mcp_aggregator.approvals.approval_rules import ApprovalRules
from mcp_aggregator.approvals.config import ApprovalRule
from tests.approvals.test_approval_desk import approval

CLIENT: dict[str, Any] = {"name": "ada", "subject": None, "claims": {}}


def rules() -> ApprovalRules:
    commits = ApprovalRule(name="commits", tools=("vcs.git_commit",), when='args.message.contains("release")')
    deletes = ApprovalRule(name="deletes", tools=("*.delete_*",), servers=("files", "disk*"))
    ops = ApprovalRule(name="ops", servers=("vcs",))
    return ApprovalRules([commits, deletes], {"ops": [ops]})


@pytest.mark.parametrize(
    ("server", "tool", "profile", "arguments", "held_by"),
    [
        ("vcs", "git_commit", "default", {"message": "a release"}, "commits"),
        ("vcs", "git_commit", "default", {"message": "a fix"}, None),
        ("vcs", "git_commit", "default", {}, "commits"),  # a when that cannot be read holds
        ("vcs", "git_status", "default", {}, None),
        ("vcs", "git_status", "ops", {}, "ops"),  # a profile's own rule, for that profile only
        ("files", "delete_file", "default", {}, "deletes"),
        ("disk2", "delete_all", "default", {}, "deletes"),
        ("notes", "delete_note", "default", {}, None),  # tools and servers must both match
        ("files", "read_file", "default", {}, None),
    ],
)
def test_a_rule_holds_the_calls_it_names(
    server: str, tool: str, profile: str, arguments: dict[str, Any], held_by: str | None
) -> None:
    found = rules().holding(server, tool, profile, CLIENT, arguments)
    assert (found.name if found is not None else None) == held_by


def test_a_tool_under_no_rule_is_not_covered_and_no_rules_cover_nothing() -> None:
    assert not rules().covers("vcs", "git_status", "default")
    assert rules().covers("vcs", "git_commit", "default")  # whatever its arguments
    assert not ApprovalRules([], {}).covers("vcs", "git_commit", "default")


def test_an_approval_is_bound_to_the_exact_call() -> None:
    base = ("ada", "default", "vcs", "git_commit", "f" * 64, {"message": "x", "all": True})
    digest = approval_digest(*base)
    assert approval_digest("ada", "default", "vcs", "git_commit", "f" * 64, {"all": True, "message": "x"}) == digest
    for changed in (
        ("bob", *base[1:]),
        ("ada", "ops", *base[2:]),
        (*base[:4], "e" * 64, base[5]),
        (*base[:5], {"message": "x ", "all": True}),
    ):
        assert approval_digest(*changed) != digest


def test_a_person_is_shown_the_arguments_with_secrets_masked() -> None:
    shown = shown_arguments(
        {"message": "use ghp_" + "a" * 36, "nested": [{"url": "https://x/?k=s3cr3t-value"}], "n": 3},
        lambda text: text.replace("s3cr3t-value", "***"),
    )
    assert shown == {"message": "use [REDACTED:github_token]", "nested": [{"url": "https://x/?k=***"}], "n": 3}


@pytest.mark.parametrize(
    ("answer", "decided"),
    [
        (types.ElicitResult(action="accept", content={"approve": True}), ClientAnswer(ApprovalStatus.APPROVED)),
        (
            types.ElicitResult(action="accept", content={"approve": False, "reason": " no "}),
            ClientAnswer(ApprovalStatus.DENIED, "no"),
        ),
        (types.ElicitResult(action="accept", content={}), ClientAnswer(ApprovalStatus.DENIED, "denied by the client")),
        (types.ElicitResult(action="decline"), ClientAnswer(ApprovalStatus.DENIED, "declined by the client")),
        (types.ElicitResult(action="cancel"), ClientAnswer(None)),
        (types.ErrorData(code=-1, message="Elicitation not supported"), ClientAnswer(None)),
    ],
)
def test_the_clients_answer_decides_approve_deny_or_nothing(
    answer: types.ElicitResult | types.ErrorData, decided: ClientAnswer
) -> None:
    assert answer_of(answer) == decided


def test_the_question_is_a_form_naming_the_tool_the_server_and_the_arguments() -> None:
    asked = question(approval(arguments={"message": "release 1.0"}))
    assert isinstance(asked.params, types.ElicitRequestFormParams)
    assert "Tool: git_commit" in asked.params.message and "Server: vcs" in asked.params.message
    assert '"message": "release 1.0"' in asked.params.message
    assert asked.params.requested_schema["required"] == ["approve"]
