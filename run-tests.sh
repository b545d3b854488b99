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
# Byte-compile the project's modules before the workers start. Where PYTHONDONTWRITEBYTECODE
# is set no process writes a .pyc, so every gateway, CLI, bench and upstream fixture process the
# tests start would compile what it imports from source each time (0.34 s of CPU for a gateway);
# compiled once here, the two workers never race to write one. bench/'s own venvs are skipped.
python -m compileall -q -j 0 -x '/\.venv' src tests bench scripts
# Two workers, each test file on one of them (its module fixtures and order kept). Each worker
# has its own ports (tests/ports.py), data dir (tests/conftest.py's settings_for), model cache
# and PostgreSQL schemas; `-n 0` after these runs everything in one process. The files go out in
# collection order, which tests/file_order.py makes longest first.
exec pytest -n 2 --dist loadfile --no-loadscope-reorder "$@"
