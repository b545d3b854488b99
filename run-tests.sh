#!/usr/bin/env bash
# Command 2 of the README: set everything up, then lint, type-check and run the whole
# test suite (against SQLite and the PostgreSQL on 127.0.0.1:5432).
set -euo pipefail
cd "$(dirname "$0")"
./scripts/bootstrap.sh
# npm servers after the system PATH: upstreams/node_modules/.bin also holds the Node 22 binary
# the conformance suite needs, which must not replace the system node for everything else.
export PATH="$PWD/.venv/bin:$PATH:$PWD/upstreams/node_modules/.bin"
export HF_HUB_OFFLINE=1
echo "== ruff" >&2
ruff check src tests bench
echo "== mypy (strict)" >&2
mypy
echo "== pytest" >&2
exec pytest "$@"
