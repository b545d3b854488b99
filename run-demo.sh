#!/usr/bin/env bash
# Command 1 of the README: set everything up, then run the gateway on the embedded
# defaults (SQLite registry, local embedding model) with real upstream MCP servers.
set -euo pipefail
cd "$(dirname "$0")"
./scripts/bootstrap.sh
export PATH="$PWD/upstreams/node_modules/.bin:$PWD/.venv/bin:$PATH"
mkdir -p .aggregator
exec mcp-aggregator serve --config demo/aggregator.yaml "$@"
