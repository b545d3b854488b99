"""English words too common to tell tools or results apart."""

from __future__ import annotations

_STOP_WORDS_TEXT = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each few for
    from further had has have having he her here hers herself him himself his how i if in into
    is it its itself just me more most my myself no nor not now of off on once only or other
    our ours ourselves out over own same she should so some such than that the their theirs
    them themselves then there these they this those through to too under until up us use using
    very was we were what when where which while who whom why will with would you your yours
    yourself yourselves please
"""
STOP_WORDS: frozenset[str] = frozenset(_STOP_WORDS_TEXT.split())
"""Function words of English: dropped from search terms and from aggregator queries."""

REQUEST_WORDS: frozenset[str] = frozenset({"show", "tell", "get", "give", "find", "want", "need"})
"""Words of asking ("show me", "I want"): noise in an aggregator query's keywords, but
names of actions in tool search (``get_current_time``), so search keeps them."""
