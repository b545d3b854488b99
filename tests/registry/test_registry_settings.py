"""The ``registry:`` settings section."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from mcp_aggregator.errors import RegistryError
from mcp_aggregator.registry import Limits, Registry, RegistrySettings


def test_defaults_are_an_embedded_sqlite_file_schema_mcp_and_the_contract_limits() -> None:
    settings = RegistrySettings()

    assert settings.database_url == "sqlite+aiosqlite:///./.aggregator/registry.db"
    assert settings.pg_schema == "mcp"
    assert settings.limits == Limits()


def test_unknown_keys_are_refused_with_their_path() -> None:
    with pytest.raises(ValidationError, match=r"limits\.max_server"):
        RegistrySettings.model_validate({"limits": {"max_server": 3}})


@pytest.mark.parametrize("schema", ["MCP", "mcp; drop", "1mcp", ""])
def test_a_schema_name_must_be_a_plain_identifier(schema: str) -> None:
    with pytest.raises(ValidationError):
        RegistrySettings(pg_schema=schema)


async def test_an_unreachable_database_raises_registry_error_without_the_password() -> None:
    settings = RegistrySettings(database_url="postgresql+asyncpg://postgres:s3cret@127.0.0.1:1/test")

    with pytest.raises(
        RegistryError, match=r"cannot open the registry at postgresql\+asyncpg://postgres:\*\*\*@"
    ) as info:
        async with Registry(settings):
            pass
    assert "s3cret" not in str(info.value)


async def test_the_sqlite_file_folder_is_created(tmp_path: Path) -> None:
    db = tmp_path / "deep" / "er" / "registry.db"

    async with Registry(RegistrySettings(database_url=f"sqlite+aiosqlite:///{db}")) as registry:
        assert await registry.list_servers() == []
    assert db.exists()
