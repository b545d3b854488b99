"""``ToolTable``: the catalogue as rows and server codes, the arrays a search fuses scores in."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np

from mcp_aggregator.search.ranking import Rows, Scores


class ToolTable:
    """Tools as rows 0..n-1 in key order and servers as codes 0..s-1 in name order.

    Sorted order makes "ties by key" and "ties by server name" plain ties by the lower
    row or code, so ranking needs no strings. Rows and codes never change: build a new
    table after the catalogue's tools or servers change.
    """

    def __init__(self, tools: Iterable[tuple[str, str]]) -> None:
        """``tools`` are (key, server) pairs with distinct keys."""
        pairs = sorted(tools)
        self.keys: list[str] = [key for key, _ in pairs]
        self._row_of = {key: row for row, key in enumerate(self.keys)}
        self.servers: list[str] = sorted({server for _, server in pairs})
        self._code_of = {server: code for code, server in enumerate(self.servers)}
        self.server_of: Rows = np.array([self._code_of[server] for _, server in pairs], dtype=np.intp)
        self._aligned_names: Sequence[str] | None = None
        self._aligned_codes: Rows = np.zeros(0, dtype=np.intp)
        self._aligned_known: Rows = np.zeros(0, dtype=np.intp)

    def __len__(self) -> int:
        return len(self.keys)

    def code_of(self, server: str) -> int | None:
        return self._code_of.get(server)

    def rows(self, keys: Iterable[str]) -> Rows:
        """Rows of ``keys`` in order; keys not in the table are skipped."""
        row_of = self._row_of
        return np.fromiter((row_of[k] for k in keys if k in row_of), dtype=np.intp)

    def server_scores(self, names: Sequence[str], scores: Scores) -> Scores:
        """``scores`` of the servers ``names`` as an array over server codes (0 if absent).

        The name-to-code mapping is kept for the last ``names`` object, which an index
        replaces only when its servers change, so a search pays one array copy.
        """
        if names is not self._aligned_names:
            known = [i for i, name in enumerate(names) if name in self._code_of]
            self._aligned_known = np.array(known, dtype=np.intp)
            self._aligned_codes = np.array([self._code_of[names[i]] for i in known], dtype=np.intp)
            self._aligned_names = names
        out = np.zeros(len(self.servers), dtype=np.float64)
        out[self._aligned_codes] = scores[self._aligned_known]
        return out
