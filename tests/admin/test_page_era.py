"""The web page's era column, run in Node as the browser would."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from typing import Any

import pytest

from tests.conftest import REPO

PAGE = REPO / "src" / "mcp_aggregator" / "admin" / "static" / "index.html"


def era_text(era: dict[str, Any] | None) -> str:
    node = shutil.which("node")
    if node is None:
        pytest.skip("node is not installed")
    source = re.search(r"function eraText[\s\S]*?\n}\n", PAGE.read_text(encoding="utf-8"))
    assert source is not None, "the page defines eraText"
    script = f"{source.group(0)}\nprocess.stdout.write(JSON.stringify(eraText({json.dumps(era)})));"
    return str(json.loads(subprocess.run([node, "-e", script], capture_output=True, text=True, check=True).stdout))


@pytest.mark.parametrize(
    ("side", "shown"),
    [
        ({"state": "open", "protocol_version": "2025-11-25"}, "2026-07-28 + 2025-11-25 side session"),
        ({"state": "not opened yet"}, "2026-07-28 (side session: not opened yet)"),
        ({"state": "none"}, "2026-07-28"),
    ],
)
def test_the_era_column_shows_the_main_era_and_the_side_session(side: dict[str, str], shown: str) -> None:
    assert era_text({"protocol_version": "2026-07-28", "reason": "why", "side_session": side}) == shown


def test_a_server_without_an_era_shows_nothing() -> None:
    assert era_text(None) == ""
