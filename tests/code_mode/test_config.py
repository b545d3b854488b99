"""``code_mode`` settings: every bad value is refused with its field named."""

from __future__ import annotations

import pytest

from mcp_aggregator.code_mode.config import DEFAULT_MODULES
from mcp_aggregator.errors import ConfigError
from mcp_aggregator.settings import Exposure, parse_settings


def test_defaults_and_the_code_exposure_parse() -> None:
    settings = parse_settings("serve: {exposure: code}\ncode_mode: {limits: {tool_calls: 10}}")
    assert settings.serve.exposure is Exposure.CODE
    assert settings.code_mode.limits.tool_calls == 10
    assert settings.code_mode.allowed_modules == DEFAULT_MODULES
    assert "os" not in DEFAULT_MODULES and "json" in DEFAULT_MODULES


@pytest.mark.parametrize(
    ("yaml", "field", "reason"),
    [
        ("code_mode: {limits: {tool_calls: 0}}", "code_mode.limits.tool_calls", "greater than or equal to 1"),
        ("code_mode: {limits: {timeout_secs: 0}}", "code_mode.limits.timeout_secs", "greater than 0"),
        ("code_mode: {limits: {cpu_secs: -1}}", "code_mode.limits.cpu_secs", "greater than 0"),
        ("code_mode: {limits: {memory_bytes: 10}}", "code_mode.limits.memory_bytes", "greater than or equal to"),
        ("code_mode: {limits: {recursion_depth: 1}}", "code_mode.limits.recursion_depth", "greater than or equal"),
        ("code_mode: {limits: {output_bytes: 1}}", "code_mode.limits.output_bytes", "greater than or equal"),
        ("code_mode: {limits: {result_chars: 1}}", "code_mode.limits.result_chars", "greater than or equal"),
        ("code_mode: {limits: {steps: 5}}", "code_mode.limits.steps", "unknown field"),
        ("code_mode: {workers: 0}", "code_mode.workers", "greater than or equal to 1"),
        ("code_mode: {queue_wait_secs: 0}", "code_mode.queue_wait_secs", "greater than 0"),
        (
            "code_mode: {allowed_modules: [json, subprocess]}",
            "code_mode.allowed_modules",
            "[1]: 'subprocess' is not a module the sandbox has",
        ),
        ("serve: {exposure: scripts}", "serve.exposure", "'facades', 'passthrough', 'search' or 'code'"),
    ],
)
def test_a_bad_value_names_its_field(yaml: str, field: str, reason: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_settings(yaml)
    assert field in str(refused.value)
    assert reason in str(refused.value)
