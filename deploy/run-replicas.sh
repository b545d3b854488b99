#!/usr/bin/env bash
# N mcp-aggregator replicas on one host behind HAProxy, sharing the local PostgreSQL.
#
#   deploy/run-replicas.sh [N]            (default 3; Ctrl-C stops everything)
#
# Environment:
#   MCP_PG_URL      registry database (default postgresql+asyncpg://postgres@127.0.0.1:5432/test)
#   MCP_PG_SCHEMA   its schema (default mcp)
#   CONFIG          your own config file instead of the generated one (it must use PostgreSQL)
#   FRONT_PORT      the balancer (default 8800); replicas listen on FRONT_PORT+1 .. FRONT_PORT+N
#   STATS_PORT      HAProxy's stats page (default 8899)
#   ADMIN_TOKEN     the admin API token (default: a random one, printed)
set -euo pipefail
cd "$(dirname "$0")/.."

workers="${1:-3}"
front="${FRONT_PORT:-8800}"
stats="${STATS_PORT:-8899}"
base=$((front + 1))
run_dir="$(mktemp -d "${TMPDIR:-/tmp}/mcp-replicas.XXXXXX")"
pids=()
stop() {
    trap - INT TERM EXIT
    for pid in "${pids[@]}"; do kill -TERM "$pid" 2>/dev/null || true; done
    wait || true
    rm -rf "$run_dir"
}
trap stop INT TERM EXIT
python="${PYTHON:-.venv/bin/python}"
[ -x "$python" ] || python=python3

if ! command -v haproxy >/dev/null; then
    echo "run-replicas: haproxy is not installed (apt-get install -y haproxy, or scripts/bootstrap.sh as root)" >&2
    exit 2
fi

config="${CONFIG:-}"
if [ -z "$config" ]; then
    token="${ADMIN_TOKEN:-$("$python" -c 'import secrets; print(secrets.token_urlsafe(24))')}"
    config="$run_dir/config.yaml"
    cat >"$config" <<YAML
registry:
  database_url: ${MCP_PG_URL:-postgresql+asyncpg://postgres@127.0.0.1:5432/test}
  pg_schema: ${MCP_PG_SCHEMA:-mcp}
serve:
  host: 127.0.0.1
  admin_token: "$token"
  data_dir: $run_dir/data
YAML
    echo "run-replicas: admin token: $token" >&2
fi

addresses=()
for ((i = 0; i < workers; i++)); do addresses+=("127.0.0.1:$((base + i))"); done
"$python" -m mcp_aggregator.replicas.haproxy_config deploy/haproxy.cfg.template \
    --port "$front" --stats-port "$stats" "${addresses[@]}" >"$run_dir/haproxy.cfg"
haproxy -c -q -f "$run_dir/haproxy.cfg" || { haproxy -c -f "$run_dir/haproxy.cfg"; exit 2; }

"$python" -m mcp_aggregator serve --config "$config" --port "$base" --workers "$workers" &
pids+=($!)
haproxy -db -f "$run_dir/haproxy.cfg" &
pids+=($!)

echo "run-replicas: $workers replicas on 127.0.0.1:$base..$((base + workers - 1))" >&2
echo "run-replicas: MCP endpoint http://127.0.0.1:$front/mcp   HAProxy stats http://127.0.0.1:$stats/" >&2
wait -n "${pids[@]}"
