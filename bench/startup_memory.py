"""Where the gateway's memory goes during a start: RSS (and, with ``--trace``, the Python heap
by source file) at each phase, for this checkout and optionally a ``--baseline`` one.

Run: ``.venv/bin/python bench/startup_memory.py [--servers 50] [--tools 200] [--demo]
[--trace] [--baseline OTHER/src] [--json bench/results/startup_memory.json]``.

The gateway runs under ``memory_probe.py`` over ``many_tools_server.py`` upstreams (as in
``startup_bench.py``) or, with ``--demo``, over the demo's four servers (``demo/aggregator.yaml``,
its commands on ``PATH`` as ``run-demo.sh`` puts them). The phases: the interpreter, the imports,
the listener up (first ``/healthz``), every server connected with its tools listed, and the
index whole (embedded and classified). Each phase reads RSS, the peak so far (``VmHWM``) and,
traced, the heap's total and its largest files; the table prints the RSS each phase added.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from startup_bench import TOKEN, free_port, rss_mb, write_config

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PHASES = ("interpreter", "imports", "listening", "connected", "whole")


def demo_config(folder: Path, port: int) -> Path:
    """The demo's config with a port, a token and a registry of its own; its servers run in
    ``folder``, a git repository of one commit (the demo's ``git`` server reads the one it
    runs in, and a worktree's ``.git`` points outside what its sandbox may read)."""
    spec = yaml.safe_load((ROOT / "demo" / "aggregator.yaml").read_text())
    (folder / ".aggregator" / "memory").mkdir(parents=True)
    (folder / "README").write_text("demo\n")
    git = ["git", "-c", "user.name=bench", "-c", "user.email=bench@127.0.0.1"]
    for args in (["init", "-q"], ["add", "README"], ["commit", "-qm", "demo"]):
        subprocess.run([*git, *args], cwd=folder, check=True)
    spec["serve"] = {"host": "127.0.0.1", "port": port, "admin_token": TOKEN, "data_dir": str(folder / "data")}
    spec["registry"] = {"database_url": f"sqlite+aiosqlite:///{folder / 'registry.db'}"}
    path = folder / "aggregator.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _wait_file(path: Path, deadline: float) -> dict[str, Any]:
    while time.monotonic() < deadline:
        if path.exists():
            try:
                data: dict[str, Any] = json.loads(path.read_text())
                return data
            except json.JSONDecodeError:  # being written
                pass
        time.sleep(0.05)
    raise TimeoutError(f"no snapshot {path.name}")


def _ask(folder: Path, label: str, pid: int, timeout: float = 120.0) -> dict[str, Any]:
    (folder / f"{label}.want").touch()
    entry = _wait_file(folder / f"{label}.json", time.monotonic() + timeout)
    # The kernel raises VmHWM when pages are unmapped, not when malloc_trim hands them back
    # (MADV_DONTNEED): after a trim it can read below an RSS seen a moment earlier. The peak
    # is at least both, and may have been higher between snapshots.
    peak = rss_mb(pid, "VmHWM")
    entry["peak_mb"] = None if peak is None else round(max(peak, entry["rss_mb"]), 1)
    return entry


class RssSampler:
    """Reads a process's RSS every ``every`` seconds on a thread of its own: the snapshots
    see the phases' ends, this sees the peak between them (when, and how high)."""

    def __init__(self, pid: int, every: float = 0.02) -> None:
        self._pid = pid
        self._every = every
        self._stop = threading.Event()
        self.series: list[tuple[float, float]] = []
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self._every):
            rss = rss_mb(self._pid)
            if rss is None:
                return
            self.series.append((time.monotonic(), rss))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()


