"""``Installer``: from a registry entry (or a ``server.json``) to a registered, connected server.

The steps: look the entry up (live), plan the configuration (``plan_install``), make what
the server needs on this machine (its private directory; for PyPI without uv, its virtual
environment), register it like ``servers add``, and wait until it is CONNECTED or has said
why not. Nothing is registered when a step before registration fails. An update whose
new version does not connect puts the old configuration back.
"""

from __future__ import annotations

import contextlib
import logging
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import anyio

from mcp_aggregator.errors import (
    EntryRefusedError,
    InstallError,
    InstallInputError,
    ServerExistsError,
    ServerNotFoundError,
)
from mcp_aggregator.health.server_state import ServerStatus, is_exposed
from mcp_aggregator.installs.install_plan import (
    InstallInputs,
    InstallPlan,
    Toolchain,
    gateway_site_dirs,
    plan_install,
)
from mcp_aggregator.installs.mcp_registries import McpRegistries
from mcp_aggregator.installs.pypi_venv import build_venv
from mcp_aggregator.installs.sealed_env import SealedEnv
from mcp_aggregator.installs.server_json import RegistryItem, parse_server_json
from mcp_aggregator.registry import Registry, ServerRecord, check_server_limit
from mcp_aggregator.sandbox.config import NetworkMode
from mcp_aggregator.sandbox.sandbox_policy import SandboxSite
from mcp_aggregator.settings.server_config import ServerConfig
from mcp_aggregator.settings.server_records import config_from_record
from mcp_aggregator.upstreams.server_supervisor import ServerSupervisor

logger = logging.getLogger(__name__)

CONTAINER_PROGRAMS = ("docker", "podman")

FILE_REGISTRY = "file"
"""The origin's registry name for a server installed from a ``server.json`` file."""


class InstallTarget(Protocol):
    """The gateway operations an install uses (``Gateway`` has them)."""

    @property
    def registry(self) -> Registry: ...

    @property
    def supervisors(self) -> Mapping[str, ServerSupervisor]: ...

    async def register_server(self, config: ServerConfig, *, auto_connect: bool) -> ServerRecord: ...

    async def connect_server(self, server_id: str) -> ServerStatus: ...

    async def remove_server_by_id(self, server_id: str) -> None: ...

    async def wait_until(self, predicate: Callable[[], bool], *, timeout_secs: float) -> None: ...

    def scrub(self, text: str) -> str: ...


@dataclass(frozen=True)
class InstallRequest:
    name: str | None = None
    """``namespace/name`` in a registry; or ``server_json`` instead."""
    version: str | None = None
    registry: str | None = None
    server_json: dict[str, Any] | None = None
    inputs: InstallInputs = field(default_factory=InstallInputs)
    wait_secs: float = 60.0


@dataclass(frozen=True)
class InstallOutcome:
    record: ServerRecord
    status: ServerStatus
    error: str | None
    warnings: tuple[str, ...]
    previous_version: str | None = None

    @property
    def connected(self) -> bool:
        return is_exposed(self.status)


