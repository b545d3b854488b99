"""How each measured path is started: the echo upstream, the gateway, and the peer proxies,
for each transport pair (client side -> upstream side)."""

from __future__ import annotations

import contextlib
import functools
import itertools
import json
import shutil
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import urlsplit

import httpx2
from mcp import Client, StdioServerParameters, stdio_client
from mcp.client._transport import TransportStreams
from mcp.client.streamable_http import streamable_http_client

from .procs import (
    BENCH,
    REPO,
    BenchError,
    child_env,
    free_port,
    managed_process,
    wait_for_http,
    wait_for_port,
)

PYTHON = sys.executable
ECHO = BENCH / "echo_server.py"
RELAY = BENCH / "relay.py"
OTLP_SINK = BENCH / "otlp_sink.py"
PAIRS = ("http-http", "stdio-http", "http-stdio", "stdio-stdio")
PEERS = (
    "direct",
    "relay",
    "gateway",
    "gateway-audit",
    "gateway-trace",
    "gateway-full",
    "gateway-profile",
    "fastmcp",
    "mcp-proxy",
)
GATEWAY_PEERS = ("gateway", "gateway-audit", "gateway-trace", "gateway-full", "gateway-profile")
PEER_TITLES = {
    "direct": "direct",
    "relay": "bare byte relay (floor)",
    "gateway": "gateway",
    "gateway-audit": "gateway + audit",
    "gateway-trace": "gateway + tracing (OTLP)",
    "gateway-full": "gateway (full pipeline)",
    "gateway-profile": "gateway, profile + policy",
    "fastmcp": "FastMCP proxy",
    "mcp-proxy": "mcp-proxy",
}
ADMIN_TOKEN = "bench-admin-token"
READ_TIMEOUT_S = 300.0


class Unavailable(Exception):
    """A path this run cannot measure (a setting or a package is missing); shown as n/a."""


@dataclass(frozen=True)
class Venv:
    """A peer installed into its own virtualenv under bench/, made on first use."""

    name: str
    spec: str
    check: str

    @property
    def path(self) -> Path:
        return BENCH / f".venv-{self.name}"

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    def ensure(self) -> Path:
        if self.python.exists() and subprocess.run([str(self.python), "-c", self.check]).returncode == 0:
            return self.python
        print(f"  creating {self.path.relative_to(REPO)} with {self.spec} ...", flush=True)
        base = shutil.which("python3") or PYTHON
        for step in (
            [base, "-m", "venv", str(self.path)],
            [str(self.python), "-m", "pip", "install", "-q", self.spec],
        ):
            done = subprocess.run(step, capture_output=True, text=True)
            if done.returncode != 0:
                raise BenchError(f"{' '.join(step)} failed:\n{(done.stdout + done.stderr)[-2000:]}")
        return self.python


FASTMCP = Venv("fastmcp", "fastmcp==4.1.2", "import fastmcp, sys; sys.exit(fastmcp.__version__ != '4.1.2')")
MCP_PROXY = Venv("mcp-proxy", "mcp-proxy==0.13.0", "import mcp_proxy")


@dataclass(frozen=True)
class Pair:
    client: str
    upstream: str

    @classmethod
    def parse(cls, text: str) -> Pair:
        client, _, upstream = text.partition("-")
        if client not in ("http", "stdio") or upstream not in ("http", "stdio"):
            raise ValueError(f"transport pair {text!r}: expected one of {', '.join(PAIRS)}")
        return cls(client, upstream)

    def __str__(self) -> str:
        return f"{self.client}-{self.upstream}"


def unsupported(peer: str, pair: Pair) -> str | None:
    """Why ``peer`` cannot serve ``pair``, or None if it can."""
    if peer == "mcp-proxy" and pair.client == pair.upstream:
        return "mcp-proxy only bridges stdio<->HTTP"
    if peer == "relay" and pair.client != pair.upstream:
        return "a byte relay cannot change transport"
    return None


