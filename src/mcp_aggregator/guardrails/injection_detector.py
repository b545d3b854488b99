"""``InjectionDetector``: instructions hidden in what a tool says, for the model to obey.

The tool-poisoning shapes of the OWASP MCP Top 10, each finding with its reason: markers
that set text apart as instructions (``<IMPORTANT>``, ``<system>``, an HTML comment),
phrasing that overrides the model's instructions ("ignore previous instructions", "do not
tell the user"), requests to read credentials or to send data elsewhere, invisible and
bidirectional Unicode, and (in descriptions) long base64 blobs. No library ships these as
rules without a model (LLM Guard's scanners load transformers), so the patterns are ours.

Every pattern is RE2's (``linear``), and an HTML comment is found by a scan for its ends, so
the time taken is linear in the text whatever an upstream writes: a megabyte of unclosed
``<!-- ignore previous instructions`` costs what a megabyte of prose does. The text is
encoded for RE2 once for every pattern, and a ``block`` or ``flag`` rule takes the first
match of each (``Reading``): 25,000 matches cost what their reporting costs only when masked.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Final

from mcp_aggregator.guardrails.finding import Finding, Reading
from mcp_aggregator.guardrails.linear_regex import Utf8Text, linear

_MARKER_REASON: Final = "a marker that sets text apart as instructions for the model"
_MARKER: Final = linear(
    r"<\s*/?\s*(?:important|system|instructions?|secret|hidden|admin|assistant|system[_-]?prompt)\s*>"
    r"|\[\s*(?:system|inst)\s*\]",
    ignore_case=True,
)
_COMMENT_WORD: Final = linear(
    # An HTML comment that speaks to the model (not ``<!-- toc -->`` or a linter's note).
    r"\b(?:assistant|model|llm|agent|ignore|instructions?|must|always|never|do\s+not|user|system)\b",
    ignore_case=True,
)
_MAX_COMMENT: Final = 4000
"""Longer comments are page furniture (a commented-out block), not a note to the model."""

_RULES: Final = (
    (
        "instruction_override",
        linear(
            r"\b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+)*"
            r"(?:previous|prior|above|earlier|preceding|other|system|original)?\s*"
            r"(?:instructions?|prompts?|rules|directions|guidelines|constraints)\b"
            r"|\byou\s+are\s+now\s+(?:a|an|in)\b|\bnew\s+instructions\s*:"
            r"|\b(?:do\s+not|don'?t|never)\s+(?:tell|inform|mention|reveal|show)\b[^.\n]{0,40}\buser\b",
            ignore_case=True,
        ),
        "phrasing that overrides the model's instructions or hides from the user",
    ),
    (
        "credential_access",
        linear(
            # Reading private files, whatever is done with them; moving secrets anywhere.
            # ``\B\.env``: a ``.env`` not inside a name (``settings.env``): the dot follows no word.
            r"\b(?:read|cat|load|include|copy|send|upload|attach|pass)\b[^.\n]{0,80}?"
            r"(?:~/\.ssh|\bid_(?:rsa|dsa|ecdsa|ed25519)\b|\.aws/credentials|\.netrc\b|/etc/(?:passwd|shadow)"
            r"|\B\.env\b|\bmcp\.json\b|\bprivate\s+keys?\b|\bssh\s+keys?\b|\bcredentials\s+file\b)"
            r"|\b(?:pass|send|include|attach|upload|forward|append|copy)\b[^.\n]{0,40}?"
            r"\b(?:passwords?|api[_\s-]?keys?|credentials|secrets?|tokens?)\b[^.\n]{0,40}?\b(?:to|as|in|into)\b",
            ignore_case=True,
        ),
        "a request to read credentials or private files",
    ),
    (
        "data_exfiltration",
        linear(
            # Sending something's content somewhere: a verb, what is sent, then where to.
            r"\b(?:send|post|upload|forward|transmit|exfiltrate|leak|email)\b[^.\n]{0,40}?"
            r"\b(?:contents?|data|files?|output|results?|conversation|history|keys?|tokens?|credentials|secrets?"
            r"|passwords?|information|messages?)\b[^.\n]{0,40}?\b(?:to|at)\s+"
            r"(?:https?://\S+|(?:the\s+)?(?:following|this|that|my)\s+(?:url|address|endpoint|server|webhook)\b)",
            ignore_case=True,
        ),
        "a request to send data to another place",
    ),
    (
        "invisible_unicode",
        linear("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff\U000e0000-\U000e007f]+"),
        "invisible or bidirectional Unicode that hides text from a reader",
    ),
)
_BLOB: Final = linear(r"[A-Za-z0-9+/]{160,}={0,2}")
_BLOB_RULE: Final = ("encoded_blob", "a long base64 blob the reader cannot see into")


class InjectionDetector:
    """See the module docstring; ``blobs``: also report long base64 runs (for descriptions,
    where data has no business; results carry images and files that way)."""

    def __init__(self, *, blobs: bool = False) -> None:
        self.blobs = blobs

    def may_find(self, text: str) -> bool:
        return True

    def find(self, text: str, reading: Reading | None = None) -> list[Finding]:
        reading = Reading() if reading is None else reading
        encoded, length = Utf8Text(text), len(text)
        found: list[Finding] = []
        reading.take(found, encoded.spans(_MARKER), "hidden_instruction", _MARKER_REASON, length)
        reading.take(found, _comments(text), "hidden_instruction", _MARKER_REASON, length)
        for label, regex, reason in _RULES:
            reading.take(found, encoded.spans(regex), label, reason, length)
        if self.blobs:
            label, reason = _BLOB_RULE
            reading.take(found, encoded.spans(_BLOB), label, reason, length)
        return found


def _comments(text: str) -> Iterator[tuple[int, int]]:
    """The spans of the HTML comments in ``text`` that speak to the model. Each character is
    looked at a bounded number of times: a comment's end is searched for once, and an opening
    with no end after it means no later opening has one either."""
    start = text.find("<!--")
    while start >= 0:
        end = text.find("-->", start + 4)
        if end < 0:
            return
        # The body searched as a string of its own: RE2's wrapper encodes the whole text it is
        # given at each search, so ``search(text, pos, endpos)`` would cost the text each time.
        if end - start - 4 <= _MAX_COMMENT and _COMMENT_WORD.search(text[start + 4 : end]) is not None:
            yield start, end + 3
        start = text.find("<!--", end + 3)
