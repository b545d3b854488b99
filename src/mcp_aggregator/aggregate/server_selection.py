"""Which servers a query goes to: explicit list, else the first matching rule, else all."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from mcp_aggregator.aggregate.config import ServerRule


@dataclass(frozen=True, slots=True)
class ServerSelection:
    """Outcome of selection.

    ``selected`` is every chosen name in selection order; ``queried`` are those selected
    and available, in selection order; ``unavailable`` were selected (by the caller or a
    rule) but are not among the available servers.
    ``rule_index`` is the matching rule, ``None`` for an explicit list or the fallback.
    """

    selected: tuple[str, ...]
    queried: tuple[str, ...]
    unavailable: tuple[str, ...]
    rule_index: int | None


def select_servers(
    query: str,
    *,
    rules: Sequence[ServerRule],
    explicit: Sequence[str],
    available: Sequence[str],
) -> ServerSelection:
    """Pick servers for ``query``.

    An explicit, non-empty ``explicit`` list wins over the rules. Otherwise rules are tried
    in order and the first whose pattern is found in the query (case-insensitive) decides.
    With no match every available server is asked, in the order given. Names repeat once.
    """
    rule_index: int | None = None
    if explicit:
        chosen: Sequence[str] = explicit
    else:
        rule_index = next((i for i, rule in enumerate(rules) if rule.regex.search(query)), None)
        chosen = rules[rule_index].servers if rule_index is not None else available
    ordered = tuple(dict.fromkeys(chosen))
    available_set = set(available)
    return ServerSelection(
        selected=ordered,
        queried=tuple(name for name in ordered if name in available_set),
        unavailable=tuple(name for name in ordered if name not in available_set),
        rule_index=rule_index,
    )
