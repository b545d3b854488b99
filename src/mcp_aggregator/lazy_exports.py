"""Package exports that load on first use (PEP 562).

A package's ``__init__`` names its public types; importing every module that defines them
would make ``import mcp_aggregator.<part>.<module>`` pay for the whole part (the SDK,
SQLAlchemy, the embedder's runtime), and the command line only talks HTTP to a running
gateway. So an ``__init__`` maps each exported name to the module that defines it, and the
module is imported when the name is first read. Type checkers see the same names through
an ``if TYPE_CHECKING:`` import block beside the map.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_exports(
    namespace: dict[str, Any], homes: Mapping[str, str]
) -> tuple[Callable[[str], object], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of the package whose ``globals()`` is ``namespace``.

    ``homes`` maps an exported name to its module, relative (``".tool_doc"``) or absolute.
    A name read once is kept in the package's namespace, so later reads cost nothing.
    """
    package = str(namespace["__name__"])
    clashes = sorted(name for name, home in homes.items() if home.rsplit(".", 1)[-1] == name)
    if clashes:
        # Importing a submodule sets the package's attribute of that name to the module, which
        # then hides the export for good (``__getattr__`` is only asked for missing names).
        raise ValueError(f"{package}: {', '.join(clashes)} shares its module's name; import it eagerly instead")

    def __getattr__(name: str) -> object:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home, package), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(homes))

    return __getattr__, __dir__
