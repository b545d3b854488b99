"""Making a PyPI server's own virtual environment when uv is not there to run it.

The environment is layered on the gateway's own: a ``.pth`` file puts the gateway's
site-packages after the environment's own, so what the gateway already has at a version
the server accepts is reused (pip says "already satisfied") and only the rest is
downloaded into the server's environment, where it takes precedence.

``pip install`` (which runs the package's build code) and the environment's own Python run
confined (``confined_run``): they may write the environment's folder only, read the
gateway's Python and nothing else of the machine, and get only pip's settings of the
gateway's environment (``PIP_INDEX_URL`` and the like, proxies).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import anyio

from mcp_aggregator.errors import EntryRefusedError
from mcp_aggregator.installs.confined_run import install_env, install_network, install_reads, run_confined
from mcp_aggregator.installs.install_plan import PypiVenv, gateway_site_dirs
from mcp_aggregator.sandbox.sandbox_policy import SandboxSite

_SCRIPTS = (
    "import json, sys\n"
    "from importlib.metadata import distribution\n"
    "eps = distribution(sys.argv[1]).entry_points\n"
    "print(json.dumps([[e.name, e.value] for e in eps if e.group == 'console_scripts']))\n"
)
_TAIL = 2000


async def build_venv(
    venv: PypiVenv, identifier: str, env: Mapping[str, str], *, site: SandboxSite, python: str = sys.executable
) -> None:
    """Make ``venv`` (if missing), install its requirement, write its launcher; ``site`` is
    the gateway's sandbox site (the steps that run the package's code run in a sandbox).

    Raises ``EntryRefusedError`` with pip's own words when the package cannot be installed
    or names no console script to run, ``SandboxError`` when the sandbox cannot be set up.
    """
    bin_dir = venv.path / "bin"
    if not await anyio.Path(bin_dir / "python").exists():
        # The standard library's own venv, no package's code: as the gateway.
        await _run([python, "-m", "venv", "--without-pip", str(venv.path)], "making the environment")
        await anyio.to_thread.run_sync(_layer_on_gateway, venv.path)
    step = _Step(venv, env, site)
    pip = [python, "-m", "pip", "--python", str(bin_dir / "python"), "install", "-q"]
    await step.run([*pip, venv.requirement], f"pip install {venv.requirement}")
    listed = await step.run([str(bin_dir / "python"), "-c", _SCRIPTS, identifier], "reading the console scripts")
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


@dataclass(frozen=True)
class _Step:
    """A step that runs the package's code, confined to the environment's folder."""

    venv: PypiVenv
    env: Mapping[str, str]
    site: SandboxSite

    async def run(self, command: list[str], what: str) -> str:
        try:
            done = await run_confined(
                f"{self.venv.path.parent.name}-install",
                command,
                install_env(self.env),
                site=self.site,
                read=(*gateway_site_dirs(), *install_reads(self.env)),
                write=(str(self.venv.path),),
                network=install_network(self.env),
            )
        except OSError as exc:
            raise EntryRefusedError(f"{what}: {exc}") from exc
        return _checked(what, done.returncode, done.stdout, done.stderr)


async def _run(command: list[str], what: str) -> str:
    try:
        done = await anyio.run_process(command, check=False, stdin=subprocess.DEVNULL)
    except OSError as exc:
        raise EntryRefusedError(f"{what}: {exc}") from exc
    return _checked(what, done.returncode, done.stdout, done.stderr)


def _checked(what: str, returncode: int, stdout: bytes, stderr: bytes) -> str:
    if returncode != 0:
        said = (stderr or stdout).decode(errors="replace").strip()[-_TAIL:]
        raise EntryRefusedError(f"{what} failed (exit {returncode}): {said}")
    return stdout.decode(errors="replace")
