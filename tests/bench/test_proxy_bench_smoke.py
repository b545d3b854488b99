"""The tool-call benchmark (bench/proxy_bench.py): its pure parts, and one tiny real run.

No timing is asserted here: speed is the benchmark's business, not the tests'."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from bench.proxy.idle import IdleRow
from bench.proxy.large import LargeRow
from bench.proxy.measure import Row, percentile, resolve_tool, summarize_latencies
from bench.proxy.options import parse_options
from bench.proxy.paths import Pair, PathEnv, Upstream, http_echo, serve_fields_known, unsupported
from bench.proxy.pyspy import summarize_collapsed
from bench.proxy.report import (
    compare_to_direct,
    format_idle,
    format_large,
    format_main,
    format_side,
    goal_verdicts,
)
from bench.proxy.runner import median_rows, run_main, sessions_for
from bench.proxy.side import SideRow, run_side


@pytest.mark.parametrize(
    ("values", "pct", "expected"),
    [
        ([], 50, 0.0),
        ([1.0], 99, 1.0),
        ([1.0, 2.0, 3.0, 4.0], 50, 2.0),
        ([1.0, 2.0, 3.0, 4.0], 75, 3.0),
        ([float(i) for i in range(1, 101)], 99, 99.0),
        ([float(i) for i in range(1, 101)], 100, 100.0),
    ],
)
def test_percentile_is_nearest_rank(values: list[float], pct: float, expected: float) -> None:
    assert percentile(values, pct) == expected


def test_latency_summary_is_in_milliseconds_and_ordered() -> None:
    summary = summarize_latencies([0.004, 0.001, 0.002, 0.003])
    assert (summary.p50_ms, summary.p99_ms, summary.mean_ms) == (2.0, 4.0, 2.5)


def test_gateway_tool_is_found_by_its_namespaced_name() -> None:
    assert resolve_tool(["echo__blob", "echo__echo"], "echo") == "echo__echo"
    assert resolve_tool(["echo", "blob"], "echo") == "echo"
    with pytest.raises(LookupError, match="no tool 'echo'"):
        resolve_tool(["other"], "echo")


def test_mcp_proxy_is_not_applicable_to_same_transport_pairs() -> None:
    assert unsupported("mcp-proxy", Pair.parse("http-http")) is not None
    assert unsupported("mcp-proxy", Pair.parse("stdio-http")) is None
    assert unsupported("gateway", Pair.parse("stdio-stdio")) is None


def test_stdio_sessions_are_capped_because_each_is_a_process() -> None:
    options = parse_options(["--stdio-sessions", "4"])
    assert sessions_for("gateway", Pair.parse("stdio-http"), 32, options) == 4
    assert sessions_for("gateway", Pair.parse("http-stdio"), 32, options) == 32
    assert sessions_for("direct", Pair.parse("http-stdio"), 32, options) == 4
    assert sessions_for("direct", Pair.parse("stdio-http"), 32, options) == 4
    assert sessions_for("direct", Pair.parse("http-http"), 32, options) == 32


def test_table_shows_ratios_against_direct_and_na_reasons() -> None:
    direct = Row("http-http", "direct", 1, sessions=1, calls=100, p50_ms=4.0, p95_ms=5.0, p99_ms=6.0, calls_per_s=200)
    gateway = Row(
        "http-http", "gateway", 1, sessions=1, calls=100, p50_ms=8.0, p95_ms=9.0, p99_ms=12.0, calls_per_s=100
    )
    gateway.cpu_ms_per_call = {"client": 1.0, "proxy": 3.5, "upstream": 1.0}
    gateway.proxy_rss_peak_mb = 180.0
    absent = Row("http-http", "mcp-proxy", 1, note="mcp-proxy only bridges stdio<->HTTP")
    rows = [direct, gateway, absent]
    compare_to_direct(rows)
    assert (gateway.added_p50_ms, gateway.throughput_pct_of_direct) == (4.0, 50.0)
    table = format_main(rows)
    line = next(text for text in table.splitlines() if text.startswith("http-http   gateway"))
    assert "+4.00" in line and " 2.00 " in line and " 3.50 " in line
    assert "n/a: mcp-proxy only bridges stdio<->HTTP" in table
    verdicts = goal_verdicts(rows, [])
    assert "MISS http-http c=1: added p50 +4.00 ms (goal <= 0.5 ms)" in verdicts


def test_a_throughput_verdict_says_how_busy_the_bench_client_and_the_machine_were() -> None:
    direct = Row("http-stdio", "direct", 32, sessions=8, calls=900, p50_ms=36.0, calls_per_s=840)
    direct.cpu_ms_per_call = {"client": 0.48, "upstream": 1.6}
    gateway = Row("http-stdio", "gateway", 32, sessions=32, calls=600, p50_ms=60.0, calls_per_s=520)
    gateway.cpu_ms_per_call = {"client": 1.66, "proxy": 0.33, "upstream": 1.15}
    same_client = Row("http-http", "direct", 32, sessions=32, calls=900, p50_ms=40.0, calls_per_s=650)
    rows = [direct, gateway, same_client]
    compare_to_direct(rows)
    line = next(text for text in format_main(rows).splitlines() if text.startswith("http-stdio  gateway"))
    assert " 0.33   1.66   1.15 " in line
    assert goal_verdicts(rows, []) == [
        "MISS http-stdio c=32: throughput 62 % of direct (goal >= 90 %); "
        "the bench's client process used 0.86 of a core (1.66 ms per call); "
        "the whole path used 3.14 ms of CPU per call against direct's 2.08; "
        "80 % of the same client straight to an HTTP upstream"
    ]


def test_rounds_keep_each_cells_median_round_and_every_rounds_ratio() -> None:
    def round_of(direct_calls_per_s: float, gateway_calls_per_s: float) -> list[Row]:
        rows = [
            Row("http-http", "direct", 32, sessions=32, calls=900, p50_ms=20.0, calls_per_s=direct_calls_per_s),
            Row("http-http", "gateway", 32, sessions=32, calls=900, p50_ms=25.0, calls_per_s=gateway_calls_per_s),
        ]
        compare_to_direct(rows)
        return rows

    direct, gateway = median_rows([round_of(1000, 700), round_of(1500, 1350), round_of(800, 760)])
    assert direct.calls_per_s == 1000  # the median direct round
    assert gateway.throughput_pct_of_direct == 90.0  # 70 / 90 / 95: the median ratio's round
    assert gateway.round_throughput_pct == [70.0, 90.0, 95.0]
    assert goal_verdicts([direct, gateway], []) == [
        "PASS http-http c=32: throughput 90 % of direct (median of 3 rounds: 70/90/95) (goal >= 90 %)"
    ]
    assert parse_options(["--rounds", "3"]).rounds == 3


def test_large_and_idle_tables_report_timeouts_and_errors() -> None:
    large = format_large([LargeRow("gateway", "stdio-stdio", 50, status="timeout", proxy_rss_peak_mb=369.0)])
    assert "timeout" in large and "369" in large
    idle = IdleRow("2025-11-25", 1000, opened=998, open_errors=2, first_errors=["ConnectError: refused"])
    assert "ConnectError: refused" in format_idle([idle])
    assert goal_verdicts([], [idle]) == ["MISS 1000 sessions 2025-11-25: 2 errors, 0 KB per session"]


def test_profile_summary_separates_self_time_from_time_on_stack() -> None:
    collapsed = (
        "main (cli.py:1);loop (asyncio/runners.py:118);encode (json/encoder.py:5) 6\n"
        "main (cli.py:1);loop (asyncio/runners.py:118);send (mcp/server/runner.py:9) 3\n"
        "main (cli.py:1);idle (asyncio/runners.py:120) 1\n"
    )
    packages, own, inclusive = summarize_collapsed(collapsed)
    assert packages == [(60.0, "json"), (30.0, "mcp/server"), (10.0, "asyncio")]
    assert own[0] == (60.0, "encode (json/encoder.py:5)")
    assert inclusive[0] == (60.0, "encode (json/encoder.py:5)")


def test_bad_pair_is_refused_naming_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_options(["--only", "http-tcp"])
    assert "--only" in capsys.readouterr().err


@pytest.fixture(scope="module")
def serve_fields() -> frozenset[str]:
    """Read once per module: it is a fresh interpreter importing the gateway's settings."""
    return serve_fields_known()