@dataclass(frozen=True)
class Upstream:
    """The echo upstream as each path reaches it: a running HTTP server, or a stdio command."""

    transport: str
    url: str | None = None

    @property
    def argv(self) -> list[str]:
        return [PYTHON, str(ECHO), "stdio"]


@contextlib.contextmanager
def http_echo(workdir: Path) -> Iterator[Upstream]:
    port = free_port()
    log = workdir / "echo-http.log"
    with managed_process([PYTHON, str(ECHO), "http", "--port", str(port)], log) as proc:
        wait_for_port(port, proc, log)
        yield Upstream("http", f"http://127.0.0.1:{port}/mcp")


@dataclass(frozen=True)
class Endpoint:
    """How the bench reaches one started path. ``make_client`` opens one session."""

    make_client: Callable[..., Client]


@dataclass
class PathEnv:
    """What starting a path needs: a scratch dir, and the gateway settings this checkout knows."""

    workdir: Path
    errlog: TextIO
    serve_fields: frozenset[str] = field(default_factory=frozenset)
    counter: Iterator[int] = field(default_factory=itertools.count)


@functools.cache
def tls_context() -> ssl.SSLContext:
    return ssl.create_default_context()


@contextlib.asynccontextmanager
async def http_transport(url: str) -> AsyncIterator[TransportStreams]:
    """The SDK's streamable HTTP transport on an HTTP client of its own, as ``Client(url)``
    makes, except that the CA bundle is loaded once: httpx loads it per client (~60 ms of
    CPU), which would make opening many sessions measure the bench, not the server."""
    timeout = httpx2.Timeout(30.0, read=READ_TIMEOUT_S)
    async with (
        httpx2.AsyncClient(verify=tls_context(), timeout=timeout) as http,
        streamable_http_client(url, http_client=http) as streams,
    ):
        yield streams


def http_client(url: str) -> Callable[..., Client]:
    def make(mode: str = "auto") -> Client:
        return Client(http_transport(url), cache=None, read_timeout_seconds=READ_TIMEOUT_S, mode=mode)

    return make


def stdio_client_of(
    argv: Callable[[], list[str]], env: PathEnv, extra_env: dict[str, str] | None = None
) -> Callable[..., Client]:
    """One subprocess per session: ``argv()`` is called per session (it may write a config)."""

    def make(mode: str = "auto") -> Client:
        command, *args = argv()
        params = StdioServerParameters(command=command, args=args, cwd=str(REPO), env=child_env(**(extra_env or {})))
        transport = stdio_client(params, errlog=env.errlog)
        return Client(transport, cache=None, read_timeout_seconds=READ_TIMEOUT_S, mode=mode)

    return make


# ---------------------------------------------------------------- the gateway


def serve_fields_known() -> frozenset[str]:
    """The ``serve:`` settings this checkout's gateway accepts (it forbids unknown ones)."""
    code = "from mcp_aggregator.settings.serve_settings import ServeSettings as S; print(*S.model_fields)"
    done = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=child_env(), cwd=REPO)
    if done.returncode != 0:
        raise BenchError(f"cannot import the gateway's settings:\n{done.stderr[-1500:]}")
    return frozenset(done.stdout.split())


PROFILE = "bench"
PROFILE_SECTIONS: dict[str, Any] = {
    "profiles": [{"name": PROFILE, "tools": ["echo.*"], "exposure": "passthrough"}],
    "policies": [{"name": "no-destructive", "deny": 'tool.annotations.destructiveHint && client.name != "ops"'}],
}
"""``gateway-profile``: the client's calls go to a profile's endpoint (its slice of the catalogue)
and every call passes a CEL policy rule."""


