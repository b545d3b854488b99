"""The commands that talk to a running gateway load only what they need.

Each case runs in a fresh interpreter (this one has loaded everything already) and reports
which of the gateway's heavy dependencies it loaded. A command against a running gateway
loads no HTTP library beyond the standard one, no pydantic (Typer would load it to convert
option values) and no other command's module; printing JSON, it loads no rich either. How
fast that makes the command is measured by ``bench/cli_bench.py``, not asserted here.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import anyio

from tests.serve.http_face import face_settings, http_face

HEAVY = (
    "onnxruntime",
    "numpy",
    "sqlalchemy",
    "alembic",
    "mcp",
    "mcp_types",
    "fastapi",
    "starlette",
    "uvicorn",
    "yaml",
    "mcp_aggregator.gateway",
    "mcp_aggregator.settings.settings",
    "cel",
)
COMMAND_MODULES = (
    "mcp_aggregator.cli.activity_commands",
    "mcp_aggregator.cli.approvals_commands",
    "mcp_aggregator.cli.registry_commands",
    "mcp_aggregator.cli.servers_commands",
    "mcp_aggregator.cli.tools_commands",
    "mcp_aggregator.cli.serve_command",
)
GATEWAY = tuple(name for name in HEAVY if name not in ("yaml", "mcp_aggregator.settings.settings"))
"""What a command pointed at a gateway by its configuration file must not load either: it
reads the file (YAML, the settings models), not the gateway's parts."""

PROBE = """
import json, sys
from typer.testing import CliRunner
from mcp_aggregator.cli import app
result = CliRunner().invoke(app, sys.argv[1:], env={"MCP_AGGREGATOR_TOKEN": ""})
heavy = sorted(name for name in json.loads(sys.stdin.read()) if name in sys.modules)
print(json.dumps({"exit_code": result.exit_code, "output": result.output, "heavy": heavy}))
"""


async def _probe(*args: str, heavy: tuple[str, ...] = HEAVY) -> dict[str, object]:
    done = await anyio.run_process([sys.executable, "-c", PROBE, *args], input=json.dumps(heavy).encode(), check=False)
    assert done.returncode == 0, done.stderr.decode()
    answer: dict[str, object] = json.loads(done.stdout)
    return answer


async def test_help_loads_none_of_the_gateway_nor_an_http_client_nor_a_command() -> None:
    answer = await _probe("--help", heavy=(*HEAVY, "httpx", "pydantic", *COMMAND_MODULES))
    assert answer["exit_code"] == 0, answer["output"]
    assert "servers" in str(answer["output"])
    assert answer["heavy"] == []


async def test_servers_list_against_a_running_gateway_loads_none_of_the_gateway_nor_pydantic_nor_httpx(
    tmp_path: Path,
) -> None:
    others = tuple(name for name in COMMAND_MODULES if name != "mcp_aggregator.cli.servers_commands")
    async with http_face(face_settings(tmp_path)) as face:
        args = ("servers", "list", "--gateway", face.base_url, "--token", face.admin_token)
        answer = await _probe(*args, "--json", heavy=(*HEAVY, "httpx", "httpcore", "pydantic", "rich", *others))
        table = await _probe(*args, heavy=(*HEAVY, "httpx", "pydantic"))
    assert answer["exit_code"] == 0, answer["output"]
    assert json.loads(str(answer["output"])) == []
    assert answer["heavy"] == []
    assert table["exit_code"] == 0, table["output"]
    assert "transport" in str(table["output"])
    assert table["heavy"] == []


async def test_servers_list_with_a_configuration_file_loads_the_settings_but_none_of_the_gateway(
    tmp_path: Path,
) -> None:
    async with http_face(face_settings(tmp_path)) as face:
        config = tmp_path / "aggregator.yaml"
        config.write_text(f"serve: {{port: {face.port}, admin_token: {face.admin_token}}}\n", encoding="utf-8")
        answer = await _probe("servers", "list", "--json", "--config", str(config), heavy=GATEWAY)
    assert answer["exit_code"] == 0, answer["output"]
    assert json.loads(str(answer["output"])) == []
    assert answer["heavy"] == []


async def test_every_command_is_built_without_the_gateway() -> None:
    # Typer reads every command's options to build any one; ``--help`` of each group
    # proves their modules import nothing heavy at the top.
    for group in ("servers", "tools", "registry"):
        answer = await _probe(group, "--help")
        assert answer["exit_code"] == 0, answer["output"]
        assert answer["heavy"] == [], group
