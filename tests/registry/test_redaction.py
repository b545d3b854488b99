"""Secrets never leave through a response or a log line."""

from __future__ import annotations

import pytest

from mcp_aggregator.registry import redact_connection_config, redact_url
from mcp_aggregator.registry.redaction import arg_secrets


def test_header_and_env_values_are_redacted_and_keys_kept_but_a_path_is_shown() -> None:
    cfg = {
        "command": "mcp-server-memory",
        "args": ["--verbose"],
        "env": {"MEMORY_FILE_PATH": "./memory.json", "API_KEY": "${KEY}"},
        "headers": {"Authorization": "Bearer abc"},
    }

    assert redact_connection_config(cfg) == {
        "command": "mcp-server-memory",
        "args": ["--verbose"],
        "env": {"MEMORY_FILE_PATH": "./memory.json", "API_KEY": "***"},
        "headers": {"Authorization": "***"},
    }
    assert cfg["headers"] == {"Authorization": "Bearer abc"}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://docs.example.com/mcp", "https://docs.example.com/mcp"),
        ("https://bob:hunter2@h.example.com/mcp", "https://bob:***@h.example.com/mcp"),
        ("https://token@h.example.com/", "https://token@h.example.com/"),
        ("https://h/sse?api_key=s3cret&v=2", "https://h/sse?api_key=***&v=2"),
        (
            "https://h/sse?access_token=a&Signature=b&page=3",
            "https://h/sse?access_token=***&Signature=***&page=3",
        ),
    ],
)
def test_url_passwords_and_secret_query_values_are_redacted(url: str, expected: str) -> None:
    assert redact_url(url) == expected


def test_urls_anywhere_in_the_config_are_redacted() -> None:
    cfg = {"base_url": "https://u:p@h/mcp?token=t", "nested": {"urls": ["http://h/?key=k"]}, "timeout": 3}

    assert redact_connection_config(cfg) == {
        "base_url": "https://u:***@h/mcp?token=***",
        "nested": {"urls": ["http://h/?key=***"]},
        "timeout": 3,
    }


def test_an_unparseable_url_is_redacted_whole() -> None:
    assert redact_url("http://[::1") == "***"


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (["--token", "sk-live-1"], ["--token", "***"]),
        (["--api-key=abc", "-v"], ["--api-key=***", "-v"]),
        (["--password", "hunter2", "--port", "8080"], ["--password", "***", "--port", "8080"]),
        (["-m", "tests.upstream.fixture_server", "stdio"], ["-m", "tests.upstream.fixture_server", "stdio"]),
        (["--repository", "/srv/git/repo-2024"], ["--repository", "/srv/git/repo-2024"]),
        (["--dir=./data", "-5"], ["--dir=./data", "-5"]),
        (["postgres://u:p@db/x"], ["postgres://u:***@db/x"]),
        (["--sk-0123456789abcdef0123"], ["***"]),
        (["ghp_abcdefghijklmnopqrstuvwxyz0123456789"], ["***"]),
        (["/srv/hooks/ghp_abcdefghijk12345/in"], ["/srv/hooks/***/in"]),
        (["/tmp/pytest-7/test_a_server_sees_it_0/repo"], ["/tmp/pytest-7/test_a_server_sees_it_0/repo"]),
        (["--user=${USER_NAME}", "${sealed:gAAAAB0123}"], ["--user=${USER_NAME}", "***"]),
        (["--header", "Authorization: Bearer abc", "-H", "x=password=hunter2"], ["--header", "***", "-H", "***"]),
    ],
)
def test_args_are_shown_except_their_secrets(args: list[str], shown: list[str]) -> None:
    assert redact_connection_config({"command": "x", "args": args}) == {"command": "x", "args": shown}


def test_what_args_hide_is_scrubbed_and_a_path_is_not() -> None:
    args = ["--token", "sk-live-123", "--repository", "/srv/git/repo", "https://u:pass-word@h/x"]
    assert arg_secrets(args) == {"sk-live-123", "pass-word"}


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        (
            "https://hooks.example.com/services/T0A1B2C3/B0C2D3E4/9f8e7d6c5b4a39281706f5e4",
            "https://hooks.example.com/services/T0A1B2C3/B0C2D3E4/***",
        ),
        ("https://api.example.com/mcp/sk-abcdef123456/sse", "https://api.example.com/mcp/***/sse"),
        ("https://h/mcp?v=2&u=ghp_abcdefghijk12345", "https://h/mcp?v=2&u=***"),
        ("https://docs.example.com/v1/mcp", "https://docs.example.com/v1/mcp"),
    ],
)
def test_tokens_in_url_paths_and_query_values_are_redacted(url: str, expected: str) -> None:
    assert redact_url(url) == expected