def gateway_config(
    upstream: Upstream,
    env: PathEnv,
    *,
    fast_path: bool | None,
    large: bool = False,
    profile: bool = False,
    audit: bool = False,
) -> Path:
    """A one-upstream passthrough config; JSON is valid YAML, so it is written as such."""
    index = next(env.counter)
    if upstream.url is not None:
        server: dict[str, Any] = {"name": "echo", "transport": "http", "base_url": upstream.url}
    else:
        command, *args = upstream.argv
        server = {"name": "echo", "transport": "stdio", "command": command, "args": args, "cwd": str(REPO)}
    serve: dict[str, Any] = {
        "exposure": "passthrough",
        "admin_token": ADMIN_TOKEN,
        "data_dir": str(env.workdir / f"gateway-data-{index}"),
        "drain_timeout_secs": 1,
    }
    if fast_path is not None:
        serve["fast_path"] = fast_path
    if large and "max_result_bytes" in env.serve_fields:
        # The echo's str result travels twice (text content and structuredContent): a 50 MB
        # blob is a 100 MB message, past the default cap the benchmark is not about.
        serve["max_result_bytes"] = 256 * 1024 * 1024
    # The embedding model is the search exposure's; passthrough measures the relay alone.
    config: dict[str, Any] = {"servers": [server], "serve": serve, "search": {"embedder": "none"}}
    if profile:
        config.update(PROFILE_SECTIONS)
    if "audit" in settings_fields_known():
        # Plain passthrough rows measure the relay alone; the audit has its own row.
        config["audit"] = {"enabled": audit}
    path = env.workdir / f"gateway-{index}.yaml"
    path.write_text(json.dumps(config, indent=2))
    return path


@contextlib.contextmanager
def otlp_sink(env: PathEnv) -> Iterator[dict[str, str]]:
    """A local OTLP/HTTP receiver; yields the ``OTEL_*`` environment that exports to it."""
    port = free_port()
    log = env.workdir / f"otlp-sink-{port}.log"
    with managed_process([PYTHON, str(OTLP_SINK), "--port", str(port)], log) as proc:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc, log)
        yield {
            "OTEL_TRACES_EXPORTER": "otlp",
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{port}",
        }


@contextlib.contextmanager
def start_gateway(
    pair: Pair, upstream: Upstream, env: PathEnv, *, variant: str = "gateway", large: bool = False
) -> Iterator[Endpoint]:
    """``variant``: one of ``GATEWAY_PEERS`` (plain passthrough, with the audit, with tracing
    exported to a local OTLP receiver, with the fast path off, or on a profile's endpoint)."""
    full_pipeline, profile = variant == "gateway-full", variant == "gateway-profile"
    if full_pipeline and "fast_path" not in env.serve_fields:
        raise Unavailable("serve.fast_path is not a setting of this checkout yet")
    if profile and "profiles" not in settings_fields_known():
        raise Unavailable("profiles are not a setting of this checkout yet")
    if variant in ("gateway-audit", "gateway-trace") and "audit" not in settings_fields_known():
        raise Unavailable("this checkout has no audit trail or traces yet")
    fast_path = (not full_pipeline) if "fast_path" in env.serve_fields else None
    audit = variant == "gateway-audit"

    def argv(*front: str) -> list[str]:
        config = gateway_config(upstream, env, fast_path=fast_path, large=large, profile=profile, audit=audit)
        return [PYTHON, "-m", "mcp_aggregator", "serve", "--config", str(config), "--exposure", "passthrough", *front]

    with contextlib.ExitStack() as stack:
        otel = stack.enter_context(otlp_sink(env)) if variant == "gateway-trace" else {}
        if pair.client == "stdio":
            stdio = ("--transport", "stdio", "--profile", PROFILE) if profile else ("--transport", "stdio")
            yield Endpoint(stdio_client_of(lambda: argv(*stdio), env, otel))
            return
        port = free_port()
        log = env.workdir / f"gateway-{pair}-{port}.log"
        command = argv("--transport", "http", "--host", "127.0.0.1", "--port", str(port))
        with managed_process(command, log, child_env(**otel)) as proc:
            wait_for_http(f"http://127.0.0.1:{port}/healthz", proc, log)
            yield Endpoint(http_client(f"http://127.0.0.1:{port}/mcp" + (f"/{PROFILE}" if profile else "")))


