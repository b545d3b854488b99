"""Running an install step (``pip install``, the new environment's Python) in a sandbox.

``pip install`` runs the package's build code, and the new environment's Python runs the
``.pth`` files its packages installed: code from the package index, run before anyone chose
to start the server. So these steps get the sandbox a server gets (``sandbox``), with the
grants an install needs: the gateway's Python and site-packages read-only (pip is the
gateway's), a local package folder pip was pointed at read-only, the environment's folder
writable, nothing else of the machine; of the gateway's environment only what tells pip
where the index is (``PIP_*``, proxies). The network is ``outbound`` (the internet, not the
host's own services), or the host's where the index or proxy is itself on the host's
loopback or a private address (the operator's own mirror).
"""

from __future__ import annotations

import ipaddress
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import anyio
import anyio.abc

from mcp_aggregator.sandbox.config import NetworkMode, SandboxConfig
from mcp_aggregator.sandbox.sandbox_launch import SandboxLaunch
from mcp_aggregator.sandbox.sandbox_policy import SandboxSite, effective

_PROXIES = ("HTTPS_PROXY", "HTTP_PROXY", "NO_PROXY", "https_proxy", "http_proxy", "no_proxy")
_INDEXES = ("PIP_INDEX_URL", "PIP_EXTRA_INDEX_URL", "HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy")
_PATHS = ("PIP_FIND_LINKS", "PIP_CONFIG_FILE", "PIP_CERT", "REQUESTS_CA_BUNDLE", "SSL_CERT_FILE")


@dataclass(frozen=True)
class Done:
    returncode: int
    stdout: bytes
    stderr: bytes


def install_env(env: Mapping[str, str]) -> dict[str, str]:
    """What of the gateway's environment an install step gets: pip's own settings and the
    proxies, nothing else (no tokens, no keys)."""
    kept = {key: value for key, value in env.items() if key.startswith("PIP_") or key in _PROXIES}
    return kept | {"PIP_NO_CACHE_DIR": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}


def install_reads(env: Mapping[str, str]) -> tuple[str, ...]:
    """Local paths pip was pointed at (a folder of packages, its config, CA bundle) that exist."""
    found = []
    for key in _PATHS:
        for item in env.get(key, "").split():
            path = item.removeprefix("file://")
            if path.startswith("/") and os.path.exists(path):
                found.append(os.path.realpath(path))
    return tuple(dict.fromkeys(found))


def install_network(env: Mapping[str, str]) -> NetworkMode:
    """``host`` where the index or a proxy is on the host's loopback or a private address
    (only the host's network reaches it), else ``outbound``."""
    for key in _INDEXES:
        for url in env.get(key, "").split():
            host = urlsplit(url if "://" in url else f"http://{url}").hostname or ""
            if host == "localhost" or host.endswith(".localhost"):
                return NetworkMode.HOST
            try:
                address = ipaddress.ip_address(host)
            except ValueError:
                continue
            if address.is_private or address.is_loopback or address.is_link_local:
                return NetworkMode.HOST
    return NetworkMode.OUTBOUND


async def run_confined(
    name: str,
    argv: Sequence[str],
    env: Mapping[str, str],
    *,
    site: SandboxSite,
    read: tuple[str, ...],
    write: tuple[str, ...],
    network: NetworkMode,
) -> Done:
    """Run ``argv`` to its end in a sandbox of its own (named ``name``), with ``env`` as its
    whole environment besides ``PATH``/``HOME``/``LANG``/``TMPDIR``. Where the gateway's
    servers run unsandboxed (``serve.sandbox.enabled: false``, or no ``bwrap``) so does this,
    with ``env`` alone all the same. Raises ``SandboxError`` when the sandbox cannot be set
    up."""
    defaults = SandboxConfig(enabled=site.defaults.enabled)
    own = SandboxConfig(read=read, write=write, network=network)
    launch = SandboxLaunch(
        name,
        argv[0],
        tuple(argv[1:]),
        env,
        None,
        effective(defaults, own),
        site,
        {"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
    )
    launch.prepare()
    async with launch.running() as spawn:
        process = await anyio.open_process(
            list(spawn.argv),
            env=dict(spawn.env),
            cwd=spawn.cwd,
            pass_fds=spawn.pass_fds,
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        async with process:
            try:
                await launch.release()
            except BaseException:
                process.kill()
                raise
            out, err = bytearray(), bytearray()
            async with anyio.create_task_group() as tg:
                assert process.stdout is not None and process.stderr is not None
                tg.start_soon(_collect, process.stdout, out)
                tg.start_soon(_collect, process.stderr, err)
            returncode = await process.wait()
    return Done(returncode, bytes(out), bytes(err))


async def _collect(stream: anyio.abc.ByteReceiveStream, into: bytearray) -> None:
    async for chunk in stream:
        into += chunk
