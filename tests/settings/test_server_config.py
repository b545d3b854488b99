from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mcp_aggregator.errors import ConfigError, EnvVarError
from mcp_aggregator.settings import Transport, expand_mapping, parse_settings

OK_STDIO = "{name: ok, transport: stdio, command: x}"


def error_of(text: str) -> str:
    with pytest.raises(ConfigError) as info:
        parse_settings(text)
    return str(info.value)


@pytest.mark.parametrize(
    ("server", "message"),
    [
        ("{transport: stdio, command: x}", "servers[1].name: Field required"),
        ("{name: Upper, transport: stdio, command: x}", "servers[1].name: must match ^[a-z][a-z0-9_-]*$"),
        ("{name: 9lives, transport: stdio, command: x}", "servers[1].name: must match"),
        ("{name: has.dot, transport: stdio, command: x}", "servers[1].name: must match"),
        ('{name: "abc\\n", transport: stdio, command: x}', "servers[1].name: must match"),
        (f"{{name: {'a' * 256}, transport: stdio, command: x}}", "servers[1].name: must be at most 255 characters"),
        (
            "{name: s, transport: ftp, command: x}",
            "servers[1].transport: must be one of stdio, sse, http, openapi, a2a, got 'ftp'",
        ),
        ("{name: s, command: x}", "servers[1].transport: Field required"),
        ("{name: s, transport: stdio}", "servers[1].command: required for transport stdio"),
        ("{name: s, transport: sse}", "servers[1].url: required for transport sse"),
        ("{name: s, transport: http}", "servers[1].base_url: required for transport http"),
        ("{name: s, transport: http, base_url: 'ftp://x'}", "servers[1].base_url: must be an absolute http(s) URL"),
        ("{name: s, transport: sse, url: 'not a url'}", "servers[1].url: must be an absolute http(s) URL"),
        (
            "{name: s, transport: stdio, command: x, health_check_url: nope}",
            "servers[1].health_check_url: must be an absolute http(s) URL",
        ),
        (
            f"{{name: s, transport: stdio, command: x, description: {'d' * 1001}}}",
            "servers[1].description: String should have at most 1000 characters",
        ),
        ("{name: s, transport: http, base_url: 'http://h', command: x}", "servers[1].command: not allowed"),
        ("{name: s, transport: http, base_url: 'http://h', args: [a]}", "only allowed for transport stdio"),
        ("{name: s, transport: stdio, command: x, headers: {a: b}}", "servers[1].headers: not allowed"),
        ("{name: s, transport: stdio, command: x, colour: red}", "servers[1].colour: unknown field"),
        ("{name: s, transport: stdio, command: x, tool_timeout_secs: 0}", "servers[1].tool_timeout_secs:"),
        ("{name: ok, transport: stdio, command: y}", "servers[1].name: duplicate server name 'ok' (also servers[0])"),
    ],
)
def test_invalid_server_gets_one_message_naming_the_field(server: str, message: str) -> None:
    assert message in error_of(f"servers:\n  - {OK_STDIO}\n  - {server}\n")


@pytest.mark.parametrize("spelling", ["stdio", "STDIO", "Stdio"])
def test_transport_is_case_insensitive(spelling: str) -> None:
    settings = parse_settings(f"servers:\n  - {{name: s, transport: {spelling}, command: x}}\n")
    assert settings.servers[0].transport is Transport.STDIO


def test_every_transport_parses_with_its_optional_fields() -> None:
    settings = parse_settings(
        """
servers:
  - {name: a, transport: stdio, command: x, args: [-v], env: {K: v}, cwd: /tmp}
  - {name: b, transport: sse, url: "http://h/sse", headers: {Authorization: "Bearer ${T}"}}
  - {name: c, transport: http, base_url: "https://h/mcp", health_check_url: "https://h/health"}
"""
    )
    a, b, c = settings.servers
    assert a.args == ("-v",) and a.env == {"K": "v"} and a.cwd == "/tmp"
    assert b.headers == {"Authorization": "Bearer ${T}"}, "expanded only at connect time"
    assert c.connection_config() == {"base_url": "https://h/mcp", "headers": {}}


def test_claude_desktop_json_is_accepted_and_names_are_made_valid() -> None:
    text = json.dumps(
        {
            "mcpServers": {
                "Time Tools": {"command": "uvx", "args": ["mcp-server-time"]},
                "docs": {"url": "https://docs.example.com/mcp"},
                "events": {"type": "sse", "url": "https://e.example.com/sse"},
            }
        }
    )
    servers = parse_settings(text).servers
    assert [(s.name, s.transport.value) for s in servers] == [
        ("time-tools", "stdio"),
        ("docs", "http"),
        ("events", "sse"),
    ]
    assert servers[1].base_url == "https://docs.example.com/mcp"


def test_broken_yaml_names_the_line() -> None:
    assert "not valid YAML/JSON at line 3" in error_of("servers: [\n  {name: a,\n")


def test_top_level_must_be_a_mapping() -> None:
    assert "the top level must be a mapping, got list" in error_of("- a\n- b\n")


def test_unknown_top_level_section_is_an_error() -> None:
    assert "colour: unknown field" in error_of("colour: red\n")


def test_unset_variable_names_server_and_field() -> None:
    with pytest.raises(EnvVarError) as info:
        expand_mapping({"Authorization": "Bearer ${NOPE_TOKEN}"}, {}, server="docs", field="headers")
    assert str(info.value) == "server 'docs' headers.Authorization: environment variable ${NOPE_TOKEN} is not set"


def test_variables_expand_when_set() -> None:
    out = expand_mapping({"A": "x-${V}-${V}"}, {"V": "1"}, server="s", field="env")
    assert out == {"A": "x-1-1"}


def test_check_config_exits_non_zero_without_a_traceback(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(
        "servers:\n  - {name: a, transport: stdio, command: x}\n  - {name: b, transport: stdio}\n"
        "  - {name: c, transport: http}\n"
    )
    result = subprocess.run(
        [sys.executable, "-m", "mcp_aggregator", "check-config", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "servers[1].command: required for transport stdio" in result.stderr
    assert "servers[2].base_url: required for transport http" in result.stderr
    assert "Traceback" not in result.stderr


def test_check_config_reports_a_missing_file(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mcp_aggregator", "check-config", str(tmp_path / "nope.yaml")],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 2
    assert "cannot read configuration file" in result.stderr
    assert "Traceback" not in result.stderr
