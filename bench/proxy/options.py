"""The bench's command line."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from .paths import PAIRS, PEERS, Pair
from .procs import BENCH

PARTS = ("main", "side", "large", "idle")
SIDE_PEERS = ("direct", "relay", "gateway")
SIDE_METHODS = ("tools/call", "prompts/get", "resources/read")


@dataclass(frozen=True)
class Options:
    pairs: tuple[str, ...]
    peers: tuple[str, ...]
    concurrency: tuple[int, ...]
    calls: int
    warmup: int
    row_seconds: float
    stdio_sessions: int
    """A stdio session is a whole proxy (and upstream) process: at most this many per path."""
    large_mb: tuple[int, ...]
    large_timeout: float
    idle_sessions: int
    parts: tuple[str, ...]
    profile: bool
    json_path: Path
    era: str = "2026-07-28"
    """The protocol era of the main rows' client sessions (a handshake-era client: Claude Desktop)."""
    rounds: int = 1
    side_peers: tuple[str, ...] = SIDE_PEERS
    """The paths whose c=1 calls the side-by-side part interleaves."""
    side_calls: int = 2000
    side_seconds: float = 60.0
    side_method: str = "tools/call"
    """What the side part's calls are: the echo tool, the echo prompt, or a read of ``echo://static``."""


def _ints(text: str, name: str) -> tuple[int, ...]:
    try:
        values = tuple(int(part) for part in text.split(",") if part.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"{name}: expected comma-separated integers, got {text!r}") from None
    if not values or any(value < 1 for value in values):
        raise argparse.ArgumentTypeError(f"{name}: expected positive integers, got {text!r}")
    return values


def _subset(text: str, allowed: Sequence[str], name: str) -> tuple[str, ...]:
    values = tuple(part.strip() for part in text.split(",") if part.strip())
    unknown = [value for value in values if value not in allowed]
    if unknown or not values:
        raise argparse.ArgumentTypeError(f"{name}: unknown {unknown or text!r}; choose from {','.join(allowed)}")
    return values


def parse_options(argv: Sequence[str] | None = None, description: str = "") -> Options:
    parser = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="small counts: a smoke run of about two minutes")
    parser.add_argument("--only", help=f"transport pairs, client-upstream (default all: {','.join(PAIRS)})")
    parser.add_argument("--peers", help=f"paths to measure (default all: {','.join(PEERS)})")
    parser.add_argument("--concurrency", help="sessions per row, comma list (default 1,32,256; --quick 1,8)")
    parser.add_argument("--calls", type=int, help="measured calls per row (default 1000; --quick 60)")
    parser.add_argument("--warmup", type=int, help="unmeasured calls before each row (default 100; --quick 10)")
    parser.add_argument("--row-seconds", type=float, help="time cap per row (default 10; --quick 2)")
    parser.add_argument("--stdio-sessions", type=int, help="stdio client processes per path (default 8; --quick 2)")
    parser.add_argument("--large-mb", help="result sizes in MB (default 1,5,20,50; --quick 1)")
    parser.add_argument("--large-timeout", type=float, help="seconds per large call (default 60; --quick 20)")
    parser.add_argument("--idle-sessions", type=int, help="sessions held open per era (default 1000; --quick 50)")
    parser.add_argument(
        "--side-peers", help=f"paths interleaved at c=1 in the side part (default {','.join(SIDE_PEERS)})"
    )
    parser.add_argument("--side-calls", type=int, help="rounds of the side part, one call per path (default 2000)")
    parser.add_argument("--side-seconds", type=float, help="time cap of the side part per pair (default 60)")
    parser.add_argument(
        "--side-method",
        choices=SIDE_METHODS,
        default="tools/call",
        help="the request the side part times (default tools/call)",
    )
    parser.add_argument("--parts", default=",".join(PARTS), help=f"subset of {','.join(PARTS)}")
    parser.add_argument("--profile", action="store_true", help="py-spy the gateway at http-http c=1")
    parser.add_argument(
        "--era",
        choices=("2026-07-28", "2025-11-25"),
        default="2026-07-28",
        help="protocol era of the clients in the main rows (default 2026-07-28)",
    )
    parser.add_argument(
        "--rounds",
        type=int,
        default=1,
        help="run the main table this many times, every path in turn each time; each cell shows its median "
        "round (ratios against the same round's direct row)",
    )
    parser.add_argument("--json", type=Path, default=BENCH / "results" / "proxy.json", help="where results go")
    args = parser.parse_args(argv)
    quick = bool(args.quick)
    try:
        pairs = _subset(args.only or ",".join(PAIRS), PAIRS, "--only")
        for pair in pairs:
            Pair.parse(pair)
        options = Options(
            pairs=pairs,
            peers=_subset(args.peers or ",".join(PEERS), PEERS, "--peers"),
            concurrency=_ints(args.concurrency or ("1,8" if quick else "1,32,256"), "--concurrency"),
            calls=args.calls or (60 if quick else 1000),
            warmup=args.warmup if args.warmup is not None else (10 if quick else 100),
            row_seconds=args.row_seconds or (2.0 if quick else 10.0),
            stdio_sessions=args.stdio_sessions or (2 if quick else 8),
            large_mb=_ints(args.large_mb or ("1" if quick else "1,5,20,50"), "--large-mb"),
            large_timeout=args.large_timeout or (20.0 if quick else 60.0),
            idle_sessions=args.idle_sessions or (50 if quick else 1000),
            parts=_subset(args.parts, PARTS, "--parts"),
            profile=bool(args.profile),
            json_path=args.json,
            era=args.era,
            rounds=max(1, args.rounds),
            side_peers=_subset(args.side_peers or ",".join(SIDE_PEERS), PEERS, "--side-peers"),
            side_calls=args.side_calls or (100 if quick else 2000),
            side_seconds=args.side_seconds or (10.0 if quick else 60.0),
            side_method=args.side_method,
        )
    except (argparse.ArgumentTypeError, ValueError) as exc:
        parser.error(str(exc))
    return options
