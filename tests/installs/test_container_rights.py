"""An OCI entry's runtimeArguments: shown in the entry view and the install plan; those that
widen the container's rights refused unless the operator allows them by name."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from mcp_aggregator.admin.registry_routes import entry_public
from mcp_aggregator.errors import InstallInputError
from mcp_aggregator.installs.container_rights import widening_arguments
from mcp_aggregator.installs.install_plan import InstallInputs, InstallPlan, Toolchain, plan_install
from mcp_aggregator.installs.server_json import parse_item
from tests.cli.conftest import Cli
from tests.installs.local_registry import item
from tests.serve.http_face import face_settings, http_face

DOCKER = Toolchain(container="/usr/bin/docker")
HOME = "/home/op"
DATA = "/srv/gateway/.aggregator"


def boxed(*runtime: dict[str, Any]) -> dict[str, Any]:
    package = {
        "registryType": "oci",
        "identifier": "docker.io/example/box",
        "version": "2.0.0",
        "transport": {"type": "stdio"},
        "runtimeArguments": list(runtime),
    }
    return {"name": "io.example/box", "version": "2.0.0", "packages": [package]}


def named(name: str, value: str | None = None) -> dict[str, Any]:
    return {"type": "named", "name": name, **({"value": value} if value is not None else {}), "isRequired": True}


def plan(server: dict[str, Any], inputs: InstallInputs | None = None) -> InstallPlan:
    return plan_install(
        parse_item(item(server)),
        inputs or InstallInputs(),
        registry="official",
        toolchain=DOCKER,
        data_dir=Path(DATA),
        seal=str,
        home=Path(HOME),
    )


@pytest.mark.parametrize(
    ("args", "widening"),
    [
        (["--privileged"], ["--privileged"]),
        (["--cap-add", "SYS_ADMIN", "--cap-drop", "ALL"], ["--cap-add SYS_ADMIN"]),
        (
            ["--pid=host", "--ipc", "host", "--network", "host", "--net=bridge"],
            ["--pid=host", "--ipc host", "--network host"],
        ),
        (
            ["--device", "/dev/kvm", "--security-opt", "seccomp=unconfined"],
            ["--device /dev/kvm", "--security-opt seccomp=unconfined"],
        ),
        (["-v", "/:/host"], ["-v /:/host"]),
        (["--volume=/home:/h:ro", "-v", f"{HOME}/.ssh:/keys"], ["--volume=/home:/h:ro", f"-v {HOME}/.ssh:/keys"]),
        (
            ["-v", f"{DATA}:/data", "-v", "/var/run/docker.sock:/var/run/docker.sock"],
            [f"-v {DATA}:/data", "-v /var/run/docker.sock:/var/run/docker.sock"],
        ),
        (["--mount", "type=bind,source=/,target=/host"], ["--mount type=bind,source=/,target=/host"]),
        (["-v", "/srv/shared:/shared", "-v", "cache:/cache", "--mount", "type=tmpfs,target=/t", "-e", "X"], []),
        (["--network", "none", "--read-only", "--memory", "512m"], []),
    ],
)
def test_arguments_that_widen_a_containers_rights_are_found_as_written(args: list[str], widening: list[str]) -> None:
    found = widening_arguments(args, home=HOME, data_dir=DATA)
    assert [item.argument for item in found] == widening


def test_an_oci_plan_with_privileged_is_refused_with_a_message_naming_it() -> None:
    with pytest.raises(InstallInputError) as refused:
        plan(boxed(named("--privileged"), named("-v", "/:/host")))
    assert refused.value.problems == [
        "runtimeArguments: '--privileged' gives the container every capability and the host's devices; not "
        "installed unless you allow it: --allow-runtime-arg --privileged (REST: allow_runtime_args)",
        "runtimeArguments: '-v /:/host' mounts the host's root filesystem; not installed unless you allow it: "
        "--allow-runtime-arg '-v /:/host' (REST: allow_runtime_args)",
    ]


def test_an_argument_the_operator_allows_by_name_runs_and_the_plan_says_so() -> None:
    made = plan(
        boxed(named("--privileged"), named("--memory", "512m")), InstallInputs(allow_runtime_args=("--privileged",))
    )
    assert made.config.args[:6] == ("run", "-i", "--rm", "--privileged", "--memory", "512m")
    assert made.warnings[:2] == (
        "docker run with the entry's runtimeArguments: --privileged --memory 512m",
        "runtimeArguments: '--privileged' gives the container every capability and the host's devices: "
        "allowed at install",
    )


def test_the_entry_view_shows_the_runtime_arguments_even_where_no_container_runs() -> None:
    entry = boxed(named("--cap-add", "NET_ADMIN"), {"type": "named", "name": "--port", "valueHint": "port"})
    view = entry_public("official", parse_item(item(entry)), Toolchain())
    assert view.runtime_arguments == ["--cap-add", "NET_ADMIN", "--port", "<port>"]


def test_an_allowed_argument_the_entry_does_not_have_is_refused_naming_the_ones_it_has() -> None:
    with pytest.raises(InstallInputError) as refused:
        plan(boxed(named("--privileged")), InstallInputs(allow_runtime_args=("--privilged", "--privileged")))
    assert refused.value.problems == [
        "allow_runtime_args: '--privilged' is not a runtimeArgument of this entry that widens its rights "
        "(those are: '--privileged')"
    ]


async def test_registry_add_of_an_oci_entry_with_privileged_is_refused_naming_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A docker on PATH, so the plan is a container's; the refusal comes before anything runs it.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "docker").write_text("#!/bin/sh\nexit 1\n")
    (bin_dir / "docker").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    entry = tmp_path / "server.json"
    entry.write_text(json.dumps(boxed(named("--privileged"))))
    async with http_face(face_settings(tmp_path / "data")) as face:
        refused = await Cli(face)("registry", "add", "--file", str(entry), "--as", "box")
        assert refused.exit_code == 1
        assert "runtimeArguments: '--privileged' gives the container every capability" in refused.output
        assert "--allow-runtime-arg --privileged" in refused.output
        listed = await Cli(face)("servers", "list", "--json")
        assert json.loads(listed.stdout) == [], "nothing was registered"
