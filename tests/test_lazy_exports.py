"""``lazy_exports``: a package export that shares its module's name is refused at import,
since the submodule's import would replace it with the module for good."""

from __future__ import annotations

import pytest

from mcp_aggregator.lazy_exports import lazy_exports


def test_an_export_named_like_its_module_is_refused_naming_it() -> None:
    with pytest.raises(ValueError, match=r"pkg: probe shares its module's name"):
        lazy_exports({"__name__": "pkg"}, {"probe": ".probe", "Other": ".probe"})


def test_an_export_is_loaded_on_first_read_and_kept() -> None:
    namespace: dict[str, object] = {"__name__": "mcp_aggregator.health"}
    getattr_, dir_ = lazy_exports(namespace, {"transition": ".server_state"})
    from mcp_aggregator.health.server_state import transition

    assert getattr_("transition") is transition
    assert namespace["transition"] is transition
    assert "transition" in dir_()
    with pytest.raises(AttributeError, match="has no attribute 'missing'"):
        getattr_("missing")
