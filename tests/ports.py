"""Ports for processes a test starts, chosen so that nothing else takes them first."""

from __future__ import annotations

import os
import random
import re
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


def _worker_share(floor: int, ceiling: int) -> tuple[int, int]:
    """This process's part of ``[floor, ceiling)``: under pytest-xdist each worker picks from
    its own slice, so two workers cannot hand out the same port between check and bind."""
    worker = re.fullmatch(r"gw(\d+)", os.environ.get("PYTEST_XDIST_WORKER", ""))
    count = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1") or 1)
    if worker is None or count <= 1:
        return floor, ceiling
    index = int(worker.group(1)) % count
    width = (ceiling - floor) // count
    return floor + index * width, floor + (index + 1) * width


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
    floor, ceiling = _worker_share(min(10000, max(1024, low - 4096)), low)
    rng = random.Random()
    for _ in range(500):
        base = rng.randrange(floor, ceiling - count)
        block = range(base, base + count)
        if _HANDED_OUT.isdisjoint(block) and all(_bindable(port) for port in block):
            _HANDED_OUT.update(block)
            return base
    raise RuntimeError(f"no block of {count} free ports between {floor} and {ceiling}")


def free_port() -> int:
    return free_port_block(1)