class Installer:
    def __init__(
        self,
        registries: McpRegistries,
        env: SealedEnv,
        data_dir: Path,
        *,
        sandbox: SandboxSite,
        which: Callable[[str], str | None] = shutil.which,
    ) -> None:
        self.registries = registries
        self._sandbox = sandbox
        """Where install steps that run a package's code are confined (``pypi_venv``)."""
        self._env = env
        # Absolute before it becomes a grant: the sandbox reads a relative grant from the
        # server's cwd, not from the gateway's (``.aggregator``, the default, is relative).
        self._data_dir = data_dir.absolute()
        self._which = which

    def toolchain(self) -> Toolchain:
        return Toolchain(
            npx=self._which("npx"),
            uvx=self._which("uvx"),
            container=next(filter(None, map(self._which, CONTAINER_PROGRAMS)), None),
        )

    async def entry(self, request: InstallRequest) -> tuple[str, RegistryItem]:
        """(registry name, item) the request names: a file's ``server.json`` or a live look-up."""
        if request.server_json is not None:
            return FILE_REGISTRY, RegistryItem(server=parse_server_json(request.server_json))
        if not request.name:
            raise InstallInputError(["name: give an entry name (namespace/name) or a server.json"])
        return await self.registries.look_up(request.name, request.version, registry=request.registry)

    def plan(self, registry: str, item: RegistryItem, inputs: InstallInputs) -> InstallPlan:
        return plan_install(
            item,
            inputs,
            registry=registry,
            toolchain=self.toolchain(),
            data_dir=self._data_dir,
            seal=self._env.seal,
            home=Path.home(),
        )

    async def install(self, target: InstallTarget, request: InstallRequest) -> InstallOutcome:
        """Register and connect the entry. Raises the ``InstallError`` family before
        anything is registered, ``ServerExistsError`` when the local name is taken."""
        registry, item = await self.entry(request)
        plan = self.plan(registry, item, request.inputs)
        await _refuse_taken(target.registry, plan.config.name)
        check_server_limit(target.registry.limits, len(target.supervisors) + 1)
        await self._prepare(plan)
        for warning in plan.warnings:
            logger.warning("installing %s: %s", plan.config.name, warning)
        record = await target.register_server(plan.config, auto_connect=True)
        outcome = await _connected(target, record, plan.warnings, request.wait_secs)
        if outcome.error is not None:
            # Kept registered, as ``servers add`` keeps a server: it is retried and connects
            # once what it lacked (a network, an upstream) is there.
            hint = f"it stays registered and is retried; to install it again, first: servers remove {record.name}"
            outcome = replace(outcome, error=f"{outcome.error} ({hint})")
        return outcome

    async def update(
        self,
        target: InstallTarget,
        server_name: str,
        version: str | None = None,
        *,
        wait_secs: float = 60.0,
        given: InstallInputs | None = None,
    ) -> InstallOutcome:
        """Move an installed server to ``version`` (the latest when None), keeping its inputs;
        the ``env``, ``headers`` and ``arguments`` of ``given`` are added over them."""
        record = await target.registry.get_server_by_name(server_name)
        old = config_from_record(record)
        if old.origin is None or old.origin.registry == FILE_REGISTRY:
            raise EntryRefusedError(f"server {server_name!r} was not installed from a registry: nothing to update")
        registry, item = await self.registries.look_up(old.origin.name, version, registry=old.origin.registry)
        if item.server.version == old.origin.version:
            status = target.supervisors[server_name].status if server_name in target.supervisors else record.status
            return InstallOutcome(record, status, None, (f"already at {old.origin.version}",), old.origin.version)
        inputs = _with_given(_inputs_of(old, self._data_dir), given or InstallInputs())
        plan = _keeping_sandbox(self.plan(registry, item, inputs), old)
        await self._prepare(plan)
        await target.remove_server_by_id(record.id)
        new_record = await target.register_server(plan.config, auto_connect=True)
        outcome = await _connected(target, new_record, plan.warnings, wait_secs)
        if not outcome.connected:
            # The old version worked (or at least was what the user chose): put it back
            # rather than leave a server that does not connect in its place.
            await target.remove_server_by_id(new_record.id)
            if plan.venv is not None:
                await self._restore_venv(old)
            await target.register_server(old, auto_connect=record.enabled)
            raise EntryRefusedError(
                f"{item.server.name}@{item.server.version} did not connect ({outcome.error}); "
                f"server {server_name!r} is kept at {old.origin.version}"
            )
        return replace(outcome, previous_version=old.origin.version)

    async def _restore_venv(self, old: ServerConfig) -> None:
        """Put the old version back into the virtual environment the new one was installed in
        (it has the same path); a failure is logged: the old server then says why it fails."""
        assert old.origin is not None
        try:
            registry, item = await self.registries.look_up(
                old.origin.name, old.origin.version, registry=old.origin.registry
            )
            await self._prepare(self.plan(registry, item, _inputs_of(old, self._data_dir)))
        except InstallError as exc:
            logger.warning("updating %s: its environment was not put back to %s: %s", old.name, old.origin.version, exc)

    async def _prepare(self, plan: InstallPlan) -> None:
        if plan.private_dir is not None:
            await anyio.Path(plan.private_dir).mkdir(parents=True, exist_ok=True, mode=0o700)
        if plan.venv is not None:
            identifier = Path(plan.venv.launcher).name
            await build_venv(plan.venv, identifier, self._env, site=self._sandbox)


