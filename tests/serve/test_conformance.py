"""The official MCP conformance suite, run against our fixture upstream alone and through the gateway.

The gateway in ``passthrough`` exposure with the fixture as its only upstream must be
indistinguishable from the fixture: every scenario the fixture passes alone passes through it,
whether the gateway reaches the fixture over streamable HTTP or over stdio.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from tests.serve import conformance_runner as runner
from tests.serve.conformance_runner import ScenarioResult

pytestmark = [pytest.mark.npm, pytest.mark.timeout(600)]

# Every server scenario of @modelcontextprotocol/conformance 0.1.16 (its "all" suite).
SCENARIOS = {
    "server-initialize", "logging-set-level", "ping", "completion-complete", "tools-list",
    "tools-call-simple-text", "tools-call-image", "tools-call-audio", "tools-call-embedded-resource",
    "tools-call-mixed-content", "tools-call-with-logging", "tools-call-error", "tools-call-with-progress",
    "tools-call-sampling", "tools-call-elicitation", "json-schema-2020-12", "elicitation-sep1034-defaults",
    "server-sse-polling", "server-sse-multiple-streams", "elicitation-sep1330-enums", "resources-list",
    "resources-read-text", "resources-read-binary", "resources-templates-read", "resources-subscribe",
    "resources-unsubscribe", "prompts-list", "prompts-get-simple", "prompts-get-with-args",
    "prompts-get-embedded-resource", "prompts-get-with-image", "dns-rebinding-protection",
}  # fmt: skip


def _require_suite() -> None:
    try:
        runner.require_suite()
    except runner.SuiteMissingError as exc:
        if os.environ.get("CI"):
            pytest.fail(str(exc))
        pytest.skip(str(exc))


async def _fixture_alone(tmp_path: Path) -> dict[str, ScenarioResult]:
    async with runner.fixture_http_server() as url:
        return await runner.run_suite(url, tmp_path / "direct")


async def _through_gateway(upstream: dict[str, Any], tmp_path: Path) -> dict[str, ScenarioResult]:
    async with runner.gateway_process(upstream, tmp_path / "gateway") as url:
        return await runner.run_suite(url, tmp_path / "via-gateway")


async def test_fixture_alone_passes_every_server_scenario_of_the_suite(tmp_path: Path) -> None:
    _require_suite()
    results = await _fixture_alone(tmp_path)
    assert set(results) == SCENARIOS
    failing = [result.describe() for result in results.values() if not result.passed]
    assert not failing, "\n".join(failing)


async def test_gateway_with_an_http_upstream_passes_every_scenario_the_fixture_passes(tmp_path: Path) -> None:
    _require_suite()
    baseline = await _fixture_alone(tmp_path)
    async with runner.fixture_http_server() as upstream_url:
        measured = await _through_gateway(runner.fixture_http_config(upstream_url), tmp_path)
    lost = runner.regressions(baseline, measured)
    assert not lost, f"through the gateway (upstream over streamable HTTP) these scenarios fail:\n{lost}"


async def test_gateway_with_a_stdio_upstream_passes_every_scenario_the_fixture_passes(tmp_path: Path) -> None:
    _require_suite()
    baseline = await _fixture_alone(tmp_path)
    measured = await _through_gateway(runner.fixture_stdio_config(), tmp_path)
    lost = runner.regressions(baseline, measured)
    assert not lost, f"through the gateway (upstream over stdio) these scenarios fail:\n{lost}"