@functools.cache
def settings_fields_known() -> frozenset[str]:
    """The top-level settings sections this checkout's gateway accepts."""
    code = "from mcp_aggregator.settings import Settings as S; print(*S.model_fields)"
    done = subprocess.run([PYTHON, "-c", code], capture_output=True, text=True, env=child_env(), cwd=REPO)
    if done.returncode != 0:
        raise BenchError(f"cannot import the gateway's settings:\n{done.stderr[-1500:]}")
    return frozenset(done.stdout.split())


# ---------------------------------------------------------------- peers


@contextlib.contextmanager
def start_direct(upstream: Upstream, env: PathEnv) -> Iterator[Endpoint]:
    if upstream.url is not None:
        yield Endpoint(http_client(upstream.url))
    else:
        yield Endpoint(stdio_client_of(lambda: upstream.argv, env))


@contextlib.contextmanager
def start_fastmcp(pair: Pair, upstream: Upstream, env: PathEnv) -> Iterator[Endpoint]:
    python = FASTMCP.ensure()
    source = ["--url", upstream.url] if upstream.url else ["--stdio", "--", *upstream.argv]
    script = [str(python), str(BENCH / "fastmcp_proxy.py")]
    if pair.client == "stdio":
        yield Endpoint(stdio_client_of(lambda: [*script, "--front", "stdio", *source], env))
        return
    port = free_port()
    log = env.workdir / f"fastmcp-{pair}-{port}.log"
    with managed_process([*script, "--port", str(port), *source], log) as proc:
        wait_for_http(f"http://127.0.0.1:{port}/healthz", proc, log)
        yield Endpoint(http_client(f"http://127.0.0.1:{port}/mcp"))


@contextlib.contextmanager
def start_mcp_proxy(pair: Pair, upstream: Upstream, env: PathEnv) -> Iterator[Endpoint]:
    script = str(MCP_PROXY.ensure().parent / "mcp-proxy")
    if pair.client == "stdio":
        assert upstream.url is not None
        yield Endpoint(stdio_client_of(lambda: [script, "--transport", "streamablehttp", str(upstream.url)], env))
        return
    port = free_port()
    log = env.workdir / f"mcp-proxy-{pair}-{port}.log"
    argv = [script, "--host", "127.0.0.1", "--port", str(port), "--log-level", "WARNING", "--", *upstream.argv]
    with managed_process(argv, log) as proc:
        wait_for_http(f"http://127.0.0.1:{port}/status", proc, log)
        yield Endpoint(http_client(f"http://127.0.0.1:{port}/mcp"))


@contextlib.contextmanager
def start_relay(pair: Pair, upstream: Upstream, env: PathEnv) -> Iterator[Endpoint]:
    """``bench/relay.py``: the upstream's bytes copied through one more process, unread."""
    if pair.client == "stdio":
        yield Endpoint(stdio_client_of(lambda: [PYTHON, str(RELAY), "stdio", "--", *upstream.argv], env))
        return
    assert upstream.url is not None
    upstream_port = urlsplit(upstream.url).port
    assert upstream_port is not None
    port = free_port()
    log = env.workdir / f"relay-{pair}-{port}.log"
    with managed_process([PYTHON, str(RELAY), "tcp", "--port", str(port), "--to", str(upstream_port)], log) as proc:
        wait_for_port(port, proc, log)
        yield Endpoint(http_client(f"http://127.0.0.1:{port}/mcp"))


def start_path(peer: str, pair: Pair, upstream: Upstream, env: PathEnv) -> contextlib.AbstractContextManager[Endpoint]:
    if peer == "direct":
        return start_direct(upstream, env)
    if peer == "relay":
        return start_relay(pair, upstream, env)
    if peer in GATEWAY_PEERS:
        return start_gateway(pair, upstream, env, variant=peer)
    if peer == "fastmcp":
        return start_fastmcp(pair, upstream, env)
    if peer == "mcp-proxy":
        return start_mcp_proxy(pair, upstream, env)
    raise ValueError(f"unknown peer {peer!r}")
