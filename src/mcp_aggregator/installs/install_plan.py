"""``plan_install``: a registry entry and the user's inputs become a ``ServerConfig`` (pure).

Everything that depends on the machine (which tools are on PATH, where the data dir is,
how a secret is sealed) comes in as arguments, so the mapping is tested with tables.
"""

from __future__ import annotations

import re
import shlex
import site
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from mcp_aggregator.errors import EntryRefusedError, InstallInputError
from mcp_aggregator.installs.container_rights import widening_arguments
from mcp_aggregator.installs.input_values import InputValues, secret_variables
from mcp_aggregator.installs.server_json import (
    Argument,
    EntryStatus,
    KeyValueInput,
    Package,
    RegistryItem,
    Remote,
    ServerJson,
)
from mcp_aggregator.sandbox.config import SandboxConfig
from mcp_aggregator.settings.server_config import MAX_DESCRIPTION_LENGTH, MAX_NAME_LENGTH, ServerConfig, ServerOrigin

SUPPORTED_TYPES = ("npm", "pypi", "oci")
VENV_LAUNCHER_DIR = "bin"


@dataclass(frozen=True)
class Toolchain:
    """The programs found on this machine (``None``: not on PATH)."""

    npx: str | None = None
    uvx: str | None = None
    container: str | None = None
    """``docker`` or ``podman``."""


@dataclass(frozen=True)
class InstallInputs:
    """What the user gave: values keyed as the entry names them, and the sandbox grants."""

    env: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    arguments: Mapping[str, str] = field(default_factory=dict)
    """Argument values by flag (without dashes) or ``valueHint``, and ``{variable}`` values."""
    server_name: str | None = None
    grant_read: tuple[str, ...] = ()
    grant_write: tuple[str, ...] = ()
    network: str | tuple[str, ...] | None = None
    allow_runtime_args: tuple[str, ...] = ()
    """OCI ``runtimeArguments`` that widen the container's rights, allowed as written
    (``--privileged``, ``--cap-add NET_ADMIN``): without this, such an entry is refused."""


@dataclass(frozen=True)
class PypiVenv:
    """A virtual environment to make (no uv here) before the server can start."""

    path: Path
    requirement: str
    """``identifier==version``."""
    launcher: str
    """The command the config runs: ``path/bin/<identifier>``."""


@dataclass(frozen=True)
class InstallPlan:
    config: ServerConfig
    private_dir: Path | None = None
    """stdio: the server's own writable directory (its cwd), to be made before it starts."""
    venv: PypiVenv | None = None
    warnings: tuple[str, ...] = ()


def local_name(entry_name: str) -> str:
    """A server name from an entry name: ``io.github.acme/Weather.API`` -> ``weather-api``."""
    tail = entry_name.rsplit("/", 1)[-1].lower()
    name = re.sub(r"[^a-z0-9_-]+", "-", tail).strip("-_")
    if not name or not name[0].isalpha():
        name = f"mcp-{name}" if name else "mcp-server"
    return name[:MAX_NAME_LENGTH]


def plan_install(
    item: RegistryItem,
    inputs: InstallInputs,
    *,
    registry: str,
    toolchain: Toolchain,
    data_dir: Path,
    seal: Callable[[str], str],
    home: Path | None = None,
) -> InstallPlan:
    """The configuration to register for ``item``. ``home`` (the operator's) is a folder no
    container may mount (nor may ``/``, the data dir or a container engine's socket).

    The first package this machine can run is used, else the first remote. Raises
    ``EntryRefusedError`` (deleted, or nothing here can run it: each package type named
    with why) and ``InstallInputError`` (every missing required input in one error).
    """
    entry = item.server
    if item.official.status is EntryStatus.DELETED:
        raise EntryRefusedError(f"{entry.name}@{entry.version} is deleted in registry {registry!r}: not installed")
    warnings = []
    if item.official.status is EntryStatus.DEPRECATED:
        warnings.append(f"{entry.name}@{entry.version} is deprecated in registry {registry!r}")
    name = inputs.server_name or local_name(entry.name)
    values = InputValues(inputs.arguments, seal)
    reasons = []
    for package in entry.packages:
        why_not = _cannot_run(package, toolchain)
        if why_not is None:
            launch = _package_plan(package, entry.version, name, inputs, values, toolchain, data_dir, home)
            values.raise_problems()
            data = {**launch.config, "name": name, "description": entry.description}
            return InstallPlan(
                config=_validated(data, _origin(item, registry, values)),
                private_dir=launch.private_dir,
                venv=launch.venv,
                warnings=(*warnings, *launch.warnings),
            )
        reasons.append(why_not)
    if entry.remotes:
        remote = _remote_config(entry.remotes[0], inputs, values)
        if inputs.grant_read or inputs.grant_write or inputs.network is not None:
            values.problem("grant_read/grant_write/network: this entry runs as a remote server, not in a sandbox here")
        values.raise_problems()
        config = _validated({**remote, "name": name, "description": entry.description}, _origin(item, registry, values))
        return InstallPlan(config=config, warnings=tuple(warnings))
    raise EntryRefusedError(f"{entry.name}@{entry.version} cannot run here: " + "; ".join(reasons))