async def _refuse_taken(registry: Registry, name: str) -> None:
    try:
        await registry.get_server_by_name(name)
    except ServerNotFoundError:
        return
    raise ServerExistsError(name)


async def _connected(
    target: InstallTarget, record: ServerRecord, warnings: tuple[str, ...], wait_secs: float
) -> InstallOutcome:
    """Wait until the new server is CONNECTED (or DEGRADED) or has failed once, or the wait ends."""
    await target.connect_server(record.id)
    sup = target.supervisors.get(record.name)

    def settled() -> bool:
        return sup is None or is_exposed(sup.status) or sup.last_error is not None

    with contextlib.suppress(TimeoutError):
        await target.wait_until(settled, timeout_secs=wait_secs)
    status = sup.status if sup is not None else record.status
    error = None
    if sup is not None and not is_exposed(sup.status):
        why = sup.last_error or sup.error_message
        error = target.scrub(why) if why else f"still {status.value} after {wait_secs:g} s"
    return InstallOutcome(record, status, error, warnings)


def _keeping_sandbox(plan: InstallPlan, old: ServerConfig) -> InstallPlan:
    """``plan`` with the sandbox settings the inputs do not carry (``enabled``, the limits)
    as the installed server had them; a plan that runs in a container keeps its own."""
    new = plan.config.sandbox
    in_container = old.command is not None and Path(old.command).name in CONTAINER_PROGRAMS
    if new is None or old.sandbox is None or new.enabled is False or in_container:
        return plan
    kept = old.sandbox.model_copy(update={"read": new.read, "write": new.write, "network": new.network})
    return replace(plan, config=plan.config.model_copy(update={"sandbox": kept}))


def _with_given(kept: InstallInputs, given: InstallInputs) -> InstallInputs:
    return replace(
        kept,
        env={**kept.env, **given.env},
        headers={**kept.headers, **given.headers},
        arguments={**kept.arguments, **given.arguments},
        # Not kept from the install (a container's rights are allowed again, for each version).
        allow_runtime_args=given.allow_runtime_args,
    )


def _inputs_of(config: ServerConfig, data_dir: Path) -> InstallInputs:
    """The inputs an installed server was made with, as far as its config keeps them
    (secrets stay sealed; secret arguments were never kept)."""
    assert config.origin is not None
    private_dir = data_dir / "servers" / config.name
    sandbox = config.sandbox
    network: str | tuple[str, ...] | None = None
    if sandbox is not None and sandbox.network is not None:
        network = sandbox.network.value if isinstance(sandbox.network, NetworkMode) else sandbox.network
    return InstallInputs(
        env=dict(config.env),
        headers=dict(config.headers),
        arguments=dict(config.origin.arguments),
        server_name=config.name,
        # The gateway's site-packages are the plan's own addition for a venv, not a grant.
        grant_read=tuple(p for p in (sandbox.read if sandbox is not None else ()) if p not in gateway_site_dirs()),
        # An install made with a relative data dir kept its private folder relative.
        grant_write=tuple(
            p for p in (sandbox.write if sandbox is not None else ()) if Path(p).absolute() != private_dir
        ),
        network=network,
    )
