"""Tool-call latency and throughput: direct vs through the gateway vs through FastMCP's proxy.

Usage::

    .venv/bin/python bench/proxy_bench.py [--calls N] [--quick] [--profile]

For an HTTP and a stdio echo upstream (``bench/echo_server.py``), each path is measured
with the official SDK client (``mcp.Client``, response cache off) at concurrency 1 and
32; concurrency 32 is 32 closed-loop workers sharing one session, and, unless
``--quick``, also spread over several sessions. Paths:

- ``direct``: the client talks to the upstream itself (HTTP, or a stdio subprocess).
- ``gateway``: ``mcp-aggregator serve --transport http --exposure passthrough``.
- ``fastmcp``: ``create_proxy(upstream, mode="auto")`` from ``fastmcp==4.1.2``, run in its own
  venv (``bench/.venv-fastmcp``, made on first use) because FastMCP patches ``mcp_types``.
- ``gw-stdio``: the gateway again, but serving the bench client over stdio
  (``serve --transport stdio``), the client spawning it.

``gateway`` and ``fastmcp`` both face the client over streamable HTTP, so they compare like
with like. Against a stdio upstream, ``direct`` is a stdio client while ``gateway`` is an HTTP
client, and the SDK client alone costs more CPU over HTTP; ``gw-stdio`` keeps the client's
transport the same as ``direct`` and so isolates what the gateway itself adds.
Besides latency, each row shows the CPU time per call spent in the client, the proxy and
the upstream processes (read from ``/proc``), which is where the time goes on a machine
with few cores. Results go to ``bench/results/proxy.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx
from mcp import Client, StdioServerParameters, stdio_client

BENCH = Path(__file__).resolve().parent
REPO = BENCH.parent
RESULTS = BENCH / "results"
FASTMCP_VENV = BENCH / ".venv-fastmcp"
FASTMCP_SPEC = "fastmcp==4.1.2"
PYTHON = sys.executable
GATEWAY_CLI = Path(PYTHON).parent / "mcp-aggregator"
ECHO = BENCH / "echo_server.py"
CONCURRENT = 32
GATEWAY_STDIO_FRONT = "gw-stdio"
PATHS = ("direct", "gateway", "fastmcp", GATEWAY_STDIO_FRONT)
CLK_TCK = os.sysconf("SC_CLK_TCK")
# Goals from issue 2: added p50 at concurrency 1, and throughput at concurrency 32.
GOAL_ADDED_P50_MS = {"http": 0.5, "stdio": 0.3}
GOAL_THROUGHPUT_PCT = 50.0


class BenchError(Exception):
    """A path could not be set up or measured; its rows are reported as failed."""


@dataclass
class Row:
    """One measured (upstream transport, path, concurrency, sessions) cell."""

    transport: str
    path: str
    concurrency: int
    sessions: int
    calls: int = 0
    errors: int = 0
    p50_ms: float = 0.0
    p95_ms: float = 0.0
    p99_ms: float = 0.0
    mean_ms: float = 0.0
    calls_per_s: float = 0.0
    cpu_ms_per_call: dict[str, float] = field(default_factory=dict)
    load_avg_1m: float = 0.0
    p50_ms_by_round: list[float] = field(default_factory=list)
    added_p50_ms: float | None = None
    throughput_pct_of_direct: float | None = None
    failure: str | None = None


@dataclass(frozen=True)
class Endpoint:
    """How the bench client reaches one path, and which processes to charge CPU to."""

    make_client: Callable[[], Client]
    tool: str | None
    proxy_pids: Callable[[], list[int]]
    upstream_pids: Callable[[], list[int]]


# ---------------------------------------------------------------- processes


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@contextlib.contextmanager
def managed_process(argv: Sequence[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    """Start ``argv`` in its own process group; always end it (terminate, wait, kill)."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            list(argv),
            cwd=REPO,
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=5)
        # Children it left behind (a stdio upstream of a proxy) share its process group.
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)


def leaf_exceptions(exc: BaseException) -> list[BaseException]:
    """The exceptions inside (nested) exception groups, which say what actually failed."""
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for inner in exc.exceptions for leaf in leaf_exceptions(inner)]
    return [exc]


