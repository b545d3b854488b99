"""What is refused before a script reaches the sandbox."""

from __future__ import annotations

import pytest

from mcp_aggregator.code_mode.config import DEFAULT_MODULES
from mcp_aggregator.code_mode.script_check import ScriptProblem, check_script


@pytest.mark.parametrize(
    "code",
    [
        "1 + 1",
        "import json\njson.dumps({})",
        "from collections import Counter\nCounter('ab')",
        "import datetime as dt",
        "x = await call_tool('a.b', {})",
    ],
)
def test_allowed_scripts_pass(code: str) -> None:
    assert check_script(code, DEFAULT_MODULES) is None


@pytest.mark.parametrize(
    ("code", "problem"),
    [
        ("", ScriptProblem(None, "ValueError: the script is empty")),
        ("x = (", ScriptProblem(1, "SyntaxError: '(' was never closed")),
        (
            "x = 1\nimport os",
            ScriptProblem(2, "ImportError: import of 'os' is not allowed in code mode (allowed: json)"),
        ),
        (
            "from os.path import join",
            ScriptProblem(1, "ImportError: import of 'os.path' is not allowed in code mode (allowed: json)"),
        ),
        (
            "def f():\n    import subprocess",
            ScriptProblem(2, "ImportError: import of 'subprocess' is not allowed in code mode (allowed: json)"),
        ),
        (
            "from .. import x",
            ScriptProblem(1, "ImportError: import of '..' is not allowed in code mode (allowed: json)"),
        ),
        ("a = 1\x00", ScriptProblem(None, "SyntaxError: source code string cannot contain null bytes")),
    ],
)
def test_refused_scripts_name_line_and_cause(code: str, problem: ScriptProblem) -> None:
    assert check_script(code, ["json"]) == problem


def test_a_problem_reads_line_first() -> None:
    assert str(ScriptProblem(3, "ImportError: no")) == "line 3: ImportError: no"
    assert str(ScriptProblem(None, "ValueError: empty")) == "ValueError: empty"
