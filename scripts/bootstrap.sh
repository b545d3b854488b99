#!/usr/bin/env bash
# Idempotent set-up shared by run-demo.sh and run-tests.sh: a virtualenv with the
# project and its dev tools, and the npm upstream servers. Re-runs are no-ops unless
# pyproject.toml or upstreams/package-lock.json changed.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
    echo "bootstrap: creating .venv" >&2
    "$PYTHON" -m venv .venv
fi

py_stamp=".venv/.installed-$(sha256sum pyproject.toml | cut -c1-16)"
if [ ! -f "$py_stamp" ]; then
    echo "bootstrap: installing mcp-aggregator and its dev tools into .venv" >&2
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".[dev]"
    rm -f .venv/.installed-*
    touch "$py_stamp"
fi

npm_stamp="upstreams/node_modules/.installed-$(sha256sum upstreams/package-lock.json | cut -c1-16)"
if [ ! -f "$npm_stamp" ]; then
    echo "bootstrap: installing npm upstream servers into upstreams/node_modules" >&2
    (cd upstreams && npm ci --no-audit --no-fund --loglevel=error)
    touch "$npm_stamp"
fi

# HAProxy: the load balancer of deploy/ and of the replica tests (tests/replicas). Installed
# when missing and we may (root with apt, as on CI); otherwise those tests skip, outside CI.
if ! command -v haproxy >/dev/null && [ ! -x /usr/sbin/haproxy ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "bootstrap: installing haproxy" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq haproxy >/dev/null 2>&1 \
            || { apt-get update -qq >/dev/null && apt-get install -y -qq haproxy >/dev/null; } \
            || echo "bootstrap: could not install haproxy; the balancer tests will skip" >&2
    else
        echo "bootstrap: haproxy is not installed (apt-get install haproxy as root); the balancer tests skip" >&2
    fi
fi

# Chromium: the browser the web page's tests drive (Playwright, tests/admin/test_page_browser.py).
# Installed when missing and we may (root with apt, as on CI); otherwise those tests skip, outside CI.
if ! command -v chromium >/dev/null && [ ! -x /usr/bin/chromium ]; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "bootstrap: installing chromium" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq chromium >/dev/null 2>&1 \
            || { apt-get update -qq >/dev/null && apt-get install -y -qq chromium >/dev/null; } \
            || echo "bootstrap: could not install chromium; the web page's browser tests will skip" >&2
    else
        echo "bootstrap: chromium is not installed (apt-get install chromium as root); the browser tests skip" >&2
    fi
fi

# bubblewrap, slirp4netns, nftables: the sandbox every stdio upstream runs in (sandbox/).
# Installed when missing and we may (root with apt, as on CI); without them servers start
# unsandboxed with a warning in their status, and the sandbox tests skip.
if ! command -v bwrap >/dev/null || ! command -v slirp4netns >/dev/null || { ! command -v nft >/dev/null && [ ! -x /usr/sbin/nft ]; }; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "bootstrap: installing bubblewrap, slirp4netns, nftables" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get install -y -qq bubblewrap slirp4netns nftables >/dev/null 2>&1 \
            || { apt-get update -qq >/dev/null && apt-get install -y -qq bubblewrap slirp4netns nftables >/dev/null; } \
            || echo "bootstrap: could not install the sandbox tools; stdio servers will run unsandboxed" >&2
    else
        echo "bootstrap: bubblewrap/slirp4netns/nftables missing (apt-get install them as root); stdio servers run unsandboxed" >&2
    fi
fi
