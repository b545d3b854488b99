"""Which servers a query goes to: explicit list, else the first matching rule, else the
servers the tool search index finds for the question, else all."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mcp_aggregator.aggregate.config import ServerRule


@dataclass(frozen=True, slots=True)
class ServerSelection:
    """Outcome of selection.

    ``selected`` is every chosen name in selection order; ``queried`` are those selected
    and available, in selection order; ``unavailable`` were selected (by the caller or a
    rule) but are not among the available servers.
    ``rule_index`` is the matching rule, ``None`` for an explicit list or the fallback.
    ``how`` is ``explicit``, ``rule``, ``toolSearch`` or ``all``.
    """

    selected: tuple[str, ...]
    queried: tuple[str, ...]
    unavailable: tuple[str, ...]
    rule_index: int | None
    how: str = "all"


def decided_without_search(query: str, *, rules: Sequence[ServerRule], explicit: Sequence[str]) -> bool:
    """Whether ``select_servers`` picks from ``explicit`` or a rule, never calling ``found``."""
    return bool(explicit) or any(rule.regex.search(query) for rule in rules)


def select_servers(
    query: str,
    *,
    rules: Sequence[ServerRule],
    explicit: Sequence[str],
    available: Sequence[str],
    found: Callable[[], Sequence[str]] | None = None,
) -> ServerSelection:
    """Pick servers for ``query``.

    An explicit, non-empty ``explicit`` list wins over the rules. Otherwise rules are tried
    in order and the first whose pattern is found in the query (case-insensitive) decides.
    With no match, ``found()`` (called only then) names the servers whose tools fit the
    question; those among ``available`` are asked, in its order. When it finds none, or
    there is no ``found``, every available server is asked, in the order given. Names
    repeat once.
    """
    rule_index: int | None = None
    how = "explicit"
    if explicit:
        chosen: Sequence[str] = explicit
    else:
        rule_index = next((i for i, rule in enumerate(rules) if rule.regex.search(query)), None)
        if rule_index is not None:
            chosen, how = rules[rule_index].servers, "rule"
        else:
            fitting = [name for name in (found() if found is not None else ()) if name in set(available)]
            chosen, how = (fitting, "toolSearch") if fitting else (available, "all")
    ordered = tuple(dict.fromkeys(chosen))
    available_set = set(available)
    return ServerSelection(
        selected=ordered,
        queried=tuple(name for name in ordered if name in available_set),
        unavailable=tuple(name for name in ordered if name not in available_set),
        rule_index=rule_index,
        how=how,
    )
