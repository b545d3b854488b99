#!/usr/bin/env bash
# Command 1 of the README: set everything up, then run the gateway on the embedded
# defaults (SQLite registry, local embedding model) with real upstream MCP servers.
set -euo pipefail
cd "$(dirname "$0")"
./scripts/bootstrap.sh
# npm servers after the system PATH: upstreams/node_modules/.bin also holds the Node 22 binary
# the conformance suite needs, which must not replace the system node for everything else.
export PATH="$PWD/.venv/bin:$PATH:$PWD/upstreams/node_modules/.bin"
mkdir -p .aggregator/memory  # memory: the one folder its sandbox may write
exec mcp-aggregator serve --config demo/aggregator.yaml "$@"
