"""Addresses as this machine reaches them (pure; the command line uses it without the server)."""

from __future__ import annotations


def local_name(host: str) -> str:
    """How this machine reaches a bound address: a wildcard bind through loopback (a Host the
    guard accepts by default), IPv6 in brackets."""
    if host in ("", "0.0.0.0"):
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host
