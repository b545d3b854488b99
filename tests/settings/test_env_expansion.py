"""The one ``${VAR}`` expansion: every caller (server configs, session keys, client tokens,
registry installs) reads references alike and words its own error."""

from __future__ import annotations

import pytest

from mcp_aggregator.errors import ConfigError, EnvVarError
from mcp_aggregator.settings.env_expansion import expand_setting, expand_value, expanded, only_references

ENV = {"TOKEN": "t0ken-value", "sealed:abc": "opened"}


@pytest.mark.parametrize(
    ("text", "sealed", "out"),
    [
        ("Bearer ${TOKEN}", True, "Bearer t0ken-value"),
        ("${TOKEN}-${TOKEN}", False, "t0ken-value-t0ken-value"),
        ("${sealed:abc}", True, "opened"),
        ("${sealed:abc}", False, "${sealed:abc}"),  # a setting holds no sealed secret: left as written
        ("$TOKEN and ${1X}", True, "$TOKEN and ${1X}"),  # not references
    ],
)
def test_references_are_expanded_from_the_environment(text: str, sealed: bool, out: str) -> None:
    assert expanded(text, ENV, KeyError, sealed=sealed) == out


def test_each_caller_words_its_own_error_for_an_unset_variable() -> None:
    with pytest.raises(EnvVarError, match="MISSING"):
        expand_value("${MISSING}", ENV, server="s", field="env.X")
    with pytest.raises(ConfigError, match=r"\$\{MISSING\} is not set in the environment"):
        expand_setting("${MISSING}", ENV, "serve.session_keys[0]")


@pytest.mark.parametrize(
    ("text", "only"), [("${A}${sealed:x=}", True), ("${A}", True), ("x${A}", False), ("", False), ("plain", False)]
)
def test_a_value_of_references_only_is_told_apart(text: str, only: bool) -> None:
    assert only_references(text) is only