@pytest.fixture(scope="module")
def echo_upstream(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    """One HTTP echo upstream for the module's real runs: it keeps no state between calls,
    and each run starts its own paths (gateways, relays) in front of it."""
    with http_echo(tmp_path_factory.mktemp("echo")) as upstream:
        yield upstream


def test_direct_and_gateway_over_http_complete_without_errors(
    tmp_path: Path, serve_fields: frozenset[str], echo_upstream: Upstream
) -> None:
    """Two rounds (the second starts with the gateway): the rows come back in the options'
    order, each with both rounds' ratios."""
    argv = "--only http-http --peers direct,gateway --concurrency 1 --calls 20 --warmup 2 --row-seconds 60 --rounds 2"
    options = parse_options([*argv.split(), "--parts", "main", "--json", str(tmp_path / "proxy.json")])
    with (tmp_path / "stdio.log").open("w") as errlog:
        rows = run_main(options, PathEnv(tmp_path, errlog, serve_fields), echo_upstream, [])
    assert [(row.peer, row.failure, row.errors, row.calls) for row in rows] == [
        ("direct", None, 0, 20),
        ("gateway", None, 0, 20),
    ]
    direct, gateway = rows
    assert 0 < gateway.p50_ms <= gateway.p95_ms <= gateway.p99_ms
    assert gateway.calls_per_s > 0 and gateway.added_p50_ms is not None
    assert gateway.cpu_ms_per_call["proxy"] >= 0 and gateway.proxy_rss_peak_mb
    assert "proxy" not in direct.cpu_ms_per_call
    assert len(gateway.round_throughput_pct) == 2 and not direct.round_throughput_pct


def test_side_by_side_decides_the_latency_goal_and_names_the_floor() -> None:
    side = [
        SideRow("http-http", "direct", calls=100, p50_ms=1.0),
        SideRow("http-http", "relay", calls=100, p50_ms=1.3, added_p50_ms=0.3, paired_added_ms=0.25),
        SideRow("http-http", "gateway", calls=100, p50_ms=1.4, added_p50_ms=0.4, paired_added_ms=0.35),
        SideRow("http-http", "fastmcp", failure="RuntimeError: boom"),
    ]
    apart = Row("http-http", "gateway", 1, sessions=1, calls=100, p50_ms=9.0, calls_per_s=100, added_p50_ms=8.0)
    assert goal_verdicts([apart], [], side) == [
        "PASS http-http c=1 side by side (tools/call): added p50 +0.40 ms, paired +0.35 ms (goal <= 0.5 ms); "
        "the bare relay +0.30 ms"
    ]
    table = format_side(side)
    assert "bare byte relay (floor)" in table and "FAILED: RuntimeError: boom" in table
    assert "+0.40" in next(line for line in table.splitlines() if line.startswith("http-http   gateway"))


def test_relay_is_only_a_peer_where_no_transport_changes() -> None:
    assert unsupported("relay", Pair.parse("stdio-stdio")) is None
    assert unsupported("relay", Pair.parse("http-stdio")) == "a byte relay cannot change transport"
    with pytest.raises(SystemExit):
        parse_options(["--side-peers", "direct,nginx"])


SideRun = Callable[[str], list[SideRow]]


@pytest.fixture
def side_rows(tmp_path: Path, serve_fields: frozenset[str], echo_upstream: Upstream) -> SideRun:
    """The side part, run for real with the options given."""

    def run(argv: str) -> list[SideRow]:
        options = parse_options([*argv.split(), "--parts", "side", "--json", str(tmp_path / "proxy.json")])
        with (tmp_path / "stdio.log").open("w") as errlog:
            return run_side(options, PathEnv(tmp_path, errlog, serve_fields), echo_upstream)

    return run


def test_side_by_side_interleaves_real_paths_over_both_transports(side_rows: SideRun) -> None:
    rows = side_rows("--only http-http,stdio-stdio --side-calls 12 --warmup 2 --stdio-sessions 1")
    assert [(r.pair, r.peer, r.failure, r.errors, r.calls) for r in rows] == [
        (pair, peer, None, 0, 12) for pair in ("http-http", "stdio-stdio") for peer in ("direct", "relay", "gateway")
    ]
    for row in rows:
        assert 0 < row.p50_ms <= row.p95_ms <= row.p99_ms
        assert (row.added_p50_ms is None) == (row.peer == "direct")
        assert (row.paired_added_ms is None) == (row.peer == "direct")


@pytest.mark.parametrize("method", ["prompts/get", "resources/read"])
def test_side_by_side_times_prompts_and_reads_too(side_rows: SideRun, method: str) -> None:
    argv = f"--only http-http --side-peers direct,gateway --side-calls 6 --warmup 1 --side-method {method}"
    rows = side_rows(argv)
    assert [(r.peer, r.method, r.failure, r.errors, r.calls) for r in rows] == [
        (peer, method, None, 0, 6) for peer in ("direct", "gateway")
    ]


def test_an_unknown_side_method_is_refused_naming_the_option(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        parse_options(["--side-method", "tools/list"])
    assert "--side-method" in capsys.readouterr().err


def test_a_profile_with_a_policy_is_a_path_beside_plain_passthrough(side_rows: SideRun) -> None:
    argv = "--only http-http,stdio-stdio --side-peers gateway,gateway-profile --side-calls 6 --warmup 1"
    rows = side_rows(f"{argv} --stdio-sessions 1")
    assert [(r.pair, r.peer, r.failure, r.errors, r.calls) for r in rows] == [
        (pair, peer, None, 0, 6) for pair in ("http-http", "stdio-stdio") for peer in ("gateway", "gateway-profile")
    ]


def test_the_audit_and_tracing_are_paths_beside_plain_passthrough(side_rows: SideRun) -> None:
    argv = "--only stdio-stdio --side-peers gateway,gateway-audit,gateway-trace --side-calls 6 --warmup 1"
    rows = side_rows(f"{argv} --stdio-sessions 1")
    assert [(r.pair, r.peer, r.failure, r.errors, r.calls) for r in rows] == [
        ("stdio-stdio", peer, None, 0, 6) for peer in ("gateway", "gateway-audit", "gateway-trace")
    ]
