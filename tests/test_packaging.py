"""pyproject.toml declares exactly what the package imports, so a fresh install runs."""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
SRC = REPO / "src" / "mcp_aggregator"
OPTIONAL_MODULES = {
    SRC / "search" / "qdrant_index.py": "qdrant",
    SRC / "search" / "sentence_transformer_embedder.py": "sentence-transformers",
    SRC / "guardrails" / "pii_detector.py": "pii",
    SRC / "registry" / "change_feed.py": "postgres",
    SRC / "search" / "pg_embedding_cache.py": "postgres",
    SRC / "aggregate" / "llm_agent.py": "llm",
}
"""Modules imported only when configured (``search.build``, ``guardrails.guard``); their imports
belong to an extra."""
USED_WITHOUT_IMPORT = {
    "aiosqlite": "the SQLAlchemy driver a sqlite+aiosqlite:// database URL names",
    "uvloop": "anyio's use_uvloop backend option",
    "detect-secrets": "the secret detector's plugins, imported by name at the first text holding one of their hints",
}


def _normalise(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _requirement_names(requirements: list[str]) -> set[str]:
    names = set()
    for requirement in requirements:
        match = re.match(r"[A-Za-z0-9][A-Za-z0-9._-]*", requirement)
        assert match, requirement
        names.add(_normalise(match.group()))
    return names


def _imported_modules(path: Path) -> set[str]:
    modules = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            modules |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            modules.add(node.module.split(".")[0])
    return {m for m in modules if m not in sys.stdlib_module_names and m != "mcp_aggregator"}


def _distributions(modules: set[str]) -> dict[str, set[str]]:
    """Module -> the normalised names of the distributions that install it (the module's own
    name when not installed, as for an optional extra). A namespace package such as
    ``opentelemetry`` or ``pydantic_monty`` is installed by several distributions."""
    installed = importlib.metadata.packages_distributions()
    return {m: {_normalise(d) for d in installed.get(m, [m])} for m in modules}


@functools.cache
def _module_owners() -> frozenset[str]:
    """Every installed distribution that installs a top-level module of its own."""
    return frozenset(_normalise(d) for ds in importlib.metadata.packages_distributions().values() for d in ds)


def _installs(dist: str) -> set[str]:
    """``dist``, and for a meta-package (one that installs no module of its own, such as
    ``pydantic-monty``) the distributions it requires: there the module ``pydantic_monty``
    comes from ``pydantic-monty-client`` and the worker binary from ``pydantic-monty-runtime``."""
    if dist in _module_owners():
        return {dist}
    try:
        requires = importlib.metadata.requires(dist) or []
    except importlib.metadata.PackageNotFoundError:
        return {dist}
    return {dist} | _requirement_names([r for r in requires if "extra ==" not in r])


def _project() -> dict[str, object]:
    project: dict[str, object] = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    return project


def _imports() -> tuple[dict[str, set[str]], dict[str, str]]:
    """Distributions imported by the always-loaded modules, and by the optional ones (-> extra)."""
    required: set[str] = set()
    optional: dict[str, str] = {}
    for path in sorted(SRC.rglob("*.py")):
        modules = _imported_modules(path)
        if path in OPTIONAL_MODULES:
            optional |= {m: OPTIONAL_MODULES[path] for m in modules}
        else:
            required |= modules
    by_module = _distributions(required | set(optional))
    return {m: by_module[m] for m in required}, {
        dist: extra for m, extra in optional.items() for dist in sorted(by_module[m])[:1]
    }


def test_every_third_party_module_the_package_imports_is_a_declared_dependency() -> None:
    declared = _requirement_names(_project()["dependencies"])  # type: ignore[arg-type]
    required, _ = _imports()
    provided = set().union(*(_installs(dist) for dist in declared))
    missing = {module: sorted(dists) for module, dists in required.items() if not dists & provided}
    assert not missing, f"imported by src/ but not in [project].dependencies: {missing}"


def test_modules_loaded_only_when_configured_have_their_imports_in_an_extra() -> None:
    project = _project()
    declared = _requirement_names(project["dependencies"])  # type: ignore[arg-type]
    extras: dict[str, list[str]] = project["optional-dependencies"]  # type: ignore[assignment]
    _, optional = _imports()
    missing = {
        dist: extra
        for dist, extra in optional.items()
        if dist not in declared and dist not in _requirement_names(extras.get(extra, []))
    }
    assert not missing, f"imported by an optional module but not in its extra: {missing}"


def test_every_declared_dependency_is_imported_or_used_by_name() -> None:
    declared = _requirement_names(_project()["dependencies"])  # type: ignore[arg-type]
    required, _ = _imports()
    imported = set().union(*required.values())
    unused = {dist for dist in declared if not _installs(dist) & imported} - set(USED_WITHOUT_IMPORT)
    assert not unused, f"declared in [project].dependencies but nothing in src/ imports them: {sorted(unused)}"


def test_starting_the_gateway_loads_no_library_only_one_mode_needs() -> None:
    # The Anthropic SDK (LLM-agent mode) and onnxruntime with its tokenizer (the local
    # embedding model) cost ~120 MB and most of a second in every gateway process, a stdio
    # one per client included; they load when their mode is configured, not at import.
    probe = "import sys, mcp_aggregator.cli, mcp_aggregator.serve.runner; print(sorted(set(sys.modules)))"
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, cwd=REPO, env={**os.environ}
    ).stdout
    modules = {name.split(".")[0] for name in ast.literal_eval(loaded)}
    assert not modules & {"anthropic", "onnxruntime", "onnx", "tokenizers"}
