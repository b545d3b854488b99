"""``plan_install``: entries and inputs to server configurations, as tables."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from mcp_aggregator.errors import EntryRefusedError, InstallInputError
from mcp_aggregator.installs.install_plan import InstallInputs, InstallPlan, Toolchain, local_name, plan_install
from mcp_aggregator.installs.installer import _inputs_of, _keeping_sandbox
from mcp_aggregator.installs.server_json import parse_item
from mcp_aggregator.sandbox.config import NetworkMode, SandboxConfig
from mcp_aggregator.settings.server_config import Transport
from tests.installs.local_registry import item, memory_version, npm_memory, pypi_time, remote, with_secrets

DATA = Path("/data")
ALL_TOOLS = Toolchain(npx="/usr/bin/npx", uvx="/usr/bin/uvx", container="/usr/bin/docker")
NO_UV = Toolchain(npx="/usr/bin/npx")


def sealed(value: str) -> str:
    return f"${{sealed:S{len(value)}}}"


def plan(
    server: dict[str, Any], inputs: InstallInputs | None = None, *, tools: Toolchain = ALL_TOOLS, **meta: Any
) -> InstallPlan:
    return plan_install(
        parse_item(item(server, **meta)),
        inputs or InstallInputs(),
        registry="official",
        toolchain=tools,
        data_dir=DATA,
        seal=sealed,
    )


def test_npm_runs_with_npx_pinned_in_its_sandbox_with_a_private_dir() -> None:
    made = plan(npm_memory(), InstallInputs(grant_read=("/srv/docs",), network="none"))
    config = made.config
    assert (config.name, config.transport, config.command) == ("server-memory", Transport.STDIO, "/usr/bin/npx")
    assert config.args == ("-y", f"@modelcontextprotocol/server-memory@{memory_version()}")
    assert config.cwd == "/data/servers/server-memory" and made.private_dir == DATA / "servers/server-memory"
    assert config.sandbox == SandboxConfig(
        read=("/srv/docs",), write=("/data/servers/server-memory",), network=NetworkMode.NONE
    )
    assert config.origin is not None
    assert (config.origin.registry, config.origin.name) == ("official", "io.github.modelcontextprotocol/server-memory")
    assert config.env == {}
    assert made.warnings == ()


def test_pypi_runs_with_uvx_when_uv_is_there_else_in_a_venv_of_its_own() -> None:
    version = pypi_time()["version"]
    with_uv = plan(pypi_time(), InstallInputs(arguments={"local-timezone": "UTC"}))
    assert with_uv.config.command == "/usr/bin/uvx"
    assert with_uv.config.args == (f"mcp-server-time=={version}", "--local-timezone", "UTC")
    assert with_uv.venv is None
    without = plan(pypi_time(), tools=NO_UV)
    assert without.venv is not None
    assert without.venv.path == DATA / "servers/server-time/venv"
    assert without.venv.requirement == f"mcp-server-time=={version}"
    assert without.config.command == "/data/servers/server-time/venv/bin/mcp-server-time"
    assert without.config.args == ()


def test_oci_runs_in_docker_with_env_passed_by_name_and_not_in_the_gateway_sandbox() -> None:
    server = {
        "name": "io.example/box",
        "version": "2.0.0",
        "packages": [
            {
                "registryType": "oci",
                "identifier": "docker.io/example/box",
                "version": "2.0.0",
                "environmentVariables": [{"name": "TOKEN", "isSecret": True, "isRequired": True}],
            }
        ],
    }
    made = plan(server, InstallInputs(env={"TOKEN": "tok-123456"}))
    assert made.config.command == "/usr/bin/docker"
    assert made.config.args == ("run", "-i", "--rm", "-e", "TOKEN", "docker.io/example/box:2.0.0")
    assert made.config.env == {"TOKEN": sealed("tok-123456")}
    assert made.config.sandbox == SandboxConfig(enabled=False)
    assert any("container" in w for w in made.warnings)
    with pytest.raises(EntryRefusedError, match="neither docker nor podman is on PATH"):
        plan(server, InstallInputs(env={"TOKEN": "x"}), tools=NO_UV)


@pytest.mark.parametrize("kind", ["nuget", "mcpb", "cargo"])
def test_a_package_type_nothing_here_runs_is_refused_naming_the_type(kind: str) -> None:
    server = {"name": "io.example/x", "version": "1.0.0", "packages": [{"registryType": kind, "identifier": "X"}]}
    with pytest.raises(EntryRefusedError, match=f"package type '{kind}' is not supported"):
        plan(server)


def test_an_unrunnable_package_falls_back_to_the_next_one_or_a_remote() -> None:
    server = npm_memory()
    server["packages"].insert(0, {"registryType": "nuget", "identifier": "Acme.Server", "version": "1.0.0"})
    assert plan(server).config.command == "/usr/bin/npx"
    server = {**remote("https://mcp.example.com/mcp"), "packages": [{"registryType": "nuget", "identifier": "A"}]}
    made = plan(server, InstallInputs(arguments={"api_key": "k-0123456789"}))
    assert made.config.transport is Transport.HTTP


def test_a_remote_fills_url_variables_and_seals_its_secret_header() -> None:
    server = remote("https://{tenant}.example.com/mcp")
    server["remotes"][0]["variables"] = {"tenant": {"isRequired": True, "choices": ["acme", "globex"]}}
    made = plan(server, InstallInputs(arguments={"tenant": "acme", "api_key": "k-0123456789"}))
    assert made.config.base_url == "https://acme.example.com/mcp"
    assert made.config.headers == {"X-Api-Key": sealed("k-0123456789")}
    assert made.config.sandbox is None and made.private_dir is None
    assert made.config.origin is not None
    assert made.config.origin.arguments == {"tenant": "acme"}, "a secret's value is never kept in the clear"
    sse = {**server, "remotes": [{**server["remotes"][0], "type": "sse"}]}
    assert plan(sse, InstallInputs(arguments={"tenant": "acme", "api_key": "k"})).config.transport is Transport.SSE


def test_every_missing_required_input_is_listed_in_one_error() -> None:
    with pytest.raises(InstallInputError) as caught:
        plan(with_secrets())
    assert caught.value.problems == ["env WEATHER_API_KEY is required (API key)", "env REGION is required"]


@pytest.mark.parametrize(
    ("inputs", "problem"),
    [
        (InstallInputs(env={"WEATHER_API_KEY": "k", "REGION": "mars"}), "env REGION must be one of eu, us"),
        (InstallInputs(env={"WEATHER_API_KEY": "k", "REGION": "eu"}, arguments={"x": "1"}), "unknown argument 'x'"),
        (
            InstallInputs(env={"WEATHER_API_KEY": "k", "REGION": "eu"}, server_name="Bad Name"),
            "server_name: must match",
        ),
        (InstallInputs(env={"WEATHER_API_KEY": "k", "REGION": "eu"}, network="sideways"), "network: must be outbound"),
        (InstallInputs(env={"WEATHER_API_KEY": "k", "REGION": "eu"}, grant_read=("",)), "grant_read: each path"),
    ],
)
def test_a_bad_input_is_named(inputs: InstallInputs, problem: str) -> None:
    with pytest.raises(InstallInputError) as caught:
        plan(with_secrets(), inputs)
    assert problem in str(caught.value)


def test_secrets_are_sealed_references_kept_and_defaults_applied() -> None:
    made = plan(with_secrets(), InstallInputs(env={"WEATHER_API_KEY": "wk-secret-1", "REGION": "eu", "EXTRA": "1"}))
    assert made.config.env == {
        "WEATHER_API_KEY": sealed("wk-secret-1"),
        "REGION": "eu",
        "UNITS": "metric",
        "EXTRA": "1",
    }
    referenced = plan(with_secrets(), InstallInputs(env={"WEATHER_API_KEY": "${MY_KEY}", "REGION": "us"}))
    assert referenced.config.env["WEATHER_API_KEY"] == "${MY_KEY}"


def test_a_secret_command_line_argument_is_refused() -> None:
    server = npm_memory(packageArguments=[{"type": "named", "name": "--token", "isSecret": True}])
    with pytest.raises(InstallInputError, match="argument --token is secret"):
        plan(server, InstallInputs(arguments={"token": "t-0123456789"}))


def test_a_deleted_entry_is_refused_and_a_deprecated_one_warned_about() -> None:
    with pytest.raises(EntryRefusedError, match="is deleted in registry 'official'"):
        plan(npm_memory(), status="deleted")
    made = plan(npm_memory(), status="deprecated")
    assert made.warnings == (
        f"io.github.modelcontextprotocol/server-memory@{memory_version()} is deprecated in registry 'official'",
    )


def test_grants_are_refused_for_a_remote() -> None:
    with pytest.raises(InstallInputError, match="runs as a remote server"):
        plan(remote("https://h.example/mcp"), InstallInputs(arguments={"api_key": "k"}, grant_write=("/tmp",)))


@pytest.mark.parametrize(
    ("entry", "name"),
    [
        ("io.github.modelcontextprotocol/server-memory", "server-memory"),
        ("io.github.acme/Weather.API", "weather-api"),
        ("com.example/42", "mcp-42"),
        ("com.example/__", "mcp-server"),
    ],
)
def test_the_local_name_comes_from_the_entry_name(entry: str, name: str) -> None:
    assert local_name(entry) == name


@pytest.mark.parametrize(
    "argument",
    [
        {"type": "positional", "valueHint": "key", "isSecret": True, "default": "dflt-secret-123"},
        {
            "type": "named",
            "name": "--token",
            "value": "{tok}",
            "variables": {"tok": {"isSecret": True, "isRequired": True}},
        },
        {"type": "named", "name": "--token", "isSecret": True, "isRequired": True},
    ],
)
def test_a_secret_that_would_reach_the_command_line_is_refused_however_it_gets_there(argument: dict[str, Any]) -> None:
    with pytest.raises(InstallInputError) as caught:
        given = {"tok": "sk-secret-123456"} if "variables" in argument else {}
        plan(npm_memory(packageArguments=[argument]), InstallInputs(arguments=given))
    [problem] = caught.value.problems
    assert problem.endswith("is secret: command-line arguments cannot be kept sealed; not installed")
    assert "sk-secret" not in problem
    optional = {"type": "named", "name": "--token", "isSecret": True}
    assert plan(npm_memory(packageArguments=[optional])).config.args[-1] != "--token", "left out when not given"


def test_a_secret_in_a_remote_url_is_refused_without_showing_it() -> None:
    server = remote("https://mcp.example.com/{key}/mcp")
    server["remotes"][0]["variables"] = {"key": {"isRequired": True, "isSecret": True}}
    with pytest.raises(InstallInputError) as caught:
        plan(server, InstallInputs(arguments={"key": "sk-url-secret-123456", "api_key": "k-0123456789"}))
    assert caught.value.problems == [
        "url https://mcp.example.com/{key}/mcp: variable 'key' is secret, and a secret in a remote's URL "
        "cannot be kept sealed; not installed"
    ]


def test_a_named_flag_without_a_value_is_passed_bare_when_required() -> None:
    server = npm_memory(
        packageArguments=[
            {"type": "named", "name": "--stdio", "isRequired": True},
            {"type": "named", "name": "--debug"},
            {"type": "named", "name": "--port", "isRequired": True, "valueHint": "port"},
        ]
    )
    with pytest.raises(InstallInputError) as caught:
        plan(server)
    assert caught.value.problems == ["argument --port is required"]
    made = plan(server, InstallInputs(arguments={"port": "8080", "debug": ""}))
    assert made.config.args[2:] == ("--stdio", "--debug", "--port", "8080")


def test_inputs_kept_for_an_update_do_not_repeat_the_gateway_site_packages() -> None:
    first = plan(pypi_time(), tools=NO_UV)
    assert first.config.sandbox is not None and first.config.sandbox.read
    again = plan(pypi_time(), _inputs_of(first.config, DATA), tools=NO_UV)
    assert again.config.sandbox == first.config.sandbox
    kept = _inputs_of(again.config, DATA)
    assert kept.grant_read == () and kept.grant_write == ()


def test_an_update_keeps_the_sandbox_settings_the_inputs_do_not_carry() -> None:
    first = plan(npm_memory(), InstallInputs(grant_read=("/srv/docs",)), tools=NO_UV)
    assert first.config.sandbox is not None
    limits = {"enabled": True, "memory_mb": 256, "processes": 32, "cpu_secs": 60}
    installed = first.config.model_copy(update={"sandbox": first.config.sandbox.model_copy(update=limits)})
    again = _keeping_sandbox(plan(npm_memory(), _inputs_of(installed, DATA), tools=NO_UV), installed)
    assert again.config.sandbox == installed.sandbox
    boxed = {"name": "io.example/box", "version": "2", "packages": [{"registryType": "oci", "identifier": "ex/box"}]}
    in_docker = _keeping_sandbox(plan(boxed, tools=ALL_TOOLS), installed)
    assert in_docker.config.sandbox == SandboxConfig(enabled=False), "a container plan keeps its own"
