"""A stdio server's entry and its sandbox turned into a launch plan: the ``bwrap`` command
line, the environment, the network rules and the limits. Pure: what the host has and where
the command's runtime lives come in as ``HostFacts`` and ``runtime``; ``sandbox_launch``
does the I/O.

Inside, the server sees the system's runtime read-only, its command's own runtime (a
virtualenv and the interpreter it links to, ``node_modules``) read-only, its working
directory read-only, its grants, a private home (``data_dir/sandbox/<server>/home``), the
runners' shared caches (``~/.npm``, ``~/.cache``) and a private ``/tmp``. The gateway's data
dir and configuration file are masked wherever a granted directory holds them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import PurePosixPath

from mcp_aggregator.sandbox.config import NetworkMode
from mcp_aggregator.sandbox.sandbox_policy import EffectiveSandbox, Limits

SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = (
    "/etc/alternatives",
    "/etc/ca-certificates",
    "/etc/ca-certificates.conf",
    "/etc/gai.conf",
    "/etc/group",
    "/etc/host.conf",
    "/etc/hosts",
    "/etc/ld.so.cache",
    "/etc/ld.so.conf",
    "/etc/ld.so.conf.d",
    "/etc/localtime",
    "/etc/mime.types",
    "/etc/nsswitch.conf",
    "/etc/os-release",
    "/etc/passwd",
    "/etc/pki",
    "/etc/protocols",
    "/etc/services",
    "/etc/ssl",
    "/etc/timezone",
)
"""The bits of ``/etc`` that libc, TLS and interpreters read; not ``shadow``, not keys."""
SLIRP_DNS = "10.0.2.3"
"""slirp4netns's resolver inside the namespace: it forwards to the host's resolver."""
PRIVATE_V4 = (
    "0.0.0.0/8",
    "10.0.0.0/8",
    "100.64.0.0/10",
    "127.0.0.0/8",
    "169.254.0.0/16",
    "172.16.0.0/12",
    "192.0.0.0/24",
    "192.168.0.0/16",
    "198.18.0.0/15",
    "224.0.0.0/3",
)
"""Loopback, private, shared, link-local (cloud metadata), benchmarking and multicast."""
BASE_PATH = "/usr/local/bin:/usr/bin:/bin"


@dataclass(frozen=True)
class HostFacts:
    """What the host offers (tool paths are None when missing)."""

    bwrap: str | None
    slirp4netns: str | None
    nft: str | None
    nsenter: str | None
    cgroups: str | None
    """``"v2"``, ``"v1"`` or None: where limits on memory and processes can be enforced."""
    addresses: tuple[str, ...] = ()
    """The host's own IPv4 addresses: unreachable from an ``outbound`` sandbox."""
    lang: str = "C.UTF-8"


@dataclass(frozen=True)
class Entry:
    """A stdio server's entry as it starts: the command resolved to an absolute path, the
    grants resolved (and checked to exist) by the shell."""

    name: str
    command: str
    args: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None
    """The entry's own ``cwd`` (shown inside read-only), or None."""
    gateway_cwd: str
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    runtime: tuple[str, ...] = ()
    """Read-only folders the command needs (its interpreter, its package directory)."""
    links: tuple[tuple[str, str], ...] = ()
    """Symbolic links (link, target) on the way to ``runtime`` folders, recreated inside."""


@dataclass(frozen=True)
class NetPlan:
    """A network namespace of the server's own, reached through slirp4netns, filtered by
    ``rules`` (nft) loaded before the server runs."""

    rules: str


@dataclass(frozen=True)
class LaunchPlan:
    sandboxed: bool
    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: str | None
    home: str | None = None
    make_dirs: tuple[str, ...] = ()
    resolv_conf: str | None = None
    """Where to write the resolver file bound over ``/etc/resolv.conf`` (outbound, allow-list)."""
    hosts: tuple[str, str] | None = None
    """An allow-list's ``/etc/hosts`` (where to write it, its text): its names, resolved at
    start, are all the server can look up (it has no DNS)."""
    net: NetPlan | None = None
    limits: Limits | None = None
    warnings: tuple[str, ...] = field(default=())


def unconfined(entry: Entry, host_env: Mapping[str, str], warnings: tuple[str, ...] = ()) -> LaunchPlan:
    """The plan of a server that runs as the gateway's user, as before sandboxes."""
    return LaunchPlan(
        sandboxed=False,
        argv=(entry.command, *entry.args),
        env=dict(host_env) | dict(entry.env),
        cwd=entry.cwd,
        warnings=warnings,
    )


