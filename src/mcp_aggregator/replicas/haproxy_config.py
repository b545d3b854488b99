"""Rendering ``deploy/haproxy.cfg.template`` for a given set of replicas.

    python -m mcp_aggregator.replicas.haproxy_config deploy/haproxy.cfg.template \\
        --port 8800 --stats-port 8899 127.0.0.1:8801 127.0.0.1:8802
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from mcp_aggregator.errors import ConfigError

_ADDRESS = re.compile(r"^[A-Za-z0-9.\-]+:\d{1,5}$|^\[[0-9a-fA-F:]+\]:\d{1,5}$")
_PLACEHOLDERS = ("@FRONTEND_PORT@", "@STATS_PORT@", "@SERVERS@")


def render_haproxy_config(template: str, *, port: int, stats_port: int, replicas: Sequence[str]) -> str:
    """The template with its placeholders filled: one health-checked ``server`` line per replica.

    Raises:
        ConfigError: no replicas, a replica that is not ``host:port``, or a template
            missing a placeholder.
    """
    if not replicas:
        raise ConfigError("at least one replica address is needed", path="replicas")
    for address in replicas:
        if not _ADDRESS.match(address):
            raise ConfigError(f"must be host:port, got {address!r}", path="replicas")
    for placeholder in _PLACEHOLDERS:
        if placeholder not in template:
            raise ConfigError(f"the template lacks {placeholder}", path="template")
    servers = [f"    server r{i} {address} check" for i, address in enumerate(replicas, start=1)]
    lines = []
    for line in template.splitlines():
        if line.strip() == "@SERVERS@":
            lines.extend(servers)
        else:
            lines.append(line.replace("@FRONTEND_PORT@", str(port)).replace("@STATS_PORT@", str(stats_port)))
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Render the HAProxy config for mcp-aggregator replicas.")
    parser.add_argument("template", type=Path)
    parser.add_argument("--port", type=int, required=True, help="The balancer's port.")
    parser.add_argument("--stats-port", type=int, required=True, help="The HAProxy stats page's port.")
    parser.add_argument("replicas", nargs="+", help="host:port of each replica")
    args = parser.parse_args(argv)
    try:
        sys.stdout.write(
            render_haproxy_config(
                args.template.read_text(), port=args.port, stats_port=args.stats_port, replicas=args.replicas
            )
        )
    except ConfigError as exc:
        parser.error(str(exc))


if __name__ == "__main__":
    main()
