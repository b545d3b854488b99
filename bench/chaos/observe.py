"""What the chaos bench records while faults happen: every call's outcome, the status the
admin API reports, the gateway's memory; and the pure reading of them into one row per fault."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


def now() -> float:
    return time.monotonic()


@dataclass(frozen=True, slots=True)
class Call:
    upstream: str
    era: str
    started: float
    ended: float
    ok: bool
    error: str = ""


@dataclass(frozen=True, slots=True)
class StatusSample:
    at: float
    statuses: dict[str, Any]
    """Server name -> its status (or its ``consecutive_failures``) as the gateway said."""


@dataclass
class Record:
    calls: list[Call] = field(default_factory=list)
    samples: list[StatusSample] = field(default_factory=list)
    failures: list[StatusSample] = field(default_factory=list)


def rss_kb(pid: int) -> int | None:
    """The resident set of ``pid`` in KiB (None once it is gone)."""
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    except OSError:
        return None
    return None


@dataclass(frozen=True)
class FaultWindow:
    """One fault: what was hit, when it began, when the upstream could serve again, when observation ended."""

    fault: str
    upstream: str
    began: float
    back: float
    """Killed stdio: the kill itself (it restarts at once); HTTP: listening again; hung: resumed."""
    ended: float
    rss_before_kb: int | None
    rss_after_kb: int | None
    note: str = ""


def fault_row(window: FaultWindow, record: Record) -> dict[str, Any]:
    """Failed calls per era, time to first error, status timeline and recovery of one fault."""
    calls = [
        c for c in record.calls if window.began <= c.ended <= window.ended or window.began <= c.started <= window.ended
    ]
    hit = [c for c in calls if c.upstream == window.upstream]
    others = [c for c in calls if c.upstream != window.upstream]
    failed = [c for c in hit if not c.ok]
    first_error = min((c.ended for c in failed), default=None)
    last_failure_start = max((c.started for c in failed), default=None)
    recovered_at = None
    if last_failure_start is None:
        recovered_at = window.back
    else:
        after = [c.ended for c in hit if c.ok and c.started > last_failure_start]
        recovered_at = min(after, default=None)
    eras = sorted({c.era for c in hit})
    timeline, left_connected = status_timeline(record.samples, window)
    return {
        "fault": window.fault,
        "upstream": window.upstream,
        "calls": len(hit),
        "failed": {era: sum(1 for c in failed if c.era == era) for era in eras},
        "failed_other_upstreams": sum(1 for c in others if not c.ok),
        "calls_other_upstreams": len(others),
        "first_error_s": _rel(first_error, window.began),
        "status_left_connected_s": left_connected,
        "recovery_s": None if recovered_at is None else round(max(0.0, recovered_at - window.back), 3),
        "outage_s": round(window.back - window.began, 3),
        "timeline": timeline,
        "max_consecutive_failures": max(
            (s.statuses.get(window.upstream, 0) for s in record.failures if window.began <= s.at <= window.ended),
            default=None,
        ),
        "rss_before_mb": _mb(window.rss_before_kb),
        "rss_after_mb": _mb(window.rss_after_kb),
        "errors_seen": sorted({c.error for c in failed})[:4],
        "note": window.note,
    }


def status_timeline(samples: list[StatusSample], window: FaultWindow) -> tuple[list[str], float | None]:
    """The upstream's status changes during the window (``STATUS@+s`` from the fault's start),
    and how long after the start it first was not CONNECTED."""
    changes: list[str] = []
    last = None
    left = None
    for sample in samples:
        if not window.began - 0.5 <= sample.at <= window.ended:
            continue
        status = sample.statuses.get(window.upstream, "?")
        if status != last:
            changes.append(f"{status}@{sample.at - window.began:+.2f}")
            last = status
        if left is None and sample.at >= window.began and status != "CONNECTED":
            left = round(sample.at - window.began, 3)
    return changes, left


def _rel(at: float | None, start: float) -> float | None:
    return None if at is None else round(at - start, 3)


def _mb(kb: int | None) -> float | None:
    return None if kb is None else round(kb / 1024, 1)
