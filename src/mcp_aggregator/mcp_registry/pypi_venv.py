"""Making a PyPI server's own virtual environment when uv is not there to run it.

The environment is layered on the gateway's own: a ``.pth`` file puts the gateway's
site-packages after the environment's own, so what the gateway already has at a version
the server accepts is reused (pip says "already satisfied") and only the rest is
downloaded into the server's environment, where it takes precedence. pip runs with the
gateway's environment, so ``PIP_INDEX_URL`` and the like apply.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import anyio

from mcp_aggregator.errors import EntryRefusedError
from mcp_aggregator.mcp_registry.install_plan import PypiVenv, gateway_site_dirs

_SCRIPTS = (
    "import json, sys\n"
    "from importlib.metadata import distribution\n"
    "eps = distribution(sys.argv[1]).entry_points\n"
    "print(json.dumps([[e.name, e.value] for e in eps if e.group == 'console_scripts']))\n"
)
_TAIL = 2000


async def build_venv(venv: PypiVenv, identifier: str, env: Mapping[str, str], *, python: str = sys.executable) -> None:
    """Make ``venv`` (if missing), install its requirement, write its launcher.

    Raises ``EntryRefusedError`` with pip's own words when the package cannot be installed
    or names no console script to run.
    """
    bin_dir = venv.path / "bin"
    if not await anyio.Path(bin_dir / "python").exists():
        await _run([python, "-m", "venv", "--without-pip", str(venv.path)], env, "making the environment")
        await anyio.to_thread.run_sync(_layer_on_gateway, venv.path)
    pip = [python, "-m", "pip", "--python", str(bin_dir / "python"), "install", "--disable-pip-version-check", "-q"]
    await _run([*pip, venv.requirement], env, f"pip install {venv.requirement}")
    listed = await _run([str(bin_dir / "python"), "-c", _SCRIPTS, identifier], env, "reading the console scripts")
    scripts = dict(json.loads(listed or "[]"))
    chosen = identifier if identifier in scripts else next(iter(scripts), None) if len(scripts) == 1 else None
    if chosen is None:
        raise EntryRefusedError(
            f"PyPI package {identifier} has no console script to run"
            + (f" named like it (it has: {', '.join(sorted(scripts))})" if scripts else "")
        )
    text = (
        f"#!{bin_dir / 'python'}\n"
        "import sys\n"
        "from importlib.metadata import EntryPoint\n"
        f"sys.exit(EntryPoint(name={chosen!r}, value={scripts[chosen]!r}, group='console_scripts').load()())\n"
    )
    await anyio.to_thread.run_sync(_write_launcher, Path(venv.launcher), text)


def _layer_on_gateway(path: Path) -> None:
    site_dirs = gateway_site_dirs()
    for own in path.glob("lib/python*/site-packages"):
        (own / "_gateway_site.pth").write_text("\n".join(site_dirs) + "\n")


def _write_launcher(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


async def _run(command: list[str], env: Mapping[str, str], what: str) -> str:
    try:
        done = await anyio.run_process(command, env=dict(env), check=False, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise EntryRefusedError(f"{what}: {exc}") from exc
    if done.returncode != 0:
        said = (done.stderr or done.stdout).decode(errors="replace").strip()[-_TAIL:]
        raise EntryRefusedError(f"{what} failed (exit {done.returncode}): {said}")
    return done.stdout.decode(errors="replace")
