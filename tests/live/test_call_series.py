"""``CallSeries``: per-minute figures on a fake clock."""

from __future__ import annotations

import pytest

from mcp_aggregator.audit import Outcome
from mcp_aggregator.live.call_series import CallSeries, bin_of, bin_upper_ms, percentile


class FakeClock:
    def __init__(self, now: float = 600_000.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("ms", [0.05, 0.1, 0.5, 1.0, 7.3, 120.0, 2_500.0, 60_000.0])
def test_a_duration_falls_in_a_bin_whose_upper_edge_is_within_a_quarter_above_it(ms: float) -> None:
    upper = bin_upper_ms(bin_of(ms))
    assert ms <= upper <= max(ms, 0.1) * 1.25 + 1e-9


def test_percentiles_read_the_bins_in_order_and_an_empty_histogram_has_none() -> None:
    bins = {bin_of(1.0): 90, bin_of(100.0): 10}
    assert percentile(bins, 0.5) == pytest.approx(bin_upper_ms(bin_of(1.0)), rel=1e-3)
    assert percentile(bins, 0.95) == pytest.approx(bin_upper_ms(bin_of(100.0)), rel=1e-3)
    assert percentile({}, 0.5) is None


def test_calls_are_counted_per_minute_for_the_gateway_its_servers_and_their_tools() -> None:
    clock = FakeClock()
    series = CallSeries(clock=clock)
    series.record("alpha", "echo", Outcome.OK, 2.0)
    series.record("alpha", "echo", Outcome.ERROR, 4.0)
    clock.now += 60
    series.record("alpha", "add", Outcome.DENIED, 1.0)
    series.record("beta", "echo", Outcome.OK, 3.0)
    snap = series.snapshot(3, server="alpha")
    assert snap["minutes"] == 3
    assert snap["total"]["calls"] == [0, 2, 2]
    assert snap["total"]["errors"] == [0, 1, 0]
    assert snap["total"]["denied"] == [0, 0, 1]
    assert list(snap["servers"]) == ["alpha"]
    assert snap["servers"]["alpha"]["calls"] == [0, 2, 1]
    assert snap["tools"]["echo"]["calls"] == [0, 2, 0]
    assert snap["tools"]["add"]["calls"] == [0, 0, 1]
    assert snap["total"]["p50_ms"][0] is None
    assert snap["total"]["p95_ms"][1] == pytest.approx(bin_upper_ms(bin_of(4.0)), rel=1e-3)
    assert "tools" not in series.snapshot(3)


def test_minutes_older_than_the_window_are_dropped_and_the_window_is_capped() -> None:
    clock = FakeClock()
    series = CallSeries(clock=clock, keep_minutes=5)
    series.record("alpha", "echo", Outcome.OK, 1.0)
    clock.now += 10 * 60
    series.record("alpha", "echo", Outcome.OK, 1.0)
    snap = series.snapshot(60)
    assert snap["minutes"] == 5
    assert snap["total"]["calls"] == [0, 0, 0, 0, 1]
    assert len(series._servers["alpha"].minutes) == 1


def test_tools_past_the_cap_still_count_for_their_server() -> None:
    series = CallSeries(clock=FakeClock(), max_tools=1)
    series.record("alpha", "one", Outcome.OK, 1.0)
    series.record("alpha", "two", Outcome.OK, 1.0)
    snap = series.snapshot(1, server="alpha")
    assert list(snap["tools"]) == ["one"]
    assert snap["servers"]["alpha"]["calls"] == [2]


def test_server_states_carry_forward_through_minutes_without_a_change() -> None:
    clock = FakeClock()
    series = CallSeries(clock=clock)
    series.record_states({"CONNECTED": 2})
    clock.now += 120
    series.record_states({"CONNECTED": 1, "ERROR": 1})
    clock.now += 60
    states = series.snapshot(4)["states"]
    assert states == {"CONNECTED": [2, 2, 1, 1], "ERROR": [0, 0, 1, 1]}


def test_findings_are_counted_by_rule_and_by_server() -> None:
    series = CallSeries(clock=FakeClock())
    series.record_findings("alpha", ["secrets", "pii"])
    series.record_findings("beta", ["secrets"])
    findings = series.snapshot(1)["findings"]
    assert findings == {"total": [3], "by_rule": {"pii": [1], "secrets": [2]}, "by_server": {"alpha": [2], "beta": [1]}}
    assert series.snapshot(1, server="beta")["findings"]["total"] == [1]


def test_a_forgotten_server_leaves_its_calls_in_the_total_only() -> None:
    series = CallSeries(clock=FakeClock())
    series.record("alpha", "echo", Outcome.OK, 1.0)
    series.forget("alpha")
    snap = series.snapshot(1)
    assert snap["servers"] == {}
    assert snap["total"]["calls"] == [1]


def test_a_servers_last_state_changes_are_kept_twenty_deep_and_shown_with_its_figures() -> None:
    clock = FakeClock()
    series = CallSeries(clock=clock)
    for n in range(25):
        clock.now += 1
        series.record_transition("alpha", "ERROR" if n % 2 else "CONNECTED", "health_error", f"failure {n}")
    transitions = series.snapshot(1, server="alpha")["transitions"]
    assert len(transitions) == 20
    assert transitions[-1] == {"time": clock.now, "status": "CONNECTED", "event": "health_error", "error": "failure 24"}
    assert series.snapshot(1, server="beta")["transitions"] == []