def summarize(exc: BaseException) -> str:
    """First and last line of an error: what failed, and the subprocess's final word on why."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    if not lines:
        return type(exc).__name__
    return lines[0] if len(lines) == 1 else f"{lines[0]} ... {lines[-1]}"


def log_tail(log: Path, lines: int = 15) -> str:
    try:
        text = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    return "\n".join(text[-lines:])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path, deadline_s: float = 20.0) -> None:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if proc.poll() is not None:
            raise BenchError(f"process exited with {proc.returncode} before listening:\n{log_tail(log)}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=0.5):
            return
        time.sleep(0.05)
    raise BenchError(f"port {port} not listening after {deadline_s:.0f} s:\n{log_tail(log)}")


def wait_for_health(port: int, proc: subprocess.Popen[bytes], log: Path, deadline_s: float = 30.0) -> None:
    url = f"http://127.0.0.1:{port}/healthz"
    end = time.monotonic() + deadline_s
    last = "no answer"
    with httpx.Client(timeout=1.0) as http:
        while time.monotonic() < end:
            if proc.poll() is not None:
                raise BenchError(f"process exited with {proc.returncode} before ready:\n{log_tail(log)}")
            try:
                status = http.get(url).status_code
                if status == 200:
                    return
                last = f"HTTP {status}"
            except httpx.HTTPError as exc:
                last = type(exc).__name__
            time.sleep(0.1)
    raise BenchError(f"GET {url} not 200 after {deadline_s:.0f} s (last: {last}):\n{log_tail(log)}")


def proc_table() -> dict[int, tuple[int, int]]:
    """pid -> (ppid, utime+stime ticks) for every process visible in /proc."""
    table: dict[int, tuple[int, int]] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            raw = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = raw[raw.rindex(")") + 2 :].split()
        table[int(entry)] = (int(fields[1]), int(fields[11]) + int(fields[12]))
    return table


def descendants(root: int, table: dict[int, tuple[int, int]]) -> list[int]:
    found: list[int] = []
    frontier = [root]
    while frontier:
        parent = frontier.pop()
        children = [pid for pid, (ppid, _) in table.items() if ppid == parent]
        found.extend(children)
        frontier.extend(children)
    return found


def cpu_seconds(pids: Sequence[int]) -> float:
    table = proc_table()
    return sum(table[pid][1] for pid in pids if pid in table) / CLK_TCK


# ---------------------------------------------------------------- measuring


def percentile(sorted_values: Sequence[float], pct: float) -> float:
    if not sorted_values:
        return 0.0
    index = min(len(sorted_values) - 1, max(0, round(pct / 100 * len(sorted_values) + 0.5) - 1))
    return sorted_values[index]


async def run_calls(
    clients: Sequence[Client], tool: str, calls: int, concurrency: int, max_seconds: float
) -> tuple[list[float], int]:
    """Up to ``calls`` closed-loop tool calls by ``concurrency`` workers spread over ``clients``.

    Workers start no new call after ``max_seconds``, so a very slow path ends with fewer calls.
    """
    latencies: list[float] = []
    errors = 0
    remaining = calls
    deadline = time.perf_counter() + max_seconds

    async def worker(client: Client) -> None:
        nonlocal remaining, errors
        while remaining > 0 and time.perf_counter() < deadline:
            remaining -= 1
            start = time.perf_counter()
            result = await client.call_tool(tool, {"text": "ping"})
            latencies.append(time.perf_counter() - start)
            if result.is_error:
                errors += 1

    async with anyio.create_task_group() as tg:
        for index in range(concurrency):
            tg.start_soon(worker, clients[index % len(clients)])
    return latencies, errors


async def measure(clients: Sequence[Client], tool: str, row: Row, endpoint: Endpoint, options: Options) -> None:
    await run_calls(clients, tool, options.warmup, row.concurrency, options.row_seconds / 4)
    upstream = endpoint.upstream_pids()
    proxy = endpoint.proxy_pids()
    cpu_client0, cpu_proxy0, cpu_up0 = time.process_time(), cpu_seconds(proxy), cpu_seconds(upstream)
    start = time.perf_counter()
    latencies, errors = await run_calls(clients, tool, options.calls, row.concurrency, options.row_seconds)
    wall = time.perf_counter() - start
    cpu = {
        "client": time.process_time() - cpu_client0,
        "proxy": cpu_seconds(proxy) - cpu_proxy0,
        "upstream": cpu_seconds(upstream) - cpu_up0,
    }
    latencies.sort()
    row.calls, row.errors = len(latencies), errors
    row.p50_ms = percentile(latencies, 50) * 1e3
    row.p95_ms = percentile(latencies, 95) * 1e3
    row.p99_ms = percentile(latencies, 99) * 1e3
    row.mean_ms = sum(latencies) / len(latencies) * 1e3
    row.calls_per_s = len(latencies) / wall
    row.p50_ms_by_round = [round(row.p50_ms, 3)]
    row.load_avg_1m = round(os.getloadavg()[0], 2)
    row.cpu_ms_per_call = {k: round(v / len(latencies) * 1e3, 3) for k, v in cpu.items() if k != "proxy" or proxy}


def pick_tool(names: Sequence[str], preferred: str | None) -> str:
    if preferred is not None and preferred in names:
        return preferred
    matches = [name for name in names if name.endswith("echo")]
    if not matches:
        raise BenchError(f"no tool ending in 'echo' among {sorted(names)}")
    return matches[0]


async def list_tool_names(client: Client, deadline_s: float) -> list[str]:
    """tools/list until a tool appears: a proxy may connect its upstream after reporting healthy."""
    names: list[str] = []
    with anyio.move_on_after(deadline_s):
        while True:
            names = [tool.name for tool in (await client.list_tools()).tools]
            if any(name.endswith("echo") for name in names):
                break
            await anyio.sleep(0.2)
    return names


async def measure_path(endpoint: Endpoint, rows: Sequence[Row], options: Options) -> None:
    """Open the sessions this path needs (in this task, closed in this task) and fill ``rows``."""
    max_sessions = max(row.sessions for row in rows)
    async with contextlib.AsyncExitStack() as stack:
        clients = [await stack.enter_async_context(endpoint.make_client()) for _ in range(max_sessions)]
        tool = pick_tool(await list_tool_names(clients[0], 30.0), endpoint.tool)
        for row in rows:
            print(
                f"  {row.transport:5} {row.path:8} c={row.concurrency:<2} s={row.sessions} ...",
                end="",
                flush=True,
            )
            await measure(clients[: row.sessions], tool, row, endpoint, options)
            print(f" p50 {row.p50_ms:.2f} ms, {row.calls_per_s:.0f} calls/s", flush=True)


# ---------------------------------------------------------------- paths


def echo_argv(transport: str, port: int | None = None) -> list[str]:
    if transport == "stdio":
        return [PYTHON, str(ECHO), "stdio"]
    return [PYTHON, str(ECHO), "http", "--port", str(port)]


def gateway_config(upstream_transport: str, upstream_url: str | None, workdir: Path) -> Path:
    if upstream_transport == "stdio":
        server = (
            f"    transport: stdio\n    command: {json.dumps(PYTHON)}\n    args: [{json.dumps(str(ECHO))}, stdio]\n"
        )
    else:
        server = f"    transport: http\n    base_url: {json.dumps(upstream_url)}\n"
    path = workdir / f"gateway-{upstream_transport}.yaml"
    path.write_text(f"servers:\n  - name: echo\n{server}")
    return path


def ensure_fastmcp_venv() -> Path:
    """Create ``bench/.venv-fastmcp`` with ``fastmcp==4.1.2`` unless it already works."""
    python = FASTMCP_VENV / "bin" / "python"
    check = [str(python), "-c", "import fastmcp, sys; sys.exit(fastmcp.__version__ != '4.1.2')"]
    if python.exists() and subprocess.run(check, capture_output=True).returncode == 0:
        return python
    print(f"creating {FASTMCP_VENV.relative_to(REPO)} with {FASTMCP_SPEC} ...", flush=True)
    base = shutil.which("python3") or PYTHON
    steps = [
        [base, "-m", "venv", str(FASTMCP_VENV)],
        [str(python), "-m", "pip", "install", "-q", FASTMCP_SPEC],
    ]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            raise BenchError(f"{' '.join(step)} failed:\n{(done.stdout + done.stderr)[-2000:]}")
    return python


def find_py_spy() -> str | None:
    for candidate in (
        shutil.which("py-spy"),
        Path(PYTHON).parent / "py-spy",
        FASTMCP_VENV / "bin" / "py-spy",
    ):
        if candidate and Path(candidate).exists():
            return str(candidate)
    return None


@contextlib.contextmanager
def profiling(pid: int, label: str, workdir: Path) -> Iterator[None]:
    """Sample ``pid`` with py-spy while the block runs; no-op (with a note) if py-spy is absent.

    Writes collapsed stacks (``profile-LABEL.txt``, loadable in speedscope or flamegraph.pl)
    and prints the functions that were on the stack in the largest share of samples.
    """
    py_spy = find_py_spy()
    if py_spy is None:
        print("  --profile: py-spy not found (pip install py-spy), skipping", flush=True)
        yield
        return
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / f"profile-{label}.txt"
    argv = [
        py_spy,
        "record",
        "--pid",
        str(pid),
        "--rate",
        "250",
        "--nonblocking",
        "--format",
        "raw",
        "-o",
        str(out),
    ]
    with managed_process(argv, workdir / f"py-spy-{label}.log") as proc:
        time.sleep(0.5)
        try:
            yield
        finally:
            proc.send_signal(signal.SIGINT)
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=30)
    if out.exists():
        print(f"  profile written to {out.relative_to(REPO)}; on-stack share of CPU samples:", flush=True)
        for share, frame in profile_summary(out):
            print(f"    {share:5.1f} %  {frame}", flush=True)


def profile_summary(collapsed: Path, top: int = 25) -> list[tuple[float, str]]:
    """(percent of samples, frame) for the frames present in the most samples, outermost excluded."""
    total = 0
    inclusive: dict[str, int] = {}
    for line in collapsed.read_text().splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        total += count
        for frame in set(stack.split(";")[1:]):
            inclusive[frame] = inclusive.get(frame, 0) + count
    ranked = sorted(inclusive.items(), key=lambda item: -item[1])
    interesting = [(100 * n / total, frame) for frame, n in ranked if 100 * n / total < 99.0]
    return interesting[:top] if total else []


# ---------------------------------------------------------------- orchestration


@dataclass
class Options:
    calls: int
    warmup: int
    sessions: list[int]
    paths: list[str]
    transports: list[str]
    profile: bool
    rounds: int
    row_seconds: float


def rows_for(transport: str, path: str, options: Options) -> list[Row]:
    rows = [Row(transport, path, 1, 1)]
    rows += [Row(transport, path, CONCURRENT, sessions) for sessions in options.sessions]
    return rows


def run_path(endpoint: Endpoint, rows: list[Row], options: Options) -> None:
    try:
        anyio.run(measure_path, endpoint, rows, options)
    except Exception as exc:  # top-level guard: one broken path must not hide the others' figures
        reason = "; ".join(f"{type(leaf).__name__}: {leaf}" for leaf in leaf_exceptions(exc))
        print(f"\n  FAILED: {reason}", flush=True)
        for row in rows:
            if not row.calls:
                row.failure = reason


@dataclass(frozen=True)
class Upstream:
    """The echo upstream of one transport, as each path reaches it."""

    transport: str
    url: str | None
    http_pid: int | None

    def pids_under(self, parents: Sequence[int]) -> list[int]:
        """The upstream processes: the shared HTTP server, or the stdio children of ``parents``."""
        if self.http_pid is not None:
            return [self.http_pid]
        table = proc_table()
        return [pid for parent in parents for pid in descendants(parent, table)]


def http_client_factory(url: str) -> Callable[[], Client]:
    return lambda: Client(url, cache=None, read_timeout_seconds=60)


def stdio_client_factory(argv: Sequence[str], errlog: TextIO) -> Callable[[], Client]:
    params = StdioServerParameters(command=argv[0], args=list(argv[1:]), cwd=str(REPO))
    return lambda: Client(stdio_client(params, errlog=errlog), cache=None, read_timeout_seconds=60)


def child_pids() -> list[int]:
    me = os.getpid()
    return [pid for pid, (ppid, _) in proc_table().items() if ppid == me]


def run_proxy(
    argv: list[str],
    port: int,
    label: str,
    rows: list[Row],
    upstream: Upstream,
    tool: str,
    options: Options,
    workdir: Path,
) -> None:
    """Start an HTTP proxy on ``port``, wait for /healthz, measure through it, then stop it."""
    log = workdir / f"{label}.log"
    try:
        with managed_process(argv, log) as proc:
            wait_for_health(port, proc, log)
            endpoint = Endpoint(
                http_client_factory(f"http://127.0.0.1:{port}/mcp"),
                tool,
                lambda: [proc.pid],
                lambda: upstream.pids_under([proc.pid]),
            )
            with profiling(proc.pid, label, workdir) if options.profile else contextlib.nullcontext():
                run_path(endpoint, rows, options)
            if proc.poll() is not None or any(row.failure for row in rows):
                state = "running" if proc.poll() is None else f"exited with {proc.returncode}"
                print(f"  {label} ({state}) log tail:\n{log_tail(log)}", flush=True)
    except (BenchError, OSError) as exc:
        print(f"  {label} FAILED: {exc}", flush=True)
        for row in rows:
            row.failure = summarize(exc)


def run_direct(upstream: Upstream, rows: list[Row], options: Options, workdir: Path) -> None:
    with (workdir / "echo-stdio-direct.log").open("w") as errlog:
        if upstream.url is not None:
            make_client = http_client_factory(upstream.url)
        else:
            make_client = stdio_client_factory(echo_argv("stdio"), errlog)
        # With a stdio upstream, the bench's own children are the upstream.
        upstream_pids = (lambda: upstream.pids_under([])) if upstream.http_pid else child_pids
        endpoint = Endpoint(make_client, "echo", list, upstream_pids)
        run_path(endpoint, rows, options)


def run_gateway(upstream: Upstream, front: str, rows: list[Row], options: Options, workdir: Path) -> None:
    """The gateway serving HTTP on its own port, or stdio to the bench client (``front``)."""
    config = gateway_config(upstream.transport, upstream.url, workdir)
    argv = [str(GATEWAY_CLI), "serve", "--config", str(config), "--exposure", "passthrough"]
    if front == "http":
        port = free_port()
        argv += ["--transport", "http", "--host", "127.0.0.1", "--port", str(port)]
        run_proxy(argv, port, f"gateway-{upstream.transport}", rows, upstream, "echo__echo", options, workdir)
        return
    argv += ["--transport", "stdio"]
    with (workdir / f"gateway-stdio-front-{upstream.transport}.log").open("w") as errlog:
        endpoint = Endpoint(
            stdio_client_factory(argv, errlog),
            "echo__echo",
            child_pids,
            lambda: upstream.pids_under(child_pids()),
        )
        run_path(endpoint, rows, options)


def run_fastmcp(upstream: Upstream, rows: list[Row], options: Options, workdir: Path) -> None:
    try:
        fastmcp_python = ensure_fastmcp_venv()
    except BenchError as exc:
        print(f"  fastmcp FAILED: {exc}", flush=True)
        for row in rows:
            row.failure = summarize(exc)
        return
    source = ["--url", upstream.url] if upstream.url else ["--stdio", "--", *echo_argv("stdio")]
    port = free_port()
    argv = [str(fastmcp_python), str(BENCH / "fastmcp_proxy.py"), "--port", str(port), *source]
    run_proxy(argv, port, f"fastmcp-{upstream.transport}", rows, upstream, "echo", options, workdir)


def run_transport(transport: str, options: Options, workdir: Path, results: list[Row]) -> None:
    with contextlib.ExitStack() as stack:
        upstream = Upstream(transport, None, None)
        if transport == "http":
            port = free_port()
            log = workdir / "echo-http.log"
            echo = stack.enter_context(managed_process(echo_argv("http", port), log))
            wait_for_port(port, echo, log)
            upstream = Upstream(transport, f"http://127.0.0.1:{port}/mcp", echo.pid)
        for path in options.paths:
            rows = rows_for(transport, path, options)
            results.extend(rows)
            if path == "direct":
                run_direct(upstream, rows, options, workdir)
            elif path == "gateway":
                run_gateway(upstream, "http", rows, options, workdir)
            elif path == GATEWAY_STDIO_FRONT:
                run_gateway(upstream, "stdio", rows, options, workdir)
            elif path == "fastmcp":
                run_fastmcp(upstream, rows, options, workdir)


# ---------------------------------------------------------------- report


def merge_rounds(rounds: Sequence[Sequence[Row]]) -> list[Row]:
    """One row per cell: the median of each figure over the rounds where the cell succeeded."""
    merged: list[Row] = []
    for cells in zip(*rounds, strict=True):
        ok = [cell for cell in cells if not cell.failure and cell.calls]
        first = cells[0]
        row = Row(first.transport, first.path, first.concurrency, first.sessions)
        if not ok:
            row.failure = next((cell.failure for cell in cells if cell.failure), "no calls completed")
            merged.append(row)
            continue
        row.calls = sum(cell.calls for cell in ok)
        row.errors = sum(cell.errors for cell in ok)
        for name in ("p50_ms", "p95_ms", "p99_ms", "mean_ms", "calls_per_s", "load_avg_1m"):
            setattr(row, name, round(statistics.median(getattr(cell, name) for cell in ok), 3))
        row.cpu_ms_per_call = {
            key: round(statistics.median(cell.cpu_ms_per_call[key] for cell in ok), 3) for key in ok[0].cpu_ms_per_call
        }
        row.p50_ms_by_round = [cell.p50_ms_by_round[0] for cell in ok]
        merged.append(row)
    return merged


def compare_to_direct(rows: Sequence[Row]) -> None:
    direct = {(r.transport, r.concurrency, r.sessions): r for r in rows if r.path == "direct" and r.calls}
    for row in rows:
        base = direct.get((row.transport, row.concurrency, row.sessions))
        if row.path == "direct" or base is None or not row.calls:
            continue
        row.added_p50_ms = round(row.p50_ms - base.p50_ms, 3)
        row.throughput_pct_of_direct = round(100 * row.calls_per_s / base.calls_per_s, 1)


def format_table(rows: Sequence[Row]) -> str:
    head = (
        f"{'upstream':8} {'path':8} {'conc':>4} {'sess':>4} {'p50 ms':>7} {'p95 ms':>7} {'calls/s':>8} "
        f"{'+p50 ms':>8} {'thr %':>6}  cpu ms/call client/proxy/upstream"
    )
    lines = [head, "-" * len(head)]
    for r in rows:
        label = f"{r.transport:8} {r.path:8} {r.concurrency:>4} {r.sessions:>4}"
        if r.failure:
            lines.append(f"{label} FAILED: {r.failure[:160]}")
            continue
        added = "" if r.added_p50_ms is None else f"{r.added_p50_ms:+.2f}"
        pct = "" if r.throughput_pct_of_direct is None else f"{r.throughput_pct_of_direct:.0f}"
        cpu = "/".join(
            f"{r.cpu_ms_per_call[k]:.2f}" if k in r.cpu_ms_per_call else "-" for k in ("client", "proxy", "upstream")
        )
        errors = f"  ({r.errors} errors)" if r.errors else ""
        lines.append(f"{label} {r.p50_ms:7.2f} {r.p95_ms:7.2f} {r.calls_per_s:8.0f} {added:>8} {pct:>6}  {cpu}{errors}")
    return "\n".join(lines)


def goal_verdicts(rows: Sequence[Row]) -> list[str]:
    verdicts: list[str] = []
    for r in rows:
        if r.path == "direct" or r.added_p50_ms is None or r.throughput_pct_of_direct is None:
            continue
        if r.concurrency == 1:
            goal = GOAL_ADDED_P50_MS[r.transport]
            ok = r.added_p50_ms <= goal
            verdicts.append(
                f"{'PASS' if ok else 'MISS'} {r.path} {r.transport}: added p50 "
                f"{r.added_p50_ms:.2f} ms (goal <= {goal} ms)"
            )
        else:
            ok = r.throughput_pct_of_direct >= GOAL_THROUGHPUT_PCT
            verdicts.append(
                f"{'PASS' if ok else 'MISS'} {r.path} {r.transport}: c={r.concurrency} "
                f"over {r.sessions} session(s) throughput "
                f"{r.throughput_pct_of_direct:.0f} % of direct (goal >= {GOAL_THROUGHPUT_PCT:.0f} %)"
            )
    return verdicts


def versions() -> dict[str, str]:
    found: dict[str, str] = {}
    for dist in ("mcp", "mcp-aggregator", "uvicorn", "httpx2", "anyio"):
        with contextlib.suppress(metadata.PackageNotFoundError):
            found[dist] = metadata.version(dist)
    found["fastmcp"] = FASTMCP_SPEC.split("==")[1]
    return found


def write_results(rows: Sequence[Row], options: Options, verdicts: Sequence[str], started: float) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    out = RESULTS / "proxy.json"
    payload: dict[str, Any] = {
        "started_unix": round(started),
        "duration_s": round(time.time() - started, 1),
        "machine": {
            "cpus": os.cpu_count(),
            "python": platform.python_version(),
            "platform": platform.platform(),
        },
        "versions": versions(),
        "options": asdict(options),
        "setup": {
            "client": "mcp.Client(url_or_stdio, cache=None), mode=auto, closed-loop workers",
            "echo_http": "MCPServer streamable HTTP, stateless_http=True, json_response=True, uvicorn",
            "fastmcp_front": "stateless_http=True, json_response=True",
            "cpu": "utime+stime from /proc per call; proxy excludes its stdio child, counted as upstream",
        },
        "goals": {"added_p50_ms": GOAL_ADDED_P50_MS, "throughput_pct_of_direct_c32": GOAL_THROUGHPUT_PCT},
        "verdicts": list(verdicts),
        "rows": [asdict(row) for row in rows],
    }
    out.write_text(json.dumps(payload, indent=2) + "\n")
    return out


def parse_options(argv: Sequence[str] | None = None) -> Options:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--calls", type=int, help="measured calls per row (default 1000, --quick 300)")
    parser.add_argument("--warmup", type=int, help="unmeasured calls before each row (default 200, --quick 50)")
    parser.add_argument("--row-seconds", type=float, default=20.0, help="time cap per row (default 20)")
    parser.add_argument(
        "--rounds", type=int, default=1, help="repeat the whole sweep; rows report the median (default 1)"
    )
    parser.add_argument("--quick", action="store_true", help="fewer calls, one session at concurrency 32")
    parser.add_argument("--sessions", help=f"sessions at concurrency {CONCURRENT}, comma list (default 1,4)")
    parser.add_argument("--paths", default=",".join(PATHS), help=f"subset of {','.join(PATHS)}")
    parser.add_argument("--transports", default="http,stdio", help="subset of http,stdio")
    parser.add_argument("--profile", action="store_true", help="sample each proxy with py-spy into bench/results/")
    args = parser.parse_args(argv)
    paths = [p for p in args.paths.split(",") if p]
    transports = [t for t in args.transports.split(",") if t]
    if not set(paths) <= set(PATHS) or not set(transports) <= {"http", "stdio"}:
        parser.error("unknown path or transport")
    sessions = args.sessions or ("1" if args.quick else "1,4")
    return Options(
        calls=args.calls or (300 if args.quick else 1000),
        warmup=args.warmup if args.warmup is not None else (50 if args.quick else 200),
        sessions=[int(s) for s in sessions.split(",")],
        paths=paths,
        transports=transports,
        profile=args.profile,
        rounds=max(1, args.rounds),
        row_seconds=args.row_seconds,
    )


def main(argv: Sequence[str] | None = None) -> int:
    options = parse_options(argv)
    started = time.time()
    print(
        f"calls/row {options.calls} (cap {options.row_seconds:.0f} s), warmup {options.warmup}, "
        f"c={CONCURRENT} sessions {options.sessions}, rounds {options.rounds}, {os.cpu_count()} CPUs, "
        f"load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    rounds: list[list[Row]] = []
    with tempfile.TemporaryDirectory(prefix="proxy-bench-") as tmp:
        for number in range(1, options.rounds + 1):
            if options.rounds > 1:
                print(f"round {number}/{options.rounds}", flush=True)
            rounds.append([])
            for transport in options.transports:
                run_transport(transport, options, Path(tmp), rounds[-1])
    results = merge_rounds(rounds)
    compare_to_direct(results)
    verdicts = goal_verdicts(results)
    print()
    print(format_table(results))
    print()
    print("\n".join(verdicts))
    out = write_results(results, options, verdicts, started)
    print(f"\nwrote {out.relative_to(REPO)}")
    return 1 if any(row.failure for row in results) else 0


if __name__ == "__main__":
    sys.exit(main())
