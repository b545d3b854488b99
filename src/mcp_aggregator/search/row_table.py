"""Per-row server and skill metadata shared by the in-process indexes, and their filter."""

from __future__ import annotations

from collections.abc import Collection, Iterable
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

BoolMask = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class IndexFilter:
    """Which rows a search may return. ``None`` fields do not filter."""

    servers: frozenset[str] | None = None
    skill: str | None = None

    @classmethod
    def of(cls, servers: Collection[str] | None = None, skill: str | None = None) -> IndexFilter:
        return cls(None if servers is None else frozenset(servers), skill)

    @property
    def is_empty(self) -> bool:
        return self.servers is None and self.skill is None


NO_FILTER = IndexFilter()


class RowTable:
    """Dense rows 0..n-1, each with a key, a server and skill ids.

    Removal moves the last row into the hole (callers move their own row data the same
    way), so rows stay dense and a filter is a boolean mask over ``len(self)`` rows.
    """

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.row_of: dict[str, int] = {}
        self._server_codes: dict[str, int] = {}
        self._server_names: list[str] = []
        self._server_of_row = np.zeros(0, dtype=np.int32)
        self._skills: list[frozenset[str]] = []
        # Searches repeat the same filter (the connected servers) until a server comes or
        # goes, and building a mask costs a dict lookup per allowed server.
        self._last_mask: tuple[IndexFilter, BoolMask] | None = None

    def __len__(self) -> int:
        return len(self.keys)

    def server_code(self, server: str) -> int:
        code = self._server_codes.get(server)
        if code is None:
            code = self._server_codes[server] = len(self._server_names)
            self._server_names.append(server)
        return code

    def sole_server(self, rows: npt.NDArray[np.intp]) -> str | None:
        """The server of all ``rows`` when they share one, else None."""
        if len(rows) == 0:
            return None
        codes = self._server_of_row[rows]
        first = int(codes[0])
        return self._server_names[first] if bool((codes == first).all()) else None

    def put(self, key: str, server: str, skills: Iterable[str] = ()) -> tuple[int, bool]:
        """Row of ``key`` and whether it is new (appended at the end)."""
        code = self.server_code(server)
        self._last_mask = None
        row = self.row_of.get(key)
        if row is not None:
            self._server_of_row[row] = code
            self._skills[row] = frozenset(skills)
            return row, False
        row = len(self.keys)
        self.keys.append(key)
        self.row_of[key] = row
        if row >= len(self._server_of_row):
            grown = np.zeros(max(16, 2 * len(self._server_of_row)), dtype=np.int32)
            grown[:row] = self._server_of_row[:row]
            self._server_of_row = grown
        self._server_of_row[row] = code
        self._skills.append(frozenset(skills))
        return row, True

    def set_skills(self, key: str, skills: Iterable[str]) -> None:
        row = self.row_of.get(key)
        if row is not None:
            self._skills[row] = frozenset(skills)
            self._last_mask = None

    def pop(self, key: str) -> tuple[int, int] | None:
        """Removes ``key``; returns (hole, moved_from) so callers can move row data, or None."""
        hole = self.row_of.pop(key, None)
        if hole is None:
            return None
        self._last_mask = None
        last = len(self.keys) - 1
        if hole != last:
            moved = self.keys[last]
            self.keys[hole] = moved
            self.row_of[moved] = hole
            self._server_of_row[hole] = self._server_of_row[last]
            self._skills[hole] = self._skills[last]
        self.keys.pop()
        self._skills.pop()
        return hole, last

    def mask(self, flt: IndexFilter) -> BoolMask | None:
        """Rows passing ``flt`` (read-only); None when nothing is filtered out."""
        n = len(self.keys)
        if flt.is_empty:
            return None
        if self._last_mask is not None and self._last_mask[0] == flt:
            return self._last_mask[1]
        keep = np.ones(n, dtype=np.bool_)
        if flt.servers is not None:
            # A lookup table over server codes: one gather, where isin would sort both sides.
            allowed = np.zeros(len(self._server_codes), dtype=np.bool_)
            allowed[[code for s in flt.servers if (code := self._server_codes.get(s)) is not None]] = True
            keep &= allowed[self._server_of_row[:n]]
        if flt.skill is not None:
            skill = flt.skill
            keep &= np.fromiter((skill in s for s in self._skills), dtype=np.bool_, count=n)
        keep.flags.writeable = False
        self._last_mask = (flt, keep)
        return keep


def top_k(scores: npt.NDArray[np.float32], k: int) -> npt.NDArray[np.intp]:
    """Indices of the ``k`` highest scores, best first (ties keep row order)."""
    if k >= len(scores):
        return np.argsort(-scores, kind="stable")
    part = np.argpartition(-scores, k)[:k]
    return part[np.argsort(-scores[part], kind="stable")]
