"""Text analysis shared by tool search and the aggregator: words, stop words, stems."""

from mcp_aggregator.text.stemmer import stem, stem_prefix
from mcp_aggregator.text.stop_words import REQUEST_WORDS, STOP_WORDS
from mcp_aggregator.text.tokens import search_terms, split_identifier, words

__all__ = [
    "REQUEST_WORDS",
    "STOP_WORDS",
    "search_terms",
    "split_identifier",
    "stem",
    "stem_prefix",
    "words",
]