def what_runs(entry: ServerJson, toolchain: Toolchain) -> Package | Remote | None:
    """What ``plan_install`` would run of ``entry`` here: the first package this machine can
    run, else the first remote (None: nothing)."""
    for package in entry.packages:
        if _cannot_run(package, toolchain) is None:
            return package
    return entry.remotes[0] if entry.remotes else None


@dataclass(frozen=True)
class _Launch:
    """A package's part of the plan: the config fields that run it, what it needs made first."""

    config: dict[str, Any]
    private_dir: Path
    venv: PypiVenv | None
    warnings: tuple[str, ...]


def _origin(item: RegistryItem, registry: str, values: InputValues) -> ServerOrigin:
    kept = {key: value for key, value in values.arguments.items() if key not in values.secret_keys}
    return ServerOrigin(registry=registry, name=item.server.name, version=item.server.version, arguments=kept)


def _cannot_run(package: Package, toolchain: Toolchain) -> str | None:
    kind = package.registry_type.lower()
    if kind not in SUPPORTED_TYPES:
        return f"package type {package.registry_type!r} is not supported (npm, pypi and oci are)"
    if package.transport.type != "stdio":
        return f"{kind} package {package.identifier}: transport {package.transport.type} is not supported (stdio is)"
    if kind == "npm" and toolchain.npx is None:
        return f"npm package {package.identifier}: npx is not on PATH (install Node.js)"
    if kind == "oci" and toolchain.container is None:
        return f"oci package {package.identifier}: neither docker nor podman is on PATH"
    return None


def _package_plan(
    package: Package,
    entry_version: str,
    name: str,
    inputs: InstallInputs,
    values: InputValues,
    toolchain: Toolchain,
    data_dir: Path,
    home: Path | None,
) -> _Launch:
    kind = package.registry_type.lower()
    version = package.version or entry_version
    private_dir = data_dir / "servers" / name
    env = _env_values(package.environment_variables, inputs.env, values)
    runtime_args = _arguments(package.runtime_arguments, values)
    package_args = _arguments(package.package_arguments, values)
    _unknown_arguments(package, inputs, values)
    warnings: list[str] = []
    venv: PypiVenv | None = None
    sandbox = _sandbox(inputs, private_dir, values)
    if kind == "npm":
        assert toolchain.npx is not None
        command, args = toolchain.npx, [*runtime_args, "-y", f"{package.identifier}@{version}", *package_args]
    elif kind == "pypi" and toolchain.uvx is not None:
        command, args = toolchain.uvx, [*runtime_args, f"{package.identifier}=={version}", *package_args]
    elif kind == "pypi":
        path = private_dir / "venv"
        launcher = str(path / VENV_LAUNCHER_DIR / package.identifier)
        venv = PypiVenv(path=path, requirement=f"{package.identifier}=={version}", launcher=launcher)
        command, args = launcher, package_args
        # Layered on the gateway's site-packages (pypi_venv): read-only inside the sandbox too.
        added = tuple(d for d in gateway_site_dirs() if d not in sandbox.read)
        sandbox = sandbox.model_copy(update={"read": (*sandbox.read, *added)})
        if runtime_args:
            warnings.append("runtimeArguments are for uvx and were left out (uv is not on PATH)")
    if kind != "oci" and inputs.allow_runtime_args:
        values.problem("allow_runtime_args: only an OCI package runs with runtimeArguments that widen its rights")
    if kind == "oci":
        assert toolchain.container is not None
        image = (
            package.identifier if ":" in package.identifier.rsplit("/", 1)[-1] else f"{package.identifier}:{version}"
        )
        env_flags = [token for key in env for token in ("-e", key)]
        warnings += _container_rights(runtime_args, inputs, values, home=home, data_dir=data_dir)
        command, args = toolchain.container, ["run", "-i", "--rm", *runtime_args, *env_flags, image, *package_args]
        # The container is the isolation here; wrapping the docker client in the gateway's
        # sandbox would only cut it off from the daemon.
        sandbox = SandboxConfig(enabled=False)
        warnings.append(f"runs in a {Path(toolchain.container).name} container, not in the gateway's sandbox")
    config = {"transport": "stdio", "command": command, "args": args, "env": env, "cwd": str(private_dir)}
    return _Launch({**config, "sandbox": sandbox}, private_dir, venv, tuple(warnings))


