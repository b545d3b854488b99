"""The commands that run a one-off gateway of their own (``query``, ``tools search``,
``servers``), run in this process: the test is about what they print, and a fresh
interpreter would cost seconds of imports per command. ``serve`` stays a real process: what
it shows is the exit a shell sees, with no traceback (it also sets up the process's logging)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import yaml
from typer.testing import CliRunner, Result

from mcp_aggregator.cli import app
from tests.conftest import REPO, stdio_fixture


def write_config(tmp_path: Path, **extra: object) -> Path:
    config = {
        "servers": [stdio_fixture("alpha").model_dump(mode="json"), stdio_fixture("beta").model_dump(mode="json")],
        "registry": {"database_url": f"sqlite+aiosqlite:///{tmp_path}/registry.db"},
        "search": {"embedder": "none"},
        **extra,
    }
    path = tmp_path / "aggregator.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def invoke(*args: str) -> Result:
    """The command as ``mcp-aggregator`` runs it; an exception it did not turn into its own
    exit (which a shell would see as a traceback) is raised here, failing the test."""
    result = CliRunner().invoke(app, list(args), env={"MCP_AGGREGATOR_TOKEN": ""})
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        raise result.exception
    return result


def test_query_command_prints_the_contract_answer(tmp_path: Path) -> None:
    result = invoke("query", "needle in a haystack", "--config", str(write_config(tmp_path)), "-n", "10", "--json")
    assert result.exit_code == 0, result.stderr
    answer = json.loads(result.stdout)
    metadata = answer["metadata"]
    assert (metadata["serversQueried"], metadata["serversSucceeded"]) == (2, 2)
    # "alpha results for ..." and "beta results for ..." are near-duplicates: one stays.
    assert (metadata["totalResultsRaw"], metadata["totalResultsDedup"], metadata["resultsReturned"]) == (2, 1, 1)
    assert answer["results"][0]["rank"] == 1


def test_query_command_prints_a_table_for_people(tmp_path: Path) -> None:
    result = invoke("query", "needle in a haystack", "--config", str(write_config(tmp_path)), "-n", "10")
    assert result.exit_code == 0, result.stderr
    assert "results for needle in a haystack" in result.stdout
    assert result.stdout.splitlines()[-1] == "1 of 1 results (2 before dedup) from 2 of 2 servers"


def test_query_command_reports_invalid_arguments_without_a_traceback(tmp_path: Path) -> None:
    result = invoke("query", "x", "--config", str(write_config(tmp_path)), "-n", "500")
    assert result.exit_code == 2
    assert isinstance(result.exception, SystemExit)
    assert result.stderr == "mcp-aggregator: error: invalid query: maxResults: Must be between 10 and 100, got 500\n"


def test_tools_search_command_lists_matches(tmp_path: Path) -> None:
    result = invoke("tools", "search", "add two integers", "--config", str(write_config(tmp_path)), "-k", "3")
    assert result.exit_code == 0, result.stderr
    assert "alpha.add" in result.stdout and "beta.add" in result.stdout


def test_servers_command_shows_status_and_tool_counts(tmp_path: Path) -> None:
    result = invoke("servers", "--config", str(write_config(tmp_path)))
    assert result.exit_code == 0, result.stderr
    lines = [line.split() for line in result.stdout.splitlines()]
    assert [line[:2] for line in lines] == [["alpha", "CONNECTED"], ["beta", "CONNECTED"]]


def test_serving_on_a_public_address_without_client_auth_is_refused(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "mcp_aggregator", "serve", "--config", str(write_config(tmp_path)),
         "--host", "0.0.0.0", "--port", "0"],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2
    assert "refusing to bind to 0.0.0.0: clients of /mcp must authenticate beyond loopback" in result.stderr
    assert "Traceback" not in result.stderr
