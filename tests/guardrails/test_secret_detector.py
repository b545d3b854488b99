"""The keyed AWS secret's RE2 pattern finds exactly what its ``re`` pattern finds: held
against it on texts built from its pieces and the characters Python and RE2 read apart
(Unicode spaces, letters that fold into ASCII under ``re.IGNORECASE``)."""

from __future__ import annotations

import random

from mcp_aggregator.guardrails import secret_detector
from mcp_aggregator.guardrails.linear_regex import Utf8Text
from mcp_aggregator.guardrails.secret_detector import SecretDetector

KEY = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
# Each text is a key-value line's parts in order, each part drawn from what the pattern
# takes there and what it does not: Unicode spaces, letters that fold into ASCII under
# ``re.IGNORECASE`` (U+0130, U+0131, U+017F, U+212A) or into Greek under RE2's folding
# (U+0345), keys one short.
PARTS = [
    ["", "x", "é", "\u0345", "secretsecret"],
    ["secret", "SECRET", "\u017fecret", "Secret", "secre"],
    ["", "_access_key", "-", "_" * 21, "\u0130", "key\u212a", "\u0345"],
    ["", '"', "'", '""'],
    ["", " ", "\u3000", "\u2028 ", "\x0b", "\x1c", "\u200b"],
    [":", "=", ";", ""],
    ["", " ", "\u3000\t"],
    ["", '"', "'"],
    [KEY, KEY[:39], KEY[:39] + "\u0131", KEY[:39] + "\u017f", "\u212a" + KEY[:39], KEY + "A"],
    ["", "A", "\u0131", "\u0130", "\u212a", " ", '"', "/", "\n", "é"],
]


def _texts(seed: int, count: int = 3000) -> list[str]:
    rng = random.Random(seed)
    return ["".join(rng.choice(choices) for choices in PARTS) for _ in range(count)]


def test_the_keyed_secret_pattern_finds_the_spans_its_re_pattern_finds() -> None:
    reference = secret_detector._AWS_SECRET_KEYED
    linear = secret_detector.linear(secret_detector._AWS_SECRET_KEYED_LINEAR)
    matched = 0
    for text in _texts(seed=7):
        expected = [m.span(1) for m in reference.finditer(text)]
        matched += len(expected)
        assert list(Utf8Text(text).spans(linear, 1)) == expected, text
    assert matched > 100  # the texts reach the pattern, not only its near misses


def test_a_megabyte_of_secret_named_keys_without_a_key_is_nothing() -> None:
    assert SecretDetector().find("secret" * 180_000) == []


TOKEN_PARTS = [
    ["", "x", "-", "é", " ", "glpat-"],
    ["glpat-", "glrt-", "GR1348941", "glcbt-", "glcbt-a1_", "glimt-", "glptt-", "gloas-", "glpa-"],
    ["a" * 20, "A_-9" * 6, "b" * 19, "c" * 25, "d" * 40, "e" * 51, "f" * 64],
    ["", "g", "-", " ", "é", "\u0663", "\u0345", "_", ".", "\n", "\u3000"],
]


def test_gitlab_token_patterns_on_re2_find_the_spans_their_re_patterns_find() -> None:
    rng = random.Random(11)
    texts = ["".join(rng.choice(choices) for choices in TOKEN_PARTS) for _ in range(2000)]
    compiled = {p: secret_detector._linear_or_none(p) for p in secret_detector.all_patterns()}
    gitlab = [(p, fast) for p, fast in compiled.items() if p.label == "gitlab_token" and fast]
    assert len(gitlab) == 6  # glagent's {50,1024} is past RE2's repeat bound: it stays on re
    matched = 0
    for pattern, (linear, group) in gitlab:
        for text in texts:
            expected = [m.span() for m in pattern.regex.finditer(text)]
            matched += len(expected)
            assert list(Utf8Text(text).spans(linear, group)) == expected, (pattern.regex.pattern, text)
    assert matched > 500


def test_a_megabyte_of_one_gitlab_prefix_is_one_token_at_its_end() -> None:
    text = "GR1348941" * 120_000  # only the last prefix has 20 to 50 token characters after it
    found = [(f.label, f.start, f.end) for f in SecretDetector().find(text)]
    assert found == [("gitlab_token", len(text) - 54, len(text))]