def declared_runtime_arguments(package: Package) -> list[str]:
    """A package's ``runtimeArguments`` as the entry declares them, for the entry view: a
    value given or defaulted shown, else its hint (``<port>``); a secret one as ``<secret>``."""
    out: list[str] = []
    for arg in package.runtime_arguments:
        value = "<secret>" if arg.is_secret else arg.value or arg.default
        if value is None and not (arg.type == "named" and _is_flag(arg)):
            value = f"<{arg.value_hint or arg.name or 'value'}>"
        if arg.type == "named":
            assert arg.name is not None
            out += [arg.name] if value is None else [arg.name, value]
        elif value is not None:
            out.append(value)
    return out


def _container_rights(
    runtime_args: list[str], inputs: InstallInputs, values: InputValues, *, home: Path | None, data_dir: Path
) -> list[str]:
    """Refuse the ``runtimeArguments`` that widen the container's rights unless allowed as
    written; say what the container runs with either way."""
    said = [f"docker run with the entry's runtimeArguments: {' '.join(runtime_args)}"] if runtime_args else []
    found = widening_arguments(runtime_args, home=str(home) if home else "/nonexistent", data_dir=str(data_dir))
    for item in found:
        if item.argument in inputs.allow_runtime_args:
            said.append(f"runtimeArguments: {item.argument!r} {item.why}: allowed at install")
        else:
            values.problem(
                f"runtimeArguments: {item.argument!r} {item.why}; not installed unless you allow it: "
                f"--allow-runtime-arg {shlex.quote(item.argument)} (REST: allow_runtime_args)"
            )
    named = {item.argument for item in found}
    for allowed in inputs.allow_runtime_args:
        if allowed not in named:
            values.problem(
                f"allow_runtime_args: {allowed!r} is not a runtimeArgument of this entry that widens its rights"
                + (f" (those are: {', '.join(repr(a) for a in sorted(named))})" if named else " (it has none)")
            )
    return said


def gateway_site_dirs() -> tuple[str, ...]:
    """The gateway's own site-packages, which a per-server environment is layered on (and
    which its sandbox must therefore let it read)."""
    return tuple(p for p in site.getsitepackages() if Path(p).is_dir())


def _sandbox(inputs: InstallInputs, private_dir: Path, values: InputValues) -> SandboxConfig:
    """The defaults, the private directory writable, and what the user granted."""
    try:
        return SandboxConfig(
            read=inputs.grant_read, write=(str(private_dir), *inputs.grant_write), network=inputs.network
        )
    except ValidationError as exc:
        for err in exc.errors():
            field = {"read": "grant_read", "write": "grant_write"}.get(str(err["loc"][0]), str(err["loc"][0]))
            values.problem(f"{field}: {err['msg'].removeprefix('Value error, ')}")
        return SandboxConfig()


