"""``CallSeries``: the last hour of calls, latencies, findings and server states, per minute.

Bounded and in memory: one bucket per minute and key (the whole gateway, each server, each
``server.tool``, each guardrail rule), only for minutes that saw something, and never more
than ``keep_minutes`` of them; at most ``max_tools`` tools are tracked one by one (the rest
still count in their server's and the gateway's figures). Latencies go into a histogram of
logarithmic bins (each 25 % wider than the last), so p50/p95 cost no sorting and no samples
are kept: a percentile reads as the upper edge of its bin, within 25 % of the true value.

Each replica keeps its own series: it counts the calls it relayed itself.
"""

from __future__ import annotations

import math
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from mcp_aggregator.audit.audit_entry import Outcome

WallClock = Callable[[], float]

MINUTE_SECS: Final = 60
KEEP_MINUTES: Final = 60
MAX_TOOLS: Final = 5000
_FLOOR_MS: Final = 0.1
_GROWTH: Final = 1.25
_LOG_GROWTH: Final = math.log(_GROWTH)
TRANSITIONS_KEPT: Final = 20
_TOP_BIN: Final = 80
"""0.1 ms x 1.25**80 is about 5.6 hours: every real call fits below it."""


def bin_of(ms: float) -> int:
    """The histogram bin of a duration (pure)."""
    if ms <= _FLOOR_MS:
        return 0
    return min(_TOP_BIN, int(math.log(ms / _FLOOR_MS) / _LOG_GROWTH) + 1)


def bin_upper_ms(index: int) -> float:
    """The upper edge of a bin, in milliseconds (pure)."""
    return _FLOOR_MS * _GROWTH**index


def percentile(bins: Mapping[int, int], fraction: float) -> float | None:
    """The ``fraction`` percentile (0 < fraction <= 1) of a histogram, as its bin's upper edge;
    None for an empty one (pure)."""
    total = sum(bins.values())
    if total == 0:
        return None
    rank = max(1, math.ceil(total * fraction))
    seen = 0
    for index in sorted(bins):
        seen += bins[index]
        if seen >= rank:
            return round(bin_upper_ms(index), 3)
    raise AssertionError("unreachable: the ranks add up to the total")


class _Minute:
    __slots__ = ("bins", "calls", "denied", "errors")

    def __init__(self) -> None:
        self.calls = 0
        self.errors = 0
        self.denied = 0
        self.bins: dict[int, int] = {}

    def add(self, outcome: Outcome, ms: float) -> None:
        self.calls += 1
        if outcome is Outcome.ERROR:
            self.errors += 1
        elif outcome is Outcome.DENIED:
            self.denied += 1
        index = bin_of(ms)
        self.bins[index] = self.bins.get(index, 0) + 1


class _Track:
    """One key's minutes, oldest first; a minute past the window is dropped when a new one opens."""

    __slots__ = ("minutes",)

    def __init__(self) -> None:
        self.minutes: dict[int, _Minute] = {}

    def at(self, minute: int, keep: int) -> _Minute:
        bucket = self.minutes.get(minute)
        if bucket is None:
            bucket = self.minutes[minute] = _Minute()
            oldest = minute - keep
            for stale in [m for m in self.minutes if m <= oldest]:
                del self.minutes[stale]
        return bucket


@dataclass(frozen=True, slots=True)
class SeriesWindow:
    """Which minutes a read covers: ``count`` of them, the last being ``last`` (minutes since the epoch)."""

    last: int
    count: int

    @property
    def first(self) -> int:
        return self.last - self.count + 1

    def index(self, minute: int) -> int | None:
        offset = minute - self.first
        return offset if 0 <= offset < self.count else None


