"""What is refused before a script reaches the sandbox: bad syntax and imports not allowed.

The sandbox has no filesystem, network or process access whatever a script imports; the
allow-list is a second wall, and it answers an ``import subprocess`` with the modules a
script may use instead of a bare "no module named".
"""

from __future__ import annotations

import ast
from collections.abc import Collection
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ScriptProblem:
    """Why a script was refused, and where (1-based line; None when it has no place)."""

    line: int | None
    message: str

    def __str__(self) -> str:
        return f"line {self.line}: {self.message}" if self.line is not None else self.message


def check_script(code: str, allowed_modules: Collection[str]) -> ScriptProblem | None:
    """None if ``code`` parses and imports only ``allowed_modules`` (and their submodules)."""
    if not code.strip():
        return ScriptProblem(None, "ValueError: the script is empty")
    try:
        tree = ast.parse(code, filename="script.py")
    except SyntaxError as exc:
        return ScriptProblem(exc.lineno, f"SyntaxError: {exc.msg}")
    except ValueError as exc:  # e.g. a NUL byte in the source
        return ScriptProblem(None, f"SyntaxError: {exc}")
    for node in ast.walk(tree):
        for module in _imported(node):
            if module.split(".", 1)[0] not in allowed_modules:
                allowed = ", ".join(sorted(allowed_modules)) or "none"
                return ScriptProblem(
                    getattr(node, "lineno", None),
                    f"ImportError: import of {module!r} is not allowed in code mode (allowed: {allowed})",
                )
    return None


def _imported(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if isinstance(node, ast.ImportFrom):
        # A relative import has no package to be relative to here: refuse it by its dots.
        return [("." * node.level) + (node.module or "")]
    return []
