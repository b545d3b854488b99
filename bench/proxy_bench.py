"""Tool calls direct vs through the gateway vs through peer proxies, in one run.

Usage::

    .venv/bin/python bench/proxy_bench.py [--quick] [--only http-http,stdio-stdio]
        [--concurrency 1,32,256] [--calls N] [--json bench/results/proxy.json] [--profile]

Paths, for each transport pair (client side -> upstream side: http-http, stdio-http,
http-stdio, stdio-stdio), against an echo upstream (``bench/echo_server.py``):

- ``direct``: the client talks to the upstream itself, over the upstream's transport.
- ``gateway``: ``python -m mcp_aggregator serve --exposure passthrough`` (this checkout's
  ``src``), with ``serve.fast_path: true`` when that setting exists.
- ``gateway (full pipeline)``: the same with ``serve.fast_path: false`` (n/a without it).
- ``gateway, profile + policy`` (``gateway-profile``): the same gateway with a profile holding
  the echo tool and one CEL policy rule, the client on the profile's endpoint
  (``/mcp/bench``, or ``serve --transport stdio --profile bench``): every call passes the
  rule. Compare it with ``gateway`` in one run, e.g. ``--side-peers gateway,gateway-profile``.
- ``gateway + audit`` (``gateway-audit``) and ``gateway + tracing (OTLP)`` (``gateway-trace``):
  the plain ``gateway`` runs with ``audit.enabled: false``; these run the same with the audit
  trail on, or with OpenTelemetry tracing exported over OTLP/HTTP to ``bench/otlp_sink.py``
  (e.g. ``--side-peers direct,gateway,gateway-audit,gateway-trace``).
- ``FastMCP proxy``: ``create_proxy(upstream, mode="auto")`` from ``fastmcp==4.1.2`` in
  ``bench/.venv-fastmcp`` (it patches ``mcp_types``: never in the gateway's process).
- ``mcp-proxy``: sparfenyuk's ``mcp-proxy==0.13.0`` in ``bench/.venv-mcp-proxy``; it bridges
  stdio->HTTP and HTTP->stdio only.

Each row: concurrency c is c workers making sequential calls with the official SDK client,
one session each over HTTP; over stdio a session is a whole process, so at most
``--stdio-sessions`` of them share the workers. Reported: p50/p95/p99, calls/s, throughput %
and added p50 vs direct, the proxy's CPU ms per call (the proxy process and its children,
the echo upstream excluded) and peak RSS. Then one ``blob`` call of 1/5/20/50 MB directly and
through the gateway, and 1,000 sessions of each protocol era held open against the gateway,
one call each. Virtualenvs for the peers are made on first use.
"""

import sys
from pathlib import Path

# Ports come from the tests' helper (tests/ports.py); this script runs from a checkout.
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from proxy.runner import main

if __name__ == "__main__":
    sys.exit(main(description=__doc__ or ""))
