"""The search answer's view of an entry: the inputs shown are those of what would run here."""

from __future__ import annotations

from mcp_aggregator.admin.registry_routes import entry_public
from mcp_aggregator.installs.install_plan import Toolchain
from mcp_aggregator.installs.server_json import parse_item
from tests.installs.local_registry import item, memory_version, npm_memory, remote

NPX = Toolchain(npx="/usr/bin/npx")


def both() -> dict[str, object]:
    """An OCI package (its own inputs) first, then the npm one, then a remote."""
    server = npm_memory("io.example/both")
    oci = {"registryType": "oci", "identifier": "ex/box", "version": "1", "environmentVariables": [{"name": "BOX"}]}
    server["packages"].insert(0, oci)
    return {**server, "remotes": remote("https://mcp.example.com/mcp")["remotes"]}


def names(view: object) -> list[str]:
    return [i.name for i in view.inputs]  # type: ignore[attr-defined]


def test_the_inputs_shown_are_those_of_the_first_package_this_machine_runs() -> None:
    view = entry_public("official", parse_item(item(both())), NPX)
    assert view.runs_here == f"npm @modelcontextprotocol/server-memory@{memory_version()}"
    assert names(view) == ["MEMORY_FILE_PATH"]
    assert len(view.runs) == 3


def test_a_remote_is_shown_with_its_own_inputs_when_no_package_runs_here() -> None:
    view = entry_public("official", parse_item(item(both())), Toolchain())
    assert view.runs_here == "remote streamable-http https://mcp.example.com/mcp"
    assert [(i.kind, i.name, i.secret) for i in view.inputs] == [("variable", "api_key", True)]
    nothing = entry_public("official", parse_item(item(npm_memory())), Toolchain())
    assert (nothing.runs_here, names(nothing)) == (None, ["MEMORY_FILE_PATH"])