def plan_launch(
    entry: Entry,
    sandbox: EffectiveSandbox,
    host: HostFacts,
    *,
    root: str,
    hidden: tuple[str, ...],
    allowed: tuple[tuple[str, int], ...] = (),
    names: tuple[tuple[str, str], ...] = (),
) -> LaunchPlan:
    """The bwrap plan for ``entry`` (the caller has checked that ``host.bwrap`` exists and
    that the network needs are met). ``root`` is ``data_dir/sandbox``; ``allowed`` the
    allow-list resolved to (address, port), ``names`` its names' (name, address)."""
    assert host.bwrap is not None
    own = f"{root}/{entry.name}"
    home = f"{own}/home"
    caches = (f"{root}/cache/npm", f"{root}/cache/xdg")
    argv: list[str] = [host.bwrap, "--die-with-parent", "--new-session", "--cap-drop", "ALL"]
    argv += ["--unshare-pid", "--unshare-ipc", "--unshare-uts", "--unshare-cgroup-try"]
    network = sandbox.network
    if network is not NetworkMode.HOST:
        argv.append("--unshare-net")
    for path in SYSTEM_DIRS:
        argv += ["--ro-bind-try", path, path]
    for path in ETC_FILES:
        argv += ["--ro-bind-try", path, path]
    resolv = None
    if network is NetworkMode.HOST:
        argv += ["--ro-bind-try", "/etc/resolv.conf", "/etc/resolv.conf"]
    elif network is not NetworkMode.NONE:
        resolv = f"{own}/resolv.conf"
        argv += ["--ro-bind", resolv, "/etc/resolv.conf"]
    hosts = None
    if isinstance(network, tuple):
        # DNS would carry data out to any name server: the names come from a hosts file.
        lines = ["127.0.0.1 localhost", *(f"{address} {name}" for name, address in names)]
        hosts = (f"{own}/hosts", "\n".join(lines) + "\n")
        argv += ["--ro-bind", hosts[0], "/etc/hosts"]
    argv += ["--proc", "/proc", "--dev", "/dev", "--tmpfs", "/tmp"]
    binds = [(path, "--ro-bind") for path in entry.runtime]
    if entry.cwd is not None and not _within(entry.cwd, (*entry.read, *entry.write)):
        binds.append((entry.cwd, "--ro-bind"))
    binds += [(path, "--ro-bind") for path in entry.read]
    binds += [(path, "--bind") for path in entry.write]
    visible = [path for path, _ in binds]
    mounts = binds + [(path, "--tmpfs" if is_dir else "--mask-file") for path, is_dir in _masks(hidden, visible)]
    # Outer paths first, so one inside another (a write grant in the working directory, a
    # mask over the data dir, a grant the operator made inside it) is mounted over it.
    for path, how in sorted(mounts, key=lambda mount: len(PurePosixPath(mount[0]).parts)):
        if how == "--tmpfs":
            argv += ["--tmpfs", path]
        elif how == "--mask-file":
            argv += ["--ro-bind", "/dev/null", path]
        else:
            argv += [how, path, path]
    for link, target in entry.links:
        if not _within(link, [p for p in visible if p != link]):  # a bound folder shows its links
            argv += ["--symlink", target, link]
    argv += ["--bind", home, home, "--bind", caches[0], f"{home}/.npm", "--bind", caches[1], f"{home}/.cache"]
    cwd = entry.cwd or (entry.gateway_cwd if _within(entry.gateway_cwd, visible) else home)
    argv += ["--chdir", cwd, "--", entry.command, *entry.args]
    # A script's ``#!/usr/bin/env node`` looks its interpreter up on PATH: the runtime found
    # for it (``~/.nvm/versions/node/v20``) must be on it, as it was on the operator's.
    runtime_bins = [f"{folder}/bin" for folder in entry.runtime]
    path_dirs = [str(PurePosixPath(entry.command).parent), *runtime_bins, *BASE_PATH.split(":")]
    env = {
        "PATH": ":".join(dict.fromkeys(path_dirs)),
        "HOME": home,
        "LANG": host.lang,
        "TMPDIR": "/tmp",
    } | dict(entry.env)
    net = None
    if network is NetworkMode.OUTBOUND:
        net = NetPlan(outbound_rules(host.addresses))
    elif isinstance(network, tuple):
        net = NetPlan(allow_list_rules(allowed))
    return LaunchPlan(
        sandboxed=True,
        argv=tuple(argv),
        env=env,
        cwd=None,
        home=home,
        make_dirs=(home, *caches),
        resolv_conf=resolv,
        hosts=hosts,
        net=net,
        limits=sandbox.limits,
    )


def _within(path: str, parents: tuple[str, ...] | list[str]) -> bool:
    candidate = PurePosixPath(path)
    return any(candidate == PurePosixPath(p) or PurePosixPath(p) in candidate.parents for p in parents)


def _masks(hidden: tuple[str, ...], visible: list[str]) -> list[tuple[str, bool]]:
    """Hidden paths (``(path, is_dir)``; a name ending in ``/`` is a directory) that a
    visible directory would otherwise show; masked after the binds, so they win."""
    masks = []
    for item in hidden:
        is_dir = item.endswith("/")
        path = item.rstrip("/") or "/"
        if _within(path, visible):
            masks.append((path, is_dir))
    return masks


def _header(*, dns: bool) -> list[str]:
    lines = [
        "table inet mcp_sandbox {",
        "  chain output {",
        "    type filter hook output priority 0; policy accept;",
        '    oif "lo" accept',
    ]
    if dns:
        lines += [f"    ip daddr {SLIRP_DNS} udp dport 53 accept", f"    ip daddr {SLIRP_DNS} tcp dport 53 accept"]
    return lines


def outbound_rules(addresses: tuple[str, ...]) -> str:
    """nft rules for ``outbound``: anything on the internet; not the host's loopback (also
    refused by slirp4netns), its own addresses, private or link-local ranges; no IPv6
    (slirp4netns gives none)."""
    lines = _header(dns=True)
    lines.append(f"    ip daddr {{ {', '.join(PRIVATE_V4)} }} reject")
    if addresses:
        lines.append(f"    ip daddr {{ {', '.join(addresses)} }} reject")
    lines += ["    meta nfproto ipv6 reject", "  }", "}", ""]
    return "\n".join(lines)


def allow_list_rules(allowed: tuple[tuple[str, int], ...]) -> str:
    """nft rules for an allow-list: the listed (address, TCP port) pairs only; no DNS (the
    names are in the sandbox's hosts file), which would let data out in the queries."""
    lines = _header(dns=False)
    for address, port in allowed:
        family = "ip6" if ":" in address else "ip"
        lines.append(f"    {family} daddr {address} tcp dport {port} accept")
    lines += ["    reject", "  }", "}", ""]
    return "\n".join(lines)
