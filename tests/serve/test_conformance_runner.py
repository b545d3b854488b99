"""Reading the conformance suite's results: its summary lines and the checks it saved per scenario."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.serve.conformance_runner import ScenarioResult, parse_results, passed, regressions

SUMMARY = """
=== SUMMARY ===
✓ ping: 1 passed, 0 failed
✗ tools-call-simple-text: 0 passed, 1 failed
✓ server-sse-polling: 0 passed, 0 failed
✗ resources-list: 0 passed, 1 failed

Total: 1 passed, 2 failed
"""


def _save(output: Path, scenario: str, checks: list[dict[str, Any]]) -> None:
    directory = output / f"server-{scenario}-2026-11-22T13-30-14-808Z"
    directory.mkdir(parents=True)
    (directory / "checks.json").write_text(json.dumps(checks))


def test_results_carry_failures_and_warnings_from_the_saved_checks(tmp_path: Path) -> None:
    _save(tmp_path, "ping", [{"id": "ping", "name": "Ping", "status": "SUCCESS"}])
    _save(tmp_path, "tools-call-simple-text", [
        {"id": "t", "name": "ToolsCallSimpleText", "status": "FAILURE",
         "errorMessage": "Failed: -32602 Tool not found"},
    ])  # fmt: skip
    _save(tmp_path, "server-sse-polling", [
        {"id": "p", "name": "ServerSendsRetryField", "status": "WARNING", "errorMessage": "no retry field"},
        {"id": "i", "name": "IncomingSseEvent", "status": "INFO", "description": "event"},
    ])  # fmt: skip

    results = parse_results(SUMMARY, tmp_path)

    assert results["ping"] == ScenarioResult("ping", passed=True)
    assert results["tools-call-simple-text"] == ScenarioResult(
        "tools-call-simple-text", passed=False, failures=("ToolsCallSimpleText: Failed: -32602 Tool not found",)
    )
    assert results["server-sse-polling"] == ScenarioResult(
        "server-sse-polling", passed=True, warnings=("ServerSendsRetryField: no retry field",)
    )
    assert passed(results) == {"ping", "server-sse-polling"}


def test_a_scenario_that_crashed_before_saving_checks_fails_with_a_pointer_to_the_output(tmp_path: Path) -> None:
    results = parse_results(SUMMARY, tmp_path / "never-written")

    assert not results["resources-list"].passed
    assert results["resources-list"].failures == (
        "failed without saved checks; see the suite's output for resources-list",
    )


def test_regressions_name_each_lost_scenario_with_its_messages() -> None:
    baseline = {
        "ping": ScenarioResult("ping", passed=True),
        "tools-list": ScenarioResult("tools-list", passed=True),
        "prompts-list": ScenarioResult("prompts-list", passed=False, failures=("broken alone too",)),
    }
    measured = {
        "ping": ScenarioResult("ping", passed=False, failures=("Ping: Failed: timeout",)),
        "prompts-list": ScenarioResult("prompts-list", passed=False, failures=("still broken",)),
    }

    assert regressions(baseline, measured) == (
        "ping: FAILED\n    failure: Ping: Failed: timeout\ntools-list: FAILED\n    failure: not run"
    )
    assert regressions(baseline, baseline) == ""
