"""Ports for processes a test starts, chosen so that nothing else takes them first."""

from __future__ import annotations

import random
import socket
from pathlib import Path

__all__ = ["free_port", "free_port_block"]

_HANDED_OUT: set[int] = set()


def _ephemeral_range() -> tuple[int, int]:
    try:
        low, high = Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()
        return int(low), int(high)
    except (OSError, ValueError):
        return 32768, 60999


def _bindable(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def free_port_block(count: int = 1) -> int:
    """A base port whose ``count`` consecutive ports are free now, below the ephemeral range.

    A replica binds its port seconds after this returns. A port from the kernel's ephemeral
    range (what ``bind(0)`` hands out) can meanwhile become the local end of some outgoing
    connection, a pooled PostgreSQL connection of the replica next door for instance; the
    replica then cannot bind it for as long as that connection lives and restarts in vain.
    Ports below the range are never handed out that way. Nor does this hand out a port twice
    in one test run: two asked for in a row are both still unbound.
    """
    low, _ = _ephemeral_range()
    floor = min(10000, max(1024, low - 4096))
    rng = random.Random()
    for _ in range(500):
        base = rng.randrange(floor, low - count)
        block = range(base, base + count)
        if _HANDED_OUT.isdisjoint(block) and all(_bindable(port) for port in block):
            _HANDED_OUT.update(block)
            return base
    raise RuntimeError(f"no block of {count} free ports between {floor} and {low}")


def free_port() -> int:
    return free_port_block(1)
