"""``/api/v1/aggregator/registry``: search the MCP Registries, install and update from them."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, status

from mcp_aggregator.admin.admin_gateway import GatewayDep
from mcp_aggregator.admin.registry_schemas import (
    EntryInputPublic,
    EntryPublic,
    EntrySearchResult,
    InstallResult,
    RegistryInstall,
    RegistryUpdate,
)
from mcp_aggregator.admin.schemas import OriginPublic
from mcp_aggregator.admin.server_views import server_public
from mcp_aggregator.installs.install_plan import InstallInputs, Toolchain, declared_runtime_arguments, what_runs
from mcp_aggregator.installs.installer import InstallOutcome, InstallRequest
from mcp_aggregator.installs.server_json import Input, Package, RegistryItem, Remote
from mcp_aggregator.registry import redact_url

router = APIRouter(prefix="/api/v1/aggregator/registry", tags=["registry"])

_ERROR_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"detail": {}}, "required": ["detail"]}


def _error(description: str) -> dict[str, Any]:
    return {"description": description, "content": {"application/json": {"schema": _ERROR_SCHEMA}}}


_ERRORS: dict[int | str, dict[str, Any]] = {
    404: _error("No such entry in the registries asked"),
    409: _error("Deleted, cannot run here, or the local name is taken"),
    422: _error(
        'Missing or invalid inputs ({"detail": {"message", "problems"}}), an invalid server.json '
        '({"detail": {"message", "field", "reason"}}), or the server limit'
    ),
    502: _error("The registry did not answer; nothing was registered"),
}


@router.get("/servers", responses={422: _error("No such registry configured, or none at all")})
async def search_entries(
    gateway: GatewayDep,
    q: Annotated[str, Query(max_length=200, description="Words of the name or description")] = "",
    registry: Annotated[str | None, Query(description="One of registries: (default: all)")] = None,
    refresh: Annotated[bool, Query(description="Refresh a stale copy from the registry first")] = True,
) -> EntrySearchResult:
    """Latest versions from the stored copies, refreshed (``updated_since``) when stale."""
    answer = await gateway.installer.registries.search(q, registry=registry, refresh=refresh)
    toolchain = gateway.installer.toolchain()
    return EntrySearchResult(
        servers=[entry_public(e.registry, e.item, toolchain) for e in answer.entries], problems=answer.problems
    )


@router.post("/install", status_code=status.HTTP_201_CREATED, responses=_ERRORS)
async def install_entry(gateway: GatewayDep, body: RegistryInstall) -> InstallResult:
    """Register the entry as a server and wait (``wait_secs``) until it is CONNECTED.

    A server that does not connect stays registered; ``connected`` is false and ``error``
    says why. Every failure before registration registers nothing.
    """
    name, version = body.name, body.version
    if name and "@" in name and version is None:
        name, _, version = name.partition("@")
    request = InstallRequest(
        name=name,
        version=version,
        registry=body.registry,
        server_json=body.server_json,
        wait_secs=body.wait_secs,
        inputs=InstallInputs(
            env=body.env,
            headers=body.headers,
            arguments=body.arguments,
            server_name=body.server_name,
            grant_read=tuple(body.grant_read),
            grant_write=tuple(body.grant_write),
            network=tuple(body.network) if isinstance(body.network, list) else body.network,
            allow_runtime_args=tuple(body.allow_runtime_args),
        ),
    )
    return await _result(gateway, await gateway.installer.install(gateway, request))


@router.post("/update", responses=_ERRORS)
async def update_server(gateway: GatewayDep, body: RegistryUpdate) -> InstallResult:
    """Move a server installed from a registry to ``version`` (default: the latest), keeping its
    inputs; those given are added (a new version may ask for more)."""
    given = InstallInputs(
        env=body.env,
        headers=body.headers,
        arguments=body.arguments,
        allow_runtime_args=tuple(body.allow_runtime_args),
    )
    outcome = await gateway.installer.update(
        gateway, body.server_name, body.version, wait_secs=body.wait_secs, given=given
    )
    return await _result(gateway, outcome)


async def _result(gateway: GatewayDep, outcome: InstallOutcome) -> InstallResult:
    # The installed server's own writes, not a start's queue of every server's.
    await gateway.flush(outcome.record.id)
    record = await gateway.registry.get_server(outcome.record.id)
    public = server_public(record, gateway.supervisors.get(record.name), scrub=gateway.scrub)
    assert public.origin is not None
    return InstallResult(
        server=public,
        origin=OriginPublic.model_validate(public.origin.model_dump()),
        connected=outcome.connected,
        status=outcome.status,
        error=outcome.error,
        warnings=list(outcome.warnings),
        previous_version=outcome.previous_version,
    )


def entry_public(registry: str, item: RegistryItem, toolchain: Toolchain) -> EntryPublic:
    server, meta = item.server, item.official
    chosen = what_runs(server, toolchain)
    shown = chosen or (server.packages[0] if server.packages else server.remotes[0])
    return EntryPublic(
        registry=registry,
        name=server.name,
        title=server.title,
        description=server.description,
        version=server.version,
        status=meta.status.value,
        runs=[_runs(server.version, p) for p in server.packages] + [_runs(server.version, r) for r in server.remotes],
        runs_here=None if chosen is None else _runs(server.version, chosen),
        inputs=_entry_inputs(shown),
        runtime_arguments=declared_runtime_arguments(shown) if isinstance(shown, Package) else [],
        published_at=meta.published_at,
        updated_at=meta.updated_at,
    )


def _runs(version: str, launch: Package | Remote) -> str:
    if isinstance(launch, Remote):
        return f"remote {launch.type} {redact_url(launch.url)}"
    return f"{launch.registry_type} {launch.identifier}@{launch.version or version}"


def _entry_inputs(launch: Package | Remote) -> list[EntryInputPublic]:
    inputs: list[EntryInputPublic] = []
    if isinstance(launch, Remote):
        inputs += [_input("header", h.name, h) for h in launch.headers if h.value is None]
        for header in launch.headers:
            inputs += [_input("variable", k, v) for k, v in header.variables.items()]
        return inputs + [_input("variable", k, v) for k, v in launch.variables.items()]
    inputs += [_input("env", v.name, v) for v in launch.environment_variables]
    for arg in (*launch.runtime_arguments, *launch.package_arguments):
        if arg.value is None:
            inputs.append(_input("argument", arg.key, arg))
        inputs += [_input("variable", k, v) for k, v in arg.variables.items()]
    return inputs


def _input(kind: str, name: str, item: Input) -> EntryInputPublic:
    return EntryInputPublic(
        kind=kind,
        name=name,
        description=item.description,
        required=item.is_required,
        secret=item.is_secret,
        default=None if item.is_secret else item.default,
        choices=list(item.choices) if item.choices else None,
    )
