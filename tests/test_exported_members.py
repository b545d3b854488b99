from __future__ import annotations

import importlib

import pytest

import mcp_aggregator

PACKAGES = [
    "mcp_aggregator.admin",
    "mcp_aggregator.aggregate",
    "mcp_aggregator.apps",
    "mcp_aggregator.audit",
    "mcp_aggregator.catalog",
    "mcp_aggregator.cli",
    "mcp_aggregator.credentials",
    "mcp_aggregator.facades",
    "mcp_aggregator.health",
    "mcp_aggregator.identity",
    "mcp_aggregator.logs",
    "mcp_aggregator.registry",
    "mcp_aggregator.replicas",
    "mcp_aggregator.code_mode",
    "mcp_aggregator.search",
    "mcp_aggregator.serve",
    "mcp_aggregator.settings",
    "mcp_aggregator.telemetry",
    "mcp_aggregator.text",
    "mcp_aggregator.upstreams",
]


def test_the_root_exports_exactly_its_public_surface() -> None:
    assert sorted(mcp_aggregator.__all__) == [
        "AggregatorError",
        "Gateway",
        "ServerConfig",
        "Settings",
        "__version__",
        "load_settings",
    ]
    public = {name for name in dir(mcp_aggregator) if not name.startswith("_")}
    modules = {name for name in public if type(getattr(mcp_aggregator, name)).__name__ == "module"}
    assert public - modules == set(mcp_aggregator.__all__) - {"__version__"}


def test_a_package_loads_an_exported_name_when_it_is_first_read() -> None:
    from mcp_aggregator.settings import Settings
    from mcp_aggregator.settings.settings import Settings as Defined

    assert Settings is Defined
    with pytest.raises(AttributeError, match="has no attribute 'Nothing'"):
        _ = mcp_aggregator.Nothing


@pytest.mark.parametrize("name", PACKAGES)
def test_every_package_exports_only_names_it_has(name: str) -> None:
    package = importlib.import_module(name)
    exported = getattr(package, "__all__", None)
    assert exported, f"{name} declares its public surface"
    assert sorted(exported) == sorted(set(exported)), "no duplicates"
    for member in exported:
        assert hasattr(package, member), f"{name}.__all__ names {member}, which is missing"
