"""Start-up at scale: ``--servers`` stdio upstreams of ``--tools`` tools each (50 x 200 by default).

Run: ``.venv/bin/python bench/startup_bench.py [--servers 50] [--tools 200]
[--baseline /path/to/other/checkout/src] [--json bench/results/startup.json]``.

Starts ``python -m mcp_aggregator serve`` (this checkout's ``src``, or ``--src``) on a fresh
data directory over ``many_tools_server.py`` upstreams and, from the moment the process is
started, polls every ``--poll`` seconds (each route on its own, so a slow answer does not
hide the next): ``/healthz``, ``/readyz``, a REST tool search, the admin API (``/servers``,
one server's detail, ``/state``), the web page, ``/mcp`` (an ``initialize``, a ``tools/list``
and the session deleted again, each timed on its own) and a call of one tool of a server
already connected (through the ``tools`` facade's ``execute``, on a session opened once). It samples the gateway's RSS
and reads ``/state`` once a second. Each route's maximum during start is the figure the
1 s goal is held against. Latencies "during start" are of the requests sent between
the listener coming up (the banner) and the index being whole. The index is *whole* when
every server is CONNECTED, every tool is served and classified, and a search answers
without ``X-Search-Incomplete``; then
``--searches`` searches measure the REST latency once whole. With ``--baseline`` the same run
is made first against that ``src`` (the baseline), then against this one.

Prints a summary table (and a timeline in 5 s steps) and writes the JSON to ``--json``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import anyio
import httpx
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.many_tools_server import tool_list

HERE = Path(__file__).resolve().parent
SRC = HERE.parent / "src"
SERVER = HERE / "many_tools_server.py"
TOKEN = "startup-bench-admin-token-0123456789"
QUERIES = (
    "export invoices as csv",
    "schedule calendar events for the team",
    "merge pull requests",
    "translate chat messages",
    "download weather alerts",
    "archive log files in bulk",
)
_SEARCH = "/api/v1/aggregator/tools/search"
_INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "bench", "version": "1"}},
}


@dataclass
class Sample:
    at: float
    """Seconds from process start to when the request was sent."""
    ms: float | None
    """Latency; None when the connection was refused (not listening yet)."""
    note: str = ""


@dataclass
class Run:
    label: str
    src: Path
    servers: int
    tools: int
    polls: dict[str, list[Sample]] = field(default_factory=dict)
    rss: list[tuple[float, float]] = field(default_factory=list)
    state: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    banner_at: float | None = None
    whole_at: float | None = None
    whole_search_ms: list[float] = field(default_factory=list)
    peak_rss_mb: float | None = None
    pid: int = 0
    first_healthz_cpu_s: float | None = None
    """CPU seconds the gateway had used when its first ``/healthz`` answer arrived."""
    banner_cpu_s: float | None = None
    whole_cpu_s: float | None = None
    """CPU seconds (user + sys, all threads) the gateway process had used by then."""
    upstream_cpu_s: float | None = None
    """CPU seconds the upstream servers (the gateway's child processes) had used once whole."""
    embedded_at_limit: int | None = None
    """Tool texts embedded when ``--limit`` ran out before the index was whole."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def write_config(folder: Path, servers: int, tools: int, port: int) -> Path:
    lines = [
        "serve:",
        "  host: 127.0.0.1",
        f"  port: {port}",
        f"  admin_token: {TOKEN}",
        f"  data_dir: {folder / 'data'}",
        "registry:",
        f"  database_url: sqlite+aiosqlite:///{folder / 'registry.db'}",
        "servers:",
    ]
    for i in range(servers):
        name = f"s{i:02d}"
        lines += [
            f"  - name: {name}",
            "    transport: stdio",
            f"    command: {sys.executable}",
            f"    args: [{str(SERVER)!r}, --name, {name}, --tools, '{tools}']",
            # A sandboxed server sees its cwd and the system, so the script's folder goes here.
            f"    cwd: {str(HERE)!r}",
        ]
    path = folder / "aggregator.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path


def rss_mb(pid: int, field_name: str = "VmRSS") -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(field_name + ":"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


async def _poll(
    run: Run, name: str, t0: float, every: float, done: anyio.Event, request: Any, client: httpx.AsyncClient
) -> None:
    samples = run.polls.setdefault(name, [])
    while not done.is_set():
        start = time.monotonic()
        try:
            note = await request(client)
            if note is None:  # nothing to ask yet (no server connected to call)
                await anyio.sleep(every)
                continue
            if note is not RECORDED:
                samples.append(Sample(start - t0, (time.monotonic() - start) * 1000, note))
            if name == "healthz" and run.first_healthz_cpu_s is None:
                run.first_healthz_cpu_s = cpu_secs(run.pid)
        except httpx.TimeoutException:
            samples.append(Sample(start - t0, (time.monotonic() - start) * 1000, "timeout"))
        except httpx.TransportError:  # not listening yet, or the connection dropped
            samples.append(Sample(start - t0, None))
        await anyio.sleep(max(0.0, every - (time.monotonic() - start)))


RECORDED = object()
"""What a route's request returns when it timed its steps itself (``_timed``)."""


def _timed(run: Run, name: str, t0: float, start: float, note: str) -> None:
    """One more sample of ``name``, for a step timed inside another route's request."""
    run.polls.setdefault(name, []).append(Sample(start - t0, (time.monotonic() - start) * 1000, note))


def _rpc(method: str, params: dict[str, Any], request_id: int | None = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
    if request_id is not None:
        message["id"] = request_id
    return message


def _requests(run: Run, t0: float) -> dict[str, Any]:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    counter = iter(range(1 << 30))
    mcp_headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    known: dict[str, Any] = {}
    """From the last ``/servers`` answer: the first server's id, and whether it is connected."""
    call_session: list[str] = []

    async def healthz(client: httpx.AsyncClient) -> str:
        r = await client.get("/healthz")
        return str(r.json().get("status", r.status_code))

    async def search(client: httpx.AsyncClient) -> str:
        r = await client.get(_SEARCH, params={"q": QUERIES[next(counter) % len(QUERIES)]}, headers=auth)
        if r.status_code != 200:
            return f"http {r.status_code}"
        if "X-Search-Incomplete" in r.headers:
            return f"partial:{r.headers.get('X-Search-Pending', '?')}"
        return f"whole:{len(r.json())}"

    async def readyz(client: httpx.AsyncClient) -> str:
        return str((await client.get("/readyz")).status_code)

    async def admin(client: httpx.AsyncClient) -> str:
        r = await client.get("/api/v1/aggregator/servers", headers=auth)
        if r.status_code == 200:
            first = min(r.json(), key=lambda server: server["name"], default=None)
            if first is not None:
                known.update(id=first["id"], name=first["name"], connected=first["status"] == "CONNECTED")
        return str(r.status_code)

    async def detail(client: httpx.AsyncClient) -> str | None:
        if "id" not in known:
            return None
        return str((await client.get(f"/api/v1/aggregator/servers/{known['id']}", headers=auth)).status_code)

    async def state(client: httpx.AsyncClient) -> str:
        return str((await client.get("/api/v1/aggregator/state", headers=auth)).status_code)

    async def page(client: httpx.AsyncClient) -> str:
        return str((await client.get("/", headers=auth)).status_code)

    async def mcp(client: httpx.AsyncClient) -> object:
        start = time.monotonic()
        r = await client.post("/mcp", json=_INIT, headers=mcp_headers)
        _timed(run, "mcp", t0, start, str(r.status_code))
        session = r.headers.get("mcp-session-id")
        if session:
            headers = {**mcp_headers, "mcp-session-id": session, "mcp-protocol-version": "2025-06-18"}
            await client.post("/mcp", json=_rpc("notifications/initialized", {}, None), headers=headers)
            start = time.monotonic()
            listed = await client.post("/mcp", json=_rpc("tools/list", {}, 2), headers=headers)
            _timed(run, "tools_list", t0, start, str(listed.status_code))
            start = time.monotonic()
            ended = await client.delete("/mcp", headers=headers)
            _timed(run, "mcp_delete", t0, start, str(ended.status_code))
        return RECORDED

    async def call(client: httpx.AsyncClient) -> str | None:
        if not known.get("connected"):
            return None
        if not call_session:
            r = await client.post("/mcp", json=_INIT, headers=mcp_headers)
            call_session.append(r.headers["mcp-session-id"])
            headers = {**mcp_headers, "mcp-session-id": call_session[0], "mcp-protocol-version": "2025-06-18"}
            await client.post("/mcp", json=_rpc("notifications/initialized", {}, None), headers=headers)
        headers = {**mcp_headers, "mcp-session-id": call_session[0], "mcp-protocol-version": "2025-06-18"}
        tool = tool_list(known["name"], run.tools)[0].name
        # Through the core ``tools`` facade: a catalogue this large has no per-server facades.
        execute = {"name": f"{known['name']}.{tool}", "arguments": {"query": "bench"}}
        arguments = {"cmd": "execute", "params": execute}
        r = await client.post(
            "/mcp", json=_rpc("tools/call", {"name": "tools", "arguments": arguments}), headers=headers
        )
        return str(r.status_code) if r.status_code != 200 or tool in r.text else f"unexpected: {r.text[:80]}"

    return {
        "healthz": healthz,
        "readyz": readyz,
        "search": search,
        "admin": admin,
        "detail": detail,
        "state": state,
        "page": page,
        "mcp": mcp,
        "call": call,
    }


async def _watch(run: Run, pid: int, t0: float, done: anyio.Event, client: httpx.AsyncClient) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    want = run.servers * run.tools
    last_state = 0.0
    while not done.is_set():
        now = time.monotonic()
        mb = rss_mb(pid)
        if mb is not None:
            run.rss.append((now - t0, mb))
        if now - last_state >= 1.0:
            last_state = now
            try:
                r = await client.get("/api/v1/aggregator/state", headers=auth)
                # An error answer (a 500 while the registry is locked, under load) is no state.
                state = r.json() if r.status_code == 200 else None
            except httpx.TransportError:
                state = None
            if state is not None:
                run.state.append((now - t0, state))
                searches = [s for s in run.polls.get("search", []) if s.note]
                whole = (
                    state["connected_servers"] == run.servers
                    and state["exposed_tools"] >= want
                    and state["classified_tools"] >= want
                    and state["indexing"] is None
                    and bool(searches)
                    and searches[-1].note.startswith("whole")
                )
                if len(run.state) % 10 == 0:
                    last = searches[-1].note if searches else None
                    print(f"{run.label} {now - t0:.0f}s: {state} last search {last}", file=sys.stderr, flush=True)
                if whole:
                    run.whole_at = now - t0
                    run.whole_cpu_s = cpu_secs(pid)
                    run.upstream_cpu_s = children_cpu_secs(pid)
                    done.set()
                    return
        await anyio.sleep(0.25)


async def _whole_searches(run: Run, client: httpx.AsyncClient, count: int) -> None:
    auth = {"Authorization": f"Bearer {TOKEN}"}
    for i in range(count):
        start = time.monotonic()
        r = await client.get(_SEARCH, params={"q": QUERIES[i % len(QUERIES)] + f" {i % 7}"}, headers=auth)
        r.raise_for_status()
        run.whole_search_ms.append((time.monotonic() - start) * 1000)


async def measure(label: str, src: Path, servers: int, tools: int, poll: float, limit: float, searches: int) -> Run:
    run = Run(label, src, servers, tools)
    with tempfile.TemporaryDirectory(prefix="startup-bench-") as tmp:
        folder = Path(tmp)
        port = free_port()
        config = write_config(folder, servers, tools, port)
        env = {**os.environ, "PYTHONPATH": str(src), "HF_HUB_OFFLINE": "1"}
        log: list[str] = []
        t0 = time.monotonic()
        proc = _start(config, env)
        run.pid = proc.pid
        reader = threading.Thread(target=_read_log, args=(run, proc, t0, log), daemon=True)
        reader.start()
        try:
            done = anyio.Event()
            timeout = httpx.Timeout(60.0, connect=2.0)
            base = f"http://127.0.0.1:{port}"
            async with (
                httpx.AsyncClient(base_url=base, timeout=timeout) as watcher,
                anyio.create_task_group() as tg,
            ):
                for name, request in _requests(run, t0).items():
                    # One client per route: one route's slow answer must not queue the others.
                    client = httpx.AsyncClient(base_url=base, timeout=timeout)
                    tg.start_soon(_poll_closing, run, name, t0, poll, done, request, client)
                tg.start_soon(_watch, run, proc.pid, t0, done, watcher)
                with anyio.move_on_after(limit):
                    await done.wait()
                done.set()
                if run.whole_at is None:
                    # Not whole within --limit: what was spent so far still says something.
                    run.whole_cpu_s = cpu_secs(proc.pid)
                    run.upstream_cpu_s = children_cpu_secs(proc.pid)
                    run.embedded_at_limit = _embedded(run)
                else:
                    await _whole_searches(run, watcher, searches)
            run.peak_rss_mb = rss_mb(proc.pid, "VmHWM")
        finally:
            _stop(proc)
            reader.join(5)
            if run.whole_at is None:
                sys.stderr.write("".join(log[-40:]))
    return run


async def _poll_closing(
    run: Run, name: str, t0: float, every: float, done: anyio.Event, request: Any, client: httpx.AsyncClient
) -> None:
    async with client:
        await _poll(run, name, t0, every, done, request, client)


def _start(config: Path, env: dict[str, str]) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-m", "mcp_aggregator", "serve", "--config", str(config)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def _read_log(run: Run, proc: subprocess.Popen[str], t0: float, log: list[str]) -> None:
    """Keeps the gateway's stderr drained (a full pipe would block it) and notes the banner."""
    assert proc.stderr is not None
    for line in proc.stderr:
        if run.banner_at is None and "MCP endpoint" in line:
            run.banner_at = time.monotonic() - t0
            run.banner_cpu_s = cpu_secs(proc.pid)
        log.append(line)


def _stop(proc: subprocess.Popen[str]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    # The upstreams lead their own process groups; the gateway stops them, this is the net.
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def cpu_secs(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (all its threads) so far."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    # After the command: state is field 3; utime and stime are fields 14 and 15.
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children_cpu_secs(pid: int) -> float:
    """CPU seconds of ``pid``'s live descendants (the upstreams, and any sandbox around them)."""
    total = 0.0
    for children in Path(f"/proc/{pid}/task").glob("*/children"):
        with contextlib.suppress(OSError):
            for child in children.read_text().split():
                total += (cpu_secs(int(child)) or 0.0) + children_cpu_secs(int(child))
    return total


def _embedded(run: Run) -> int | None:
    """Tools with their vectors by the last search answered: the served tools less those the
    search said were pending (``X-Search-Pending``)."""
    notes = [s.note for s in run.polls.get("search", []) if s.note.startswith("partial:")]
    if not run.state or not notes or not notes[-1].removeprefix("partial:").isdigit():
        return None
    return max(0, int(run.state[-1][1]["exposed_tools"]) - int(notes[-1].removeprefix("partial:")))


def _p(values: list[float], q: float) -> float | None:
    return round(float(np.percentile(values, q)), 1) if values else None


def summary(run: Run) -> dict[str, Any]:
    end = run.whole_at if run.whole_at is not None else float("inf")
    # Requests sent before the listener was up waited for it: "first /healthz answered" says
    # how long; the figures "during start" are of the requests sent once it listened.
    begin = run.banner_at if run.banner_at is not None else 0.0
    health = run.polls.get("healthz", [])
    answered = [s for s in health if s.ms is not None and s.note != "timeout"]
    first = min((s.at + s.ms / 1000 for s in answered), default=None)  # type: ignore[operator]

    def during(name: str) -> list[float]:
        return [s.ms for s in run.polls.get(name, []) if s.ms is not None and begin <= s.at < end]

    out: dict[str, Any] = {
        "label": run.label,
        "servers": run.servers,
        "tools": run.tools,
        "listener_up_s": None if run.banner_at is None else round(run.banner_at, 1),
        "first_healthz_s": None if first is None else round(first, 1),
        "index_whole_s": None if run.whole_at is None else round(run.whole_at, 1),
        "first_healthz_cpu_s": None if run.first_healthz_cpu_s is None else round(run.first_healthz_cpu_s, 2),
        "listener_up_cpu_s": None if run.banner_cpu_s is None else round(run.banner_cpu_s, 1),
        "index_whole_cpu_s": None if run.whole_cpu_s is None else round(run.whole_cpu_s, 1),
        "embedded_at_limit": run.embedded_at_limit,
        "upstreams_cpu_s": None if run.upstream_cpu_s is None else round(run.upstream_cpu_s, 1),
        "peak_rss_mb": None if run.peak_rss_mb is None else round(run.peak_rss_mb),
        "rss_at_whole_mb": round(run.rss[-1][1]) if run.rss else None,
        "search_whole_p50_ms": _p(run.whole_search_ms, 50),
        "search_whole_p95_ms": _p(run.whole_search_ms, 95),
        "partial_searches": sum(1 for s in run.polls.get("search", []) if s.note.startswith("partial")),
    }
    slowest: dict[str, list[tuple[float, float, str]]] = {}
    for name in ENDPOINTS:
        values = during(name)
        out[f"{name}_start_p95_ms"] = _p(values, 95)
        out[f"{name}_start_max_ms"] = round(max(values), 1) if values else None
        timed = [s for s in run.polls.get(name, []) if s.ms is not None and begin <= s.at < end]
        worst = sorted(timed, key=lambda s: s.ms or 0.0, reverse=True)[:5]
        slowest[name] = [(round(s.at, 2), round(s.ms or 0.0, 1), s.note) for s in worst]
    out["slowest_during_start"] = slowest
    """Per route, its five slowest requests during start: (sent at s, ms, answer)."""
    return out


def timeline(run: Run, step: float = 5.0) -> list[dict[str, Any]]:
    horizon = max([s.at for samples in run.polls.values() for s in samples], default=0.0)
    rows = []
    t = 0.0
    while t <= horizon:
        row: dict[str, Any] = {"t": t}
        for name in ("healthz", "search"):
            window = [s for s in run.polls.get(name, []) if t <= s.at < t + step]
            values = [s.ms for s in window if s.ms is not None]
            row[f"{name}_max_ms"] = round(max(values), 1) if values else None
            row[f"{name}_notes"] = sorted({s.note.split(":")[0] for s in window if s.note})
        rss = [mb for at, mb in run.rss if t <= at < t + step]
        row["rss_mb"] = round(max(rss)) if rss else None
        states = [st for at, st in run.state if at < t + step]
        if states:
            st = states[-1]
            row["connected"] = st["connected_servers"]
            row["exposed_tools"] = st["exposed_tools"]
            row["classified"] = st["classified_tools"]
            row["embedding"] = st["indexing"]
        rows.append(row)
        t += step
    return rows


ENDPOINTS = {
    "healthz": "/healthz",
    "readyz": "/readyz",
    "admin": "admin API GET /servers",
    "detail": "admin API GET /servers/{id}",
    "state": "admin API GET /state",
    "page": "page",
    "mcp": "/mcp initialize",
    "tools_list": "/mcp tools/list",
    "mcp_delete": "/mcp DELETE (session end)",
    "call": "/mcp tools/call, server connected",
    "search": "REST search",
}
"""The routes probed during start: their key in the JSON, their name in the table."""

ROWS = (
    ("listener up (banner), s", "listener_up_s"),
    ("first /healthz answered, s", "first_healthz_s"),
    ("gateway CPU when the first /healthz answered, s", "first_healthz_cpu_s"),
    *(
        (f"{title} during start, p95 / max ms", (f"{key}_start_p95_ms", f"{key}_start_max_ms"))
        for key, title in ENDPOINTS.items()
    ),
    ("searches answered partial", "partial_searches"),
    ("index whole, s", "index_whole_s"),
    ("gateway CPU (user+sys) at listener up / index whole (or --limit), s", ("listener_up_cpu_s", "index_whole_cpu_s")),
    ("upstream servers' CPU once whole (or at --limit), s", "upstreams_cpu_s"),
    ("tools embedded when --limit ran out (None: whole in time)", "embedded_at_limit"),
    ("REST search once whole, p50 / p95 ms", ("search_whole_p50_ms", "search_whole_p95_ms")),
    ("peak RSS, MB", "peak_rss_mb"),
    ("RSS once whole, MB", "rss_at_whole_mb"),
)


def print_table(results: list[dict[str, Any]]) -> None:
    def cell(result: dict[str, Any], key: str | tuple[str, str]) -> str:
        if isinstance(key, tuple):
            return " / ".join(str(result[k]) for k in key)
        return str(result[key])

    head = "| | " + " | ".join(r["label"] for r in results) + " |"
    print(head)
    print("|" + " --- |" * (len(results) + 1))
    for title, key in ROWS:
        print(f"| {title} | " + " | ".join(cell(r, key) for r in results) + " |")


def print_timeline(label: str, rows: list[dict[str, Any]]) -> None:
    print(f"\n{label}: timeline (max per 5 s)")
    print("| t s | /healthz ms | search ms | search | RSS MB | connected | tools | classified | embedding |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in rows:
        emb = r.get("embedding")
        embedding = f"{emb['embedded']}/{emb['total']}" if emb else ""
        print(
            f"| {r['t']:.0f} | {r['healthz_max_ms']} | {r['search_max_ms']} | {','.join(r['search_notes'])} "
            f"| {r['rss_mb']} | {r.get('connected')} | {r.get('exposed_tools')} | {r.get('classified')} "
            f"| {embedding} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=50)
    parser.add_argument("--tools", type=int, default=200)
    parser.add_argument("--src", type=Path, default=SRC, help="the gateway's src folder (default: this checkout's)")
    parser.add_argument("--baseline", type=Path, help="another checkout's src folder, measured first")
    parser.add_argument("--poll", type=float, default=0.25)
    parser.add_argument("--limit", type=float, default=600.0, help="seconds to wait for the index to be whole")
    parser.add_argument("--searches", type=int, default=200, help="REST searches once whole")
    parser.add_argument("--json", type=Path, default=HERE / "results" / "startup.json")
    args = parser.parse_args()
    plan = [("before", args.baseline), ("after", args.src)] if args.baseline else [("this", args.src)]
    runs = [
        anyio.run(measure, label, src.resolve(), args.servers, args.tools, args.poll, args.limit, args.searches)
        for label, src in plan
    ]
    results = [summary(r) for r in runs]
    load = os.getloadavg()
    for run in runs:
        print_timeline(run.label, timeline(run))
    print(
        f"\n{args.servers} servers x {args.tools} tools over stdio, cpus: {os.cpu_count()}, "
        f"load average at the end (1, 5, 15 min): {load[0]:.1f}, {load[1]:.1f}, {load[2]:.1f}\n"
    )
    print_table(results)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    payload = {
        "servers": args.servers,
        "tools": args.tools,
        "cpus": os.cpu_count(),
        "load_average": load,
        "results": results,
        "timelines": {r.label: timeline(r) for r in runs},
    }
    args.json.write_text(json.dumps(payload, indent=2))
    print(f"\nwritten {args.json}")


if __name__ == "__main__":
    main()
