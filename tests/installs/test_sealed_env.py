"""Secrets installed from a registry: sealed in the stored config, opened only where
``${VAR}`` is expanded, hidden from text like any referenced value."""

from __future__ import annotations

from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from mcp_aggregator.credentials.secret_box import SecretBox
from mcp_aggregator.errors import EnvVarError
from mcp_aggregator.installs.sealed_env import SealedEnv
from mcp_aggregator.settings.env_expansion import SecretScrubber, expand_mapping, secret_values

SECRET = "wk-0123456789-secret"


def test_a_sealed_value_opens_where_variables_expand_and_is_scrubbed(tmp_path: Path) -> None:
    env = SealedEnv({"HOME": "/home/x"}, lambda: SecretBox.open(tmp_path, {}))
    reference = env.seal(SECRET)
    assert reference.startswith("${sealed:") and SECRET not in reference
    config = {"command": "npx", "args": [], "env": {"API_KEY": reference, "HOME_DIR": "${HOME}"}}
    assert expand_mapping(config["env"], env, server="s", field="env") == {"API_KEY": SECRET, "HOME_DIR": "/home/x"}
    assert SECRET in secret_values(config, env)
    assert (
        SecretScrubber(secret_values(config, env))(f"upstream said: bad key {SECRET}") == "upstream said: bad key ***"
    )
    assert list(env) == ["HOME"], "a sealed value is looked up, never listed"


def test_a_value_sealed_with_another_key_is_an_unset_variable_that_shows_no_token(tmp_path: Path) -> None:
    other = SealedEnv({}, lambda: SecretBox(Fernet.generate_key()))
    reference = other.seal(SECRET)
    mine = SealedEnv({}, lambda: SecretBox.open(tmp_path, {}))
    with pytest.raises(EnvVarError) as caught:
        expand_mapping({"API_KEY": reference}, mine, server="weather", field="env")
    assert "sealed secret this gateway's key does not open" in str(caught.value)
    assert reference.removeprefix("${sealed:").removesuffix("}") not in str(caught.value)


def test_the_key_file_is_made_only_when_a_sealed_value_is_made_or_read(tmp_path: Path) -> None:
    env = SealedEnv({"A": "1"}, lambda: SecretBox.open(tmp_path, {}))
    assert env["A"] == "1" and "B" not in env
    assert not (tmp_path / "secret_key").exists()
    assert "sealed:not-a-token" not in env
    assert (tmp_path / "secret_key").exists()