def _remote_config(remote: Remote, inputs: InstallInputs, values: InputValues) -> dict[str, Any]:
    hidden = secret_variables(remote.url, remote.variables)
    if hidden:
        # A URL is used as it is stored (connections, health checks, the views), so a
        # sealed value could not be opened in it, and an open one would be stored and shown.
        values.problem(
            f"url {remote.url}: variable {hidden[0]!r} is secret, and a secret in a remote's URL "
            "cannot be kept sealed; not installed"
        )
        url = remote.url
    else:
        url = values.template(remote.url, remote.variables, label=f"url {remote.url}", secret=False)
    headers = _env_values(remote.headers, inputs.headers, values, what="header")
    declared = set(remote.variables) | {v for h in remote.headers for v in h.variables}
    for key in inputs.arguments:
        if key not in declared:
            values.problem(
                f"unknown argument {key!r} (this entry's remote takes: {', '.join(sorted(declared)) or 'none'})"
            )
    if remote.type == "sse":
        return {"transport": "sse", "url": url, "headers": headers}
    return {"transport": "http", "base_url": url, "headers": headers}


def _env_values(
    declared: tuple[KeyValueInput, ...], given: Mapping[str, str], values: InputValues, *, what: str = "env"
) -> dict[str, str]:
    """Declared variables resolved (given, value, default; required ones checked), then the
    undeclared ones the user gave, passed as they are."""
    out = {}
    for item in declared:
        field = "env" if what == "env" else "headers"
        value = values.resolve(item, given.get(item.name), label=f"{what} {item.name}", field=field, key=item.name)
        if value is not None:
            out[item.name] = value
    names = {item.name for item in declared}
    out.update({key: value for key, value in given.items() if key not in names})
    return out


def _arguments(declared: tuple[Argument, ...], values: InputValues) -> list[str]:
    out: list[str] = []
    for arg in declared:
        label = f"argument {arg.name or arg.value_hint}"
        given = values.given(arg.key)
        if arg.is_secret or secret_variables(arg.value or "", arg.variables):
            if given is not None or arg.value is not None or arg.default is not None or arg.is_required:
                # Arguments are passed as stored (not expanded at start), and anyone on the
                # machine may read a command line: a secret there could not stay sealed.
                values.problem(f"{label} is secret: command-line arguments cannot be kept sealed; not installed")
            continue
        if arg.type == "named" and given is None and _is_flag(arg):
            if arg.is_required:
                assert arg.name is not None
                out.append(arg.name)
            continue
        value = values.resolve(arg, given, label=label, field="arguments", key=arg.key)
        if value is None:
            continue
        if arg.type == "named":
            assert arg.name is not None
            out += [arg.name, value] if value else [arg.name]
        else:
            out.append(value)
    return out


def _is_flag(arg: Argument) -> bool:
    """A named argument that takes no value (``--stdio``): nothing says what a value would be."""
    return (
        arg.value is None
        and arg.default is None
        and arg.value_hint is None
        and not arg.choices
        and arg.format in (None, "boolean")
    )


def _unknown_arguments(package: Package, inputs: InstallInputs, values: InputValues) -> None:
    declared = {a.key for a in (*package.runtime_arguments, *package.package_arguments)}
    for inp in (*package.runtime_arguments, *package.package_arguments, *package.environment_variables):
        declared |= set(inp.variables)
    for key in inputs.arguments:
        if key not in declared:
            values.problem(f"unknown argument {key!r} (this package takes: {', '.join(sorted(declared)) or 'none'})")


def _validated(data: dict[str, Any], origin: ServerOrigin) -> ServerConfig:
    """The config; its errors name the field but never quote the input (it may be a secret)."""
    if data.get("description") and len(data["description"]) > MAX_DESCRIPTION_LENGTH:
        data = {**data, "description": data["description"][: MAX_DESCRIPTION_LENGTH - 1] + "…"}
    try:
        return ServerConfig.model_validate({**data, "origin": origin})
    except ValidationError as exc:
        problems = []
        for err in exc.errors():
            loc = ".".join(str(part) for part in err["loc"])
            msg = err["msg"].removeprefix("Value error, ")
            problems.append(f"{'server_name' if loc == 'name' else loc or 'config'}: {msg}")
        raise InstallInputError(problems) from exc
