"""Rendering the shipped HAProxy template: one checked server per replica, bad input named."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mcp_aggregator.errors import ConfigError
from mcp_aggregator.replicas.haproxy_config import render_haproxy_config
from tests.replicas.balancer import TEMPLATE, haproxy_or_skip


def test_the_template_renders_to_a_config_haproxy_accepts(tmp_path: Path) -> None:
    rendered = render_haproxy_config(
        TEMPLATE.read_text(), port=18800, stats_port=18899, replicas=["127.0.0.1:18801", "127.0.0.1:18802"]
    )
    assert "    server r1 127.0.0.1:18801 check\n    server r2 127.0.0.1:18802 check\n" in rendered
    assert "bind 127.0.0.1:18800" in rendered and "bind 127.0.0.1:18899" in rendered
    assert "stick on req.hdr(mcp-session-id)" in rendered and "@" not in rendered
    config = tmp_path / "haproxy.cfg"
    config.write_text(rendered)
    check = subprocess.run([haproxy_or_skip(), "-c", "-f", str(config)], capture_output=True, text=True, check=False)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize(
    ("template", "replicas", "message"),
    [
        ("@FRONTEND_PORT@ @STATS_PORT@\n@SERVERS@\n", [], "replicas: at least one replica address is needed"),
        ("@FRONTEND_PORT@ @STATS_PORT@\n@SERVERS@\n", ["localhost"], "replicas: must be host:port, got 'localhost'"),
        ("@FRONTEND_PORT@\n@SERVERS@\n", ["127.0.0.1:1"], "template: the template lacks @STATS_PORT@"),
    ],
)
def test_bad_input_is_refused_naming_the_field(template: str, replicas: list[str], message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        render_haproxy_config(template, port=1, stats_port=2, replicas=replicas)
    assert str(refused.value) == message
