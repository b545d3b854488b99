"""Benchmarks of the guardrails (issue 37).

Usage::

    .venv/bin/python bench/guardrails_bench.py [--quick]

Measures, against the goals:
- what the default rules (secrets masked in results) add per call, p50, on a 2 KB and a
  200 KB benign result: the stage's own work on the full pipeline's result model and on the
  fast path's raw answer, and end to end (a gateway with the default rules beside one with
  ``guardrails: []``, the same stdio upstream, calls interleaved)     goal <= 0.2 ms at 2 KB
- false positives on the benign corpus (``bench/data/guardrails/benign``: real results of
  the demo's servers, READMEs, code with hashes and UUIDs, cut into 2 KB results): share of
  results the default rules alter                                      goal <= 1 %
  (the opt-in pii and injection detectors' share shown beside, for information)
- detection on the labelled corpus (``bench/data/guardrails/labelled.jsonl``)  goal >= 95 %
- hostile text (issue 50): a result written to stall a backtracking engine, judged by each
  detector, beside ordinary text of the same size; the injection rule's former HTML-comment
  pattern (Python ``re``) and ``(a+)+$`` under Python ``re`` are the baseline, run here too
  (``--hostile``: this part alone; ``--quick``: 64 KB inputs, judged once)

Prints a table and writes ``bench/results/guardrails.json`` (``--json PATH``: elsewhere).
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import orjson

from mcp_aggregator.gateway import Gateway
from mcp_aggregator.guardrails import GuardrailRule
from mcp_aggregator.guardrails.config import GuardPlace
from mcp_aggregator.guardrails.guard import Guard, Verdict, guard_for
from mcp_aggregator.guardrails.guard_stage import GuardStage
from mcp_aggregator.guardrails.injection_detector import InjectionDetector
from mcp_aggregator.guardrails.pii_detector import PiiDetector
from mcp_aggregator.guardrails.secret_detector import SecretDetector
from mcp_aggregator.identity import ClientIdentity
from mcp_aggregator.relay import Caller, Invocation
from mcp_aggregator.settings import Settings

HERE = Path(__file__).parent
DATA = HERE / "data" / "guardrails"
RESULTS_PATH = HERE / "results" / "guardrails.json"
CHUNK = 2048
ECHO = str(HERE / "echo_server.py")


def documents() -> Iterator[tuple[str, str]]:
    """The benign documents cut into 2 KB results: (source, text)."""
    for path in sorted((DATA / "benign" / "documents").iterdir()):
        text = path.read_text(errors="replace")
        for start in range(0, len(text), CHUNK):
            yield path.name, text[start : start + CHUNK]


def benign_results() -> list[tuple[str, dict[str, Any]]]:
    """Every benign result as wire JSON: the captured ones, then the documents as text results."""
    out = []
    for line in (DATA / "benign" / "results.jsonl").read_bytes().splitlines():
        item = orjson.loads(line)
        out.append((f"{item['server']} {item['tool']}", item["result"]))
    for source, text in documents():
        out.append((source, {"content": [{"type": "text", "text": text}], "isError": False}))
    return out


def payload(size: int) -> str:
    """``size`` characters of benign text (READMEs and code), as a real tool result reads."""
    text = "".join(chunk for _, chunk in documents())
    while len(text) < size:
        text += text
    return text[:size]


def percentiles(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "p50_us": round(statistics.median(ordered) * 1e6, 2),
        "p95_us": round(ordered[int(len(ordered) * 0.95)] * 1e6, 2),
    }


def timed(fn: Callable[[], object], n: int) -> list[float]:
    samples = []
    for _ in range(n):
        start = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - start)
    return samples


def stage_costs(n: int) -> dict[str, Any]:
    """The default rules' own work per result, on both paths' forms of it."""
    stage = GuardStage(guard_for(None, {}))
    invocation = Invocation("tools/call", "bench", "echo", Caller(identity=ClientIdentity(profile="default")))
    out: dict[str, Any] = {}
    secret = "deploy with AKIAIOSFODNN7EXAMPLE and go\n"
    for name, text in (
        ("2KB", payload(2048)),
        ("200KB", payload(200 * 1024)),
        ("2KB with a secret", secret + payload(2048 - len(secret))),
    ):
        model = types.CallToolResult(content=[types.TextContent(type="text", text=text)])
        wire = model.model_dump(mode="json", by_alias=True, exclude_none=True)
        raw = orjson.dumps({"jsonrpc": "2.0", "id": "agw:1", "result": wire})
        rounds = n if len(text) < 10_000 else max(n // 10, 50)
        out[name] = {
            "full_pipeline_model": percentiles(timed(functools.partial(stage.screen, invocation, model), rounds)),
            "fast_path_raw": percentiles(timed(functools.partial(stage.screen, invocation, raw), rounds)),
        }
    return out


def bench_settings(rules: list[dict[str, Any]] | None, data_dir: Path) -> Settings:
    data: dict[str, Any] = {
        "servers": [
            {
                "name": "bench",
                "transport": "stdio",
                "command": sys.executable,
                "args": [str(HERE / "echo_server.py"), "stdio"],
                "cwd": str(HERE),  # the sandbox shows a stdio server its working directory, read-only
            }
        ],
        "serve": {"exposure": "passthrough", "data_dir": str(data_dir)},
        "registry": {"database_url": f"sqlite+aiosqlite:///{data_dir / 'registry.db'}"},
        "search": {"embedder": "none"},
    }
    if rules is not None:
        data["guardrails"] = rules
    return Settings.model_validate(data)


async def pipeline_only(guarded: Gateway, bare: Gateway, n: int) -> dict[str, Any]:
    """p50 of the gateways' whole stage chain around an upstream answer already in hand (the
    result model, as the full pipeline gets it; the raw bytes, as the fast path does): what
    the guardrails add without the upstream hop's noise."""
    out: dict[str, Any] = {}
    invocation = Invocation("tools/call", "bench", "echo", Caller(identity=ClientIdentity(profile="default")))
    for name, size in (("2KB", 2048), ("200KB", 200 * 1024)):
        model = types.CallToolResult(content=[types.TextContent(type="text", text=payload(size))])
        wire = model.model_dump(mode="json", by_alias=True, exclude_none=True)
        raw = orjson.dumps({"jsonrpc": "2.0", "id": "agw:1", "result": wire})
        rounds = n if size < 10_000 else max(n // 20, 50)
        for form, answer in (("model", model), ("raw", raw)):

            async def send(answer: object = answer) -> object:
                return answer

            samples: dict[str, list[float]] = {"default_rules": [], "no_guardrails": []}
            for i in range(rounds * 2):
                first = (i // 2) % 2 == 0
                key, gateway = ("default_rules", guarded) if (i % 2 == 0) == first else ("no_guardrails", bare)
                start = time.perf_counter()
                await gateway.pipeline.through(invocation, send)
                samples[key].append(time.perf_counter() - start)
            row: dict[str, Any] = {key: percentiles(values) for key, values in samples.items()}
            row["added_p50_us"] = round(row["default_rules"]["p50_us"] - row["no_guardrails"]["p50_us"], 2)
            out[f"{name} {form}"] = row
    return out


async def end_to_end(n: int) -> dict[str, Any]:
    """p50 of a call through the full pipeline to a stdio upstream, default rules vs none,
    the two gateways' calls interleaved so that the machine's load falls on both alike."""
    out: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as two:
        async with AsyncExitStack() as stack:
            guarded = await stack.enter_async_context(Gateway(bench_settings(None, Path(one))))
            bare = await stack.enter_async_context(Gateway(bench_settings([], Path(two))))
            for gateway in (guarded, bare):
                await gateway.wait_settled(30)
            out["pipeline"] = await pipeline_only(guarded, bare, n * 4)
            for name, size in (("2KB", 2048), ("200KB", 200 * 1024)):
                text = payload(size)
                rounds = n if size < 10_000 else max(n // 5, 40)
                samples: dict[str, list[float]] = {"default_rules": [], "no_guardrails": []}
                for i in range(rounds * 2):
                    # A B B A: neither gateway always goes first.
                    first = (i // 2) % 2 == 0
                    which = ("default_rules", guarded) if (i % 2 == 0) == first else ("no_guardrails", bare)
                    start = time.perf_counter()
                    await which[1].pipeline.call_tool_result("bench__echo", {"text": text})
                    samples[which[0]].append(time.perf_counter() - start)
                row: dict[str, Any] = {key: percentiles(values[5:]) for key, values in samples.items()}
                row["added_p50_us"] = round(row["default_rules"]["p50_us"] - row["no_guardrails"]["p50_us"], 2)
                out[name] = row
    return out


def false_positives() -> dict[str, Any]:
    results = benign_results()
    default = guard_for(None, {})
    default_rules = default.applying(GuardPlace.RESULTS, "s", "t", "default")
    opt_in = Guard(
        [
            GuardrailRule.model_validate({"name": "pii", "kind": "pii", "action": "flag"}),
            GuardrailRule.model_validate({"name": "injection", "kind": "injection", "action": "flag"}),
        ]
    )
    opt_rules = opt_in.applying(GuardPlace.RESULTS, "s", "t", "default")
    altered: list[str] = []
    flagged: Counter[str] = Counter()
    for source, result in results:
        if default.judge(default_rules, result, GuardPlace.RESULTS).changed:
            altered.append(source)
        for decision in opt_in.judge(opt_rules, result, GuardPlace.RESULTS).decisions:
            flagged[decision.rule] += 1
    total = len(results)
    return {
        "results": total,
        "altered_by_default_rules": len(altered),
        "altered_pct": round(100 * len(altered) / total, 2),
        "altered_sources": altered,
        "opt_in_flagged_pct": {rule: round(100 * count / total, 2) for rule, count in sorted(flagged.items())},
    }


def detection() -> dict[str, Any]:
    secrets, pii = SecretDetector(), PiiDetector()
    per_label: dict[str, list[int]] = {}
    for line in (DATA / "labelled.jsonl").read_text().splitlines():
        row = json.loads(line)
        detector = secrets if row["kind"] == "secrets" else pii
        found = row["label"] in {f.label for f in detector.find(row["text"])}
        per_label.setdefault(row["label"], [0, 0])[0] += found
        per_label[row["label"]][1] += 1
    hits = sum(h for h, _ in per_label.values())
    total = sum(t for _, t in per_label.values())
    return {
        "texts": total,
        "detected_pct": round(100 * hits / total, 2),
        "per_label_pct": {label: round(100 * h / t, 1) for label, (h, t) in sorted(per_label.items())},
        "injection_detector_loaded": InjectionDetector.__name__,
    }


HOSTILE_COMMENT = "<!-- ignore previous instructions system "
BACKTRACKING_COMMENT = re.compile(
    # The injection rule's HTML-comment pattern before it was made linear (the baseline).
    r"<!--(?:(?!-->).){0,2000}?\b(?:assistant|model|llm|agent|ignore|instructions?|must|always|never"
    r"|do\s+not|user|system)\b.{0,2000}?-->",
    re.IGNORECASE | re.DOTALL,
)


def repeated(piece: str, size: int) -> str:
    return (piece * (size // len(piece) + 1))[:size]


def distinct(piece: Callable[[random.Random], str], size: int) -> str:
    """``size`` characters of pieces each drawn anew (the same every run): no verdict a
    detector keeps per string serves twice."""
    rng, pieces, length = random.Random(1), [], 0
    while length < size:
        pieces.append(piece(rng))
        length += len(pieces[-1])
    return "".join(pieces)[:size]


def _ipv6_tail(rng: random.Random) -> str:
    return "::ffff:" + ".".join(str(rng.randrange(256)) for _ in range(4)) + " "


def _iban(rng: random.Random) -> str:
    account = "".join(rng.choice("0123456789") for _ in range(18))
    return f"DE{98 - int(account + '131400') % 97:02d}{account} "


def cpu_ms(fn: Callable[[], object], repeats: int = 1) -> dict[str, Any]:
    """Wall and CPU milliseconds of ``fn``, the least of ``repeats`` runs (the machine is
    shared: CPU time is the robust figure, and the least run the one least disturbed)."""
    walls, cpus = [], []
    for _ in range(repeats):
        started, cpu = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - started)
        cpus.append(time.process_time() - cpu)
    return {"wall_ms": round(1000 * min(walls), 1), "cpu_ms": round(1000 * min(cpus), 1)}


def hostile_inputs(mb: int = 1 << 20) -> list[tuple[str, str, dict[str, Any], str]]:
    """(name, kind, the rule's other fields, ``mb`` characters of text, 1 MB unless a smoke run
    asks for less): for each detector its worst cases (many near-matches, many matches,
    unterminated constructs) and ordinary text."""
    ordinary = payload(mb)
    return [
        ("ordinary text", "injection", {}, ordinary),
        ("unclosed comments", "injection", {}, repeated(HOSTILE_COMMENT, mb)),
        ("'ignore' and whitespace", "injection", {}, "ignore" + " " * mb),
        ("'<system>' markers", "injection", {}, repeated("<system>", mb)),
        ("zero-width spaces between letters", "injection", {}, repeated("a\u200b", mb)),
        ("a run of a's and '!', (a+)+$", "pattern", {"patterns": [r"(a+)+$"]}, "a" * mb + "!"),
        ("a run of a's, pattern 'a'", "pattern", {"patterns": ["a"]}, "a" * mb),
        ("ordinary text", "pattern", {"patterns": [r"\d{3}-\d{2}-\d{4}", r"(?i)internal[ _-]only"]}, ordinary),
        ("ordinary text", "secrets", {}, ordinary),
        ("key headers without an end", "secrets", {}, repeated("-----BEGIN RSA PRIVATE KEY-----\n", mb)),
        ("AWS access keys", "secrets", {}, repeated("AKIAIOSFODNN7EXAMPLE ", mb)),
        ("JWT-shaped tokens that do not decode", "secrets", {}, repeated("eyJhbGciOiJIUzI1NiJ9.eyJ.x ", mb)),
        ("'secret' repeated (a key's name, no key)", "secrets", {}, repeated("secret", mb)),
        ("'GR1348941' repeated (a GitLab prefix)", "secrets", {}, repeated("GR1348941", mb)),
        ("ordinary text", "pii", {}, ordinary),
        ("'1 ' repeated", "pii", {}, repeated("1 ", mb)),
        ("valid phone numbers", "pii", {}, repeated("call +1 650-253-0000 now ", mb)),
        ("runs of seven digits that are not phone numbers", "pii", {}, repeated("1234567 x ", mb)),
        ("e-mail addresses", "pii", {}, repeated("ann@example.com ", mb)),
        ("a run of letters and one '@'", "pii", {}, "a" * mb + "@"),
        ("dotted quads", "pii", {}, repeated("10.1.2.3 ", mb)),
        ("IPv4 addresses inside IPv6 ones", "pii", {}, repeated("::ffff:1.2.3.4 ", mb)),
        ("distinct IPv4 addresses inside IPv6 ones", "pii", {}, distinct(_ipv6_tail, mb)),
        ("IBAN-shaped, wrong check digits", "pii", {}, repeated("DE00AAAAAAAAAAAAAAAAAA ", mb)),
        ("distinct valid IBANs", "pii", {}, distinct(_iban, mb)),
        ("IBANs written in groups of digits", "pii", {}, repeated("DE89 3704 0044 0532 0130 00 ", mb)),
    ]


def hostile(quick: bool = False) -> dict[str, Any]:
    """Per detector and input, the CPU and wall milliseconds a ``block`` rule and a ``mask``
    rule take over 1 MB (``Guard.judge``, as a worker thread runs it), and what they decided;
    the injection rule's former HTML-comment pattern (Python ``re``) is the baseline.
    ``quick`` (a smoke run): 64 KB inputs, each judged once instead of the least of 3."""
    size, repeats = (1 << 16, 1) if quick else (1 << 20, 3)
    label = f"{size >> 10} KB" if quick else "1 MB"
    rows: dict[str, Any] = {}
    for size in (10_000, 82_000):
        text = repeated(HOSTILE_COMMENT, size)
        rows[f"unclosed comments, {size // 1000} KB, former pattern (re)"] = cpu_ms(
            functools.partial(BACKTRACKING_COMMENT.findall, text)
        )
    rows["(a+)+$ on 24 a's and '!', Python re"] = cpu_ms(lambda: re.search(r"(a+)+$", "a" * 24 + "!"))
    for name, kind, fields, text in hostile_inputs(size):
        for action in ("block", "mask"):
            rows[f"{kind}, {name}, {label}, {action}"] = judged(kind, action, fields, text, repeats)
    return rows


def judged(kind: str, action: str, fields: dict[str, Any], text: str, repeats: int = 3) -> dict[str, Any]:
    """What one rule costs over ``text`` as a result (least of ``repeats``) and the kinds it found."""
    guard = Guard([GuardrailRule.model_validate({"name": "r", "kind": kind, "action": action, **fields})])
    value = {"content": [{"type": "text", "text": text}]}
    verdicts: list[Verdict] = []

    def judge() -> None:
        verdicts.append(guard.judge(guard.rules, value, GuardPlace.RESULTS))

    row = cpu_ms(judge, repeats=repeats)
    row["found"] = sorted({label for d in verdicts[-1].decisions for label in d.found})
    return row


def print_hostile(rows: dict[str, Any]) -> None:
    print(f"{'hostile input':70} {'cpu ms':>9} {'wall ms':>9}  found")
    for name, row in rows.items():
        print(f"{name:70} {row['cpu_ms']:>9.1f} {row['wall_ms']:>9.1f}  {', '.join(row.get('found', []))}")


def machine() -> dict[str, Any]:
    return {"python": platform.python_version(), "cpus": os.cpu_count(), "load": os.getloadavg()[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer rounds (a smoke run)")
    parser.add_argument("--json", type=Path, default=RESULTS_PATH, help="where to write the results")
    parser.add_argument("--hostile", action="store_true", help="only the hostile-text timings")
    args = parser.parse_args()
    n = 100 if args.quick else 2000
    if args.hostile:
        rows = hostile()
        print_hostile(rows)
        print(json.dumps({"machine": machine(), "hostile": rows}))
        return
    report: dict[str, Any] = {
        "machine": machine(),
        "stage_cost": stage_costs(n),
        "end_to_end": anyio.run(end_to_end, n // 4),
        "false_positives": false_positives(),
        "detection": detection(),
        "hostile": hostile(args.quick),
    }
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2) + "\n")
    print_table(report)
    print(json.dumps(report))


def print_table(report: dict[str, Any]) -> None:
    print(f"{'measure':58} {'value':>16}  goal")
    for size, row in report["stage_cost"].items():
        for path, cost in row.items():
            goal = "<= 200 us" if size == "2KB" else ""
            print(f"{'stage p50, ' + size + ', ' + path:58} {cost['p50_us']:>13.1f} us  {goal}")
    for case, row in report["end_to_end"]["pipeline"].items():
        goal = "<= 200 us" if case.startswith("2KB") else ""
        print(f"{'stage chain added p50, ' + case:58} {row['added_p50_us']:>13.1f} us  {goal}")
    for size, row in report["end_to_end"].items():
        if size == "pipeline":
            continue
        print(f"{'end to end p50, ' + size + ', default rules':58} {row['default_rules']['p50_us']:>13.1f} us")
        print(f"{'end to end p50, ' + size + ', no guardrails':58} {row['no_guardrails']['p50_us']:>13.1f} us")
        goal = "<= 200 us" if size == "2KB" else ""
        print(f"{'end to end added p50, ' + size:58} {row['added_p50_us']:>13.1f} us  {goal}")
    fp = report["false_positives"]
    print(
        f"{'benign results altered by the default rules':58} {fp['altered_pct']:>14.2f} %  <= 1 %  (of {fp['results']})"
    )
    for rule, pct in fp["opt_in_flagged_pct"].items():
        print(f"{'benign results an opt-in ' + rule + ' rule would act on':58} {pct:>14.2f} %")
    det = report["detection"]
    print(f"{'labelled secrets and PII detected':58} {det['detected_pct']:>14.2f} %  >= 95 %  (of {det['texts']})")
    print_hostile(report["hostile"])


if __name__ == "__main__":
    main()