class CallSeries:
    """Per-minute figures of the last ``keep_minutes``; ``record`` runs once per relayed call."""

    def __init__(
        self, *, clock: WallClock = time.time, keep_minutes: int = KEEP_MINUTES, max_tools: int = MAX_TOOLS
    ) -> None:
        self._clock = clock
        self.keep_minutes = keep_minutes
        self._max_tools = max_tools
        self._total = _Track()
        self._servers: dict[str, _Track] = {}
        self._tools: dict[tuple[str, str], _Track] = {}
        self._findings: dict[tuple[str, str], dict[int, int]] = {}
        """(rule, server) -> minute -> findings."""
        self._states: dict[int, Counter[str]] = {}
        """minute -> servers by state, as last seen in that minute."""
        self._transitions: dict[str, deque[dict[str, Any]]] = {}
        """server -> its last ``TRANSITIONS_KEPT`` state changes, oldest first."""

    def minute(self) -> int:
        return int(self._clock() // MINUTE_SECS)

    def record(self, server: str, tool: str, outcome: Outcome, ms: float) -> None:
        """One call's outcome and duration. Kept cheap: a clock read and a few dict lookups."""
        minute = int(self._clock() // MINUTE_SECS)
        keep = self.keep_minutes
        self._total.at(minute, keep).add(outcome, ms)
        track = self._servers.get(server)
        if track is None:
            track = self._servers[server] = _Track()
        track.at(minute, keep).add(outcome, ms)
        key = (server, tool)
        tool_track = self._tools.get(key)
        if tool_track is None:
            if len(self._tools) >= self._max_tools:
                return
            tool_track = self._tools[key] = _Track()
        tool_track.at(minute, keep).add(outcome, ms)

    def record_findings(self, server: str, rules: Iterable[str]) -> None:
        """Guardrail findings on one call (or one tool definition) of ``server``, one per rule."""
        minute = self.minute()
        for rule in rules:
            by_minute = self._findings.setdefault((rule, server), {})
            by_minute[minute] = by_minute.get(minute, 0) + 1
            for stale in [m for m in by_minute if m <= minute - self.keep_minutes]:
                del by_minute[stale]

    def record_states(self, states: Mapping[str, int]) -> None:
        """The servers by state now (called on every state change)."""
        minute = self.minute()
        self._states[minute] = Counter(states)
        for stale in [m for m in self._states if m <= minute - self.keep_minutes]:
            del self._states[stale]

    def record_transition(self, server: str, status: str, event: str, error: str | None) -> None:
        """One state change of ``server`` (``error`` already scrubbed of secrets)."""
        kept = self._transitions.get(server)
        if kept is None:
            kept = self._transitions[server] = deque(maxlen=TRANSITIONS_KEPT)
        kept.append({"time": round(self._clock(), 3), "status": status, "event": event, "error": error})

    def forget(self, server: str) -> None:
        """A removed server's figures (the gateway's totals keep its calls)."""
        self._servers.pop(server, None)
        self._transitions.pop(server, None)
        for key in [k for k in self._tools if k[0] == server]:
            del self._tools[key]

    def window(self, minutes: int) -> SeriesWindow:
        return SeriesWindow(self.minute(), max(1, min(minutes, self.keep_minutes)))

    def snapshot(self, minutes: int, *, server: str | None = None) -> dict[str, Any]:
        """The figures of the last ``minutes`` as JSON, each a list oldest first (zeros where
        nothing happened; a percentile is null for a minute without calls). With ``server``,
        that server's tools one by one as well."""
        window = self.window(minutes)
        out: dict[str, Any] = {
            "minute_secs": MINUTE_SECS,
            "start": window.first * MINUTE_SECS,
            "minutes": window.count,
            "total": _figures(self._total, window),
            "servers": {name: _figures(track, window) for name, track in sorted(self._servers.items())},
            "states": self._state_series(window),
            "findings": self._finding_series(window, server),
        }
        if server is not None:
            out["servers"] = {k: v for k, v in out["servers"].items() if k == server}
            out["tools"] = {
                tool: _figures(track, window) for (name, tool), track in sorted(self._tools.items()) if name == server
            }
            out["transitions"] = list(self._transitions.get(server, ()))
        return out

    def _state_series(self, window: SeriesWindow) -> dict[str, list[int]]:
        """Each state's count per minute; a minute without a change carries the one before."""
        before = [m for m in self._states if m < window.first]
        current: Counter[str] = self._states[max(before)] if before else Counter()
        names = sorted({state for counts in self._states.values() for state in counts})
        series: dict[str, list[int]] = {name: [] for name in names}
        for minute in range(window.first, window.last + 1):
            current = self._states.get(minute, current)
            for name in names:
                series[name].append(current.get(name, 0))
        return series

    def _finding_series(self, window: SeriesWindow, server: str | None) -> dict[str, Any]:
        total = [0] * window.count
        by_rule: dict[str, list[int]] = {}
        by_server: dict[str, list[int]] = {}
        for (rule, name), by_minute in sorted(self._findings.items()):
            if server is not None and name != server:
                continue
            for minute, count in by_minute.items():
                index = window.index(minute)
                if index is None:
                    continue
                total[index] += count
                by_rule.setdefault(rule, [0] * window.count)[index] += count
                by_server.setdefault(name, [0] * window.count)[index] += count
        return {"total": total, "by_rule": by_rule, "by_server": by_server}


def _figures(track: _Track, window: SeriesWindow) -> dict[str, list[Any]]:
    calls = [0] * window.count
    errors = [0] * window.count
    denied = [0] * window.count
    p50: list[float | None] = [None] * window.count
    p95: list[float | None] = [None] * window.count
    for minute, bucket in track.minutes.items():
        index = window.index(minute)
        if index is None:
            continue
        calls[index], errors[index], denied[index] = bucket.calls, bucket.errors, bucket.denied
        p50[index] = percentile(bucket.bins, 0.5)
        p95[index] = percentile(bucket.bins, 0.95)
    return {"calls": calls, "errors": errors, "denied": denied, "p50_ms": p50, "p95_ms": p95}
