"""Which tools are listed beside the facades: the pinned ones, then the most executed. Pure."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence


def featured_tools(
    pinned: Sequence[str], most_called: Iterable[str], frequent: int, served: Callable[[str], bool]
) -> tuple[str, ...]:
    """Canonical names to list: every pinned tool ``served`` now, in the operator's order,
    then up to ``frequent`` of ``most_called`` (most called first) that are served and not
    pinned already. A tool the profile no longer serves is skipped, not counted."""
    chosen = [name for name in pinned if served(name)]
    taken = set(pinned)
    added = 0
    for name in most_called:
        if added >= frequent:
            break
        if name in taken or not served(name):
            continue
        chosen.append(name)
        taken.add(name)
        added += 1
    return tuple(chosen)