def measure(src: Path, *, demo: bool, servers: int, tools: int, trace: bool, limit: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="startup-memory-") as tmp:
        folder = Path(tmp)
        probe = folder / "probe"
        probe.mkdir()
        port = free_port()
        config = demo_config(folder, port) if demo else write_config(folder, servers, tools, port)
        env = {
            **os.environ,
            "PYTHONPATH": f"{src}{os.pathsep}{HERE}",
            "HF_HUB_OFFLINE": "1",
            "MEMORY_PROBE_DIR": str(probe),
            "MEMORY_PROBE_TRACE": "1" if trace else "0",
        }
        if demo:
            env["PWD"] = str(folder)  # the demo's config writes under ${PWD}
        cmd = [sys.executable, str(HERE / "memory_probe.py"), "serve", "--config", str(config)]
        log = (folder / "gateway.log").open("w")
        cwd = folder if demo else ROOT
        proc = subprocess.Popen(cmd, env=env, cwd=cwd, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True)
        phases: dict[str, Any] = {}
        t0 = time.monotonic()
        sampler = RssSampler(proc.pid)
        try:
            phases["interpreter"] = _wait_file(probe / "interpreter.json", t0 + limit)
            phases["imports"] = _wait_file(probe / "imports.json", t0 + limit)
            phases["interpreter"]["peak_mb"] = phases["imports"]["peak_mb"] = None
            phases.update(_follow(proc.pid, probe, port, 4 if demo else servers, t0 + limit))
        finally:
            sampler.stop()
            proc.terminate()
            try:
                proc.wait(30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
            if "whole" not in phases:
                sys.stderr.write((folder / "gateway.log").read_text()[-4000:])
        start = phases["interpreter"]["at"]
        for entry in phases.values():
            entry["at"] = round(entry["at"] - start, 1)
        series = [(round(t - start, 2), rss) for t, rss in sampler.series]
        return {"src": str(src), "phases": phases, "series": series}


def _follow(pid: int, probe: Path, port: int, servers: int, deadline: float) -> dict[str, Any]:
    phases: dict[str, Any] = {}
    auth = {"Authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30.0) as client:
        while time.monotonic() < deadline:
            try:
                if "listening" not in phases:
                    client.get("/healthz")
                    phases["listening"] = _ask(probe, "listening", pid)
                answer = client.get("/api/v1/aggregator/state", headers=auth)
            except httpx.TransportError:
                time.sleep(0.2)
                continue
            if answer.status_code != 200:  # a 500 with the registry locked, under load
                time.sleep(0.5)
                continue
            state = answer.json()
            listed = state["connected_servers"] == servers and state["exposed_tools"] >= state["total_tools"] > 0
            if "connected" not in phases and listed:
                phases["connected"] = _ask(probe, "connected", pid)
            if listed and state["indexing"] is None and state["classified_tools"] >= state["exposed_tools"]:
                r = client.get("/api/v1/aggregator/tools/search", params={"q": "list files"}, headers=auth)
                if r.status_code == 200 and "X-Search-Incomplete" not in r.headers:
                    phases["whole"] = _ask(probe, "whole", pid)
                    return phases
            time.sleep(0.5)
    raise TimeoutError("the index was not whole in time")


def print_table(results: list[tuple[str, dict[str, Any]]]) -> None:
    labels = [label for label, _ in results]
    print("| phase | " + " | ".join(f"{lb} RSS MB (+added) | {lb} peak MB" for lb in labels) + " |")
    print("| --- |" + " --- | --- |" * len(labels))
    for phase in PHASES:
        cells = []
        for _, run in results:
            phases = run["phases"]
            entry = phases.get(phase)
            if entry is None:
                cells += ["—", "—"]
                continue
            before = phases[PHASES[PHASES.index(phase) - 1]]["rss_mb"] if phase != "interpreter" else 0.0
            traced = f", heap {entry['traced_mb']}" if "traced_mb" in entry else ""
            cells += [f"{entry['rss_mb']:.0f} (+{entry['rss_mb'] - before:.0f}{traced})", str(entry["peak_mb"])]
        print(f"| {phase} | " + " | ".join(cells) + " |")
    for label, run in results:
        if run.get("series"):
            at, top = max(run["series"], key=lambda point: point[1])
            marks = ", ".join(f"{p} {e['at']} s" for p, e in run["phases"].items())
            print(f"\n{label}: highest RSS sampled (every 20 ms) {top:.0f} MB at {at} s ({marks})")
        whole = run["phases"].get("whole", {})
        if "mappings" in whole:
            threads = whole.get("threads")
            print(f"\n{label}: RSS by mapping once whole, MB (at the imports -> once whole), {threads} threads")
            at_imports = dict(run["phases"]["imports"].get("mappings", []))
            for name, mb in whole["mappings"][:20]:
                print(f"  {at_imports.get(name, 0.0):7.1f} -> {mb:7.1f}  {name}")
        if "files" in whole:
            print(f"\n{label}: largest Python heap files once whole (MB)")
            for name, mb in whole["files"][:25]:
                print(f"  {mb:7.2f}  {name}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--servers", type=int, default=50)
    parser.add_argument("--tools", type=int, default=200)
    parser.add_argument("--demo", action="store_true", help="the demo's four servers instead")
    parser.add_argument("--trace", action="store_true", help="tracemalloc the Python heap (slower)")
    parser.add_argument("--src", type=Path, default=ROOT / "src")
    parser.add_argument("--baseline", type=Path, help="another checkout's src folder, measured first")
    parser.add_argument("--limit", type=float, default=900.0)
    parser.add_argument("--json", type=Path, default=HERE / "results" / "startup_memory.json")
    args = parser.parse_args()
    plan = [("before", args.baseline), ("after", args.src)] if args.baseline else [("this", args.src)]
    results = [
        (
            label,
            measure(
                src.resolve(),
                demo=args.demo,
                servers=args.servers,
                tools=args.tools,
                trace=args.trace,
                limit=args.limit,
            ),
        )
        for label, src in plan
    ]
    what = "the demo's four servers" if args.demo else f"{args.servers} servers x {args.tools} tools"
    print(f"{what}, cpus: {os.cpu_count()}\n")
    print_table(results)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"demo": args.demo, "results": dict(results)}, indent=2))
    print(f"\nwritten {args.json}")


if __name__ == "__main__":
    main()
