"""A PyPI install runs the package's build code in a sandbox: it reads neither the operator's
home nor the gateway's environment, and writes nothing outside the server's environment."""

from __future__ import annotations

import io
import json
import shutil
import tarfile
import textwrap
from pathlib import Path

import pytest

from mcp_aggregator.installs.confined_run import install_env, install_network
from mcp_aggregator.installs.install_plan import PypiVenv
from mcp_aggregator.installs.pypi_venv import build_venv
from mcp_aggregator.sandbox import SandboxConfig
from mcp_aggregator.sandbox.sandbox_policy import SandboxSite

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None, reason="bubblewrap is not installed")
CANARY = "gateway-token-canary-7f3a"

BACKEND = textwrap.dedent(
    """
    # A build backend written like a compromised package's: it looks around while it builds.
    import base64, hashlib, json, os, zipfile

    SECRET_FILE = {secret!r}
    ESCAPE = {escape!r}


    def get_requires_for_build_wheel(config_settings=None):
        return []


    def _looked():
        try:
            with open(SECRET_FILE) as file:
                secret = file.read()
        except OSError as exc:
            secret = type(exc).__name__
        try:
            with open(ESCAPE, "w") as file:
                file.write("out")
            escaped = True
        except OSError:
            escaped = False
        env = [value for value in os.environ.values() if "canary" in value]
        return {{"secret": secret, "env": env, "escaped": escaped}}


    def _record(name, data):
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        return f"{{name}},sha256={{digest}},{{len(data)}}"


    def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
        files = {{
            "nosy/__init__.py": b"def main():\\n    print('nosy')\\n",
            "nosy/seen.json": json.dumps(_looked()).encode(),
            "nosy-1.0.dist-info/METADATA": b"Metadata-Version: 2.1\\nName: nosy\\nVersion: 1.0\\n",
            "nosy-1.0.dist-info/WHEEL": (
                b"Wheel-Version: 1.0\\nGenerator: nosy\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
            ),
            "nosy-1.0.dist-info/entry_points.txt": b"[console_scripts]\\nnosy = nosy:main\\n",
        }}
        name = "nosy-1.0-py3-none-any.whl"
        record = [_record(path, data) for path, data in files.items()] + ["nosy-1.0.dist-info/RECORD,,"]
        with zipfile.ZipFile(os.path.join(wheel_directory, name), "w") as wheel:
            for path, data in files.items():
                wheel.writestr(path, data)
            wheel.writestr("nosy-1.0.dist-info/RECORD", "\\n".join(record) + "\\n")
        return name
    """
)
PYPROJECT = '[build-system]\nrequires = []\nbuild-backend = "nosy_backend"\nbackend-path = ["."]\n'
PKG_INFO = "Metadata-Version: 2.1\nName: nosy\nVersion: 1.0\n"


def sdist(folder: Path, *, secret: Path, escape: Path) -> Path:
    """``nosy-1.0.tar.gz`` in ``folder``: an sdist whose build step is ``BACKEND``."""
    folder.mkdir()
    members = {
        "nosy-1.0/pyproject.toml": PYPROJECT,
        "nosy-1.0/PKG-INFO": PKG_INFO,
        "nosy-1.0/nosy_backend.py": BACKEND.format(secret=str(secret), escape=str(escape)),
    }
    with tarfile.open(folder / "nosy-1.0.tar.gz", "w:gz") as archive:
        for name, text in members.items():
            data = text.encode()
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return folder


async def installed_sees(tmp_path: Path, *, sandboxed: bool) -> dict[str, object]:
    secret = tmp_path / "operator" / ".ssh" / "id_ed25519"
    secret.parent.mkdir(parents=True)
    secret.write_text("PRIVATE KEY")
    escape = tmp_path / "escaped"
    links = sdist(tmp_path / "links", secret=secret, escape=escape)
    data = tmp_path / "data"
    venv_path = data / "servers" / "nosy" / "venv"
    venv = PypiVenv(path=venv_path, requirement="nosy==1.0", launcher=str(venv_path / "bin" / "nosy"))
    env = {"PIP_NO_INDEX": "1", "PIP_FIND_LINKS": str(links), "GATEWAY_TOKEN": CANARY}
    site = SandboxSite(SandboxConfig(enabled=sandboxed, network="none"), data)
    await build_venv(venv, "nosy", env, site=site)
    seen_files = list(venv_path.glob("lib/python*/site-packages/nosy/seen.json"))
    assert len(seen_files) == 1
    seen: dict[str, object] = json.loads(seen_files[0].read_text())
    seen["escape_exists"] = escape.exists()  # a write to the sandbox's own /tmp stays there
    del seen["escaped"]
    return seen


async def test_a_pypi_build_step_reads_neither_the_home_nor_the_gateways_environment(tmp_path: Path) -> None:
    seen = await installed_sees(tmp_path, sandboxed=True)
    assert seen == {"secret": "FileNotFoundError", "env": [], "escape_exists": False}


async def test_without_a_sandbox_the_same_build_step_would_read_the_home(tmp_path: Path) -> None:
    # The proof the test above can fail: where servers run unsandboxed, so does the install,
    # and the key is read; the gateway's environment still is not passed.
    seen = await installed_sees(tmp_path, sandboxed=False)
    assert seen == {"secret": "PRIVATE KEY", "env": [], "escape_exists": True}


def test_an_install_step_gets_pips_settings_and_proxies_only() -> None:
    env = {"PIP_INDEX_URL": "https://mirror.example/simple", "HTTPS_PROXY": "http://proxy:3128", "API_KEY": "k"}
    assert install_env(env) == {
        "PIP_INDEX_URL": "https://mirror.example/simple",
        "HTTPS_PROXY": "http://proxy:3128",
        "PIP_NO_CACHE_DIR": "1",
        "PIP_DISABLE_PIP_VERSION_CHECK": "1",
    }


@pytest.mark.parametrize(
    ("env", "network"),
    [
        ({}, "outbound"),
        ({"PIP_INDEX_URL": "https://pypi.example.org/simple"}, "outbound"),
        ({"PIP_INDEX_URL": "http://127.0.0.1:3141/root/pypi"}, "host"),
        ({"PIP_EXTRA_INDEX_URL": "http://10.1.2.3/simple"}, "host"),
        ({"HTTPS_PROXY": "http://localhost:3128"}, "host"),
    ],
)
def test_an_install_reaches_its_index_on_the_hosts_network_only_where_the_index_is_there(
    env: dict[str, str], network: str
) -> None:
    assert install_network(env).value == network
