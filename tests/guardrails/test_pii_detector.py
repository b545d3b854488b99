"""The pii detector's RE2 patterns find exactly the spans its former ``re`` patterns found:
lookarounds written as the characters around a match (``Framed``), held against ``re`` on
texts built from the pieces each pattern turns on and the characters around them."""

from __future__ import annotations

import ipaddress
import random
import re

import pytest
from stdnum import iban

from mcp_aggregator.guardrails import pii_detector
from mcp_aggregator.guardrails.linear_regex import Framed, Utf8Text

# The patterns as Python's ``re`` reads them, lookarounds and all: the reference.
REFERENCE = {
    "email": r"(?<![\w.+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}\b",
    "card": r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])",
    "iban": r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b",
    "ipv4": r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)",
    "ipv6": r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{0,4})(?![\w:]|\.\w)",
}
LINEAR: dict[str, Framed] = {
    "email": pii_detector._EMAIL,
    "card": pii_detector._CARD,
    "iban": pii_detector._IBAN,
    "ipv4": pii_detector._IPV4,
    "ipv6": pii_detector._IPV6,
}
# Pieces of what each pattern turns on, and its neighbours: separators, word characters of
# other scripts (Python's ``\w``), digits of other scripts (``\d``), a combining mark (not ``\w``).
NEIGHBOURS = ["x", "_", "é", "\u0663", "\u0301", " ", ".", "-", ":", "\n"]
PIECES = {
    "email": ["ann", "@", "example", ".", "com", "+", "%", "a.b", "Z9", "-"],
    "card": ["4111", "1", "12", " ", "-", "0000", "9"],
    "iban": ["DE", "89", "3704", " ", "0044", "GB", "A", "Z", "7"],
    "ipv4": ["10", "1", "255", ".", ".", ".", "3", "1234", "0.", "1.2.3.4"],
    "ipv6": ["fe80", ":", "::", "1", "db8", "ffff", "192.0.2.1", "g", "A", "."],
}
CASES = 3000


def _texts(pieces: list[str], seed: int) -> list[str]:
    rng = random.Random(seed)
    choices = pieces * 6 + NEIGHBOURS
    return ["".join(rng.choice(choices) for _ in range(rng.randint(1, 24))) for _ in range(CASES)]


@pytest.mark.parametrize("name", sorted(REFERENCE))
def test_each_linear_pattern_finds_the_spans_its_re_pattern_finds(name: str) -> None:
    reference = re.compile(REFERENCE[name])
    for text in _texts(PIECES[name], seed=len(name)):
        expected = [m.span() for m in reference.finditer(text)]
        assert list(Utf8Text(text).framed_spans(LINEAR[name])) == expected, text
        assert list(Utf8Text(text).spans(LINEAR[name].grouped, 1, resume=1)) == expected, text


@pytest.mark.parametrize(
    ("name", "text", "spans"),
    [
        ("card", "4111 1111 1111 1111", [(0, 19)]),
        ("card", "-4111 1111 1111 1111", []),
        ("card", "4111 1111 1111 1111-", []),
        ("card", "x4111111111111111 4111111111111111x", [(1, 17), (18, 34)]),
        ("iban", "DE89 3704 0044 0532 0130 00", [(0, 27)]),
        ("iban", "éDE89370400440532013000", []),
        ("ipv4", "10.1.2.3 10.1.2.3.4 1.2.3.4.", [(0, 8), (20, 27)]),
        ("ipv6", "::ffff:192.0.2.1 fe80::1. x::y", [(0, 16), (17, 24)]),
    ],
)
def test_lookarounds_read_the_characters_around_a_match(name: str, text: str, spans: list[tuple[int, int]]) -> None:
    assert list(Utf8Text(text).framed_spans(LINEAR[name])) == spans
    assert [m.span() for m in re.finditer(REFERENCE[name], text)] == spans


VALID_IBANS = [
    "DE89370400440532013000",
    "MT84MALT011000012345MTLCAST001S",
    "GB82WEST12345698765432",
    "FR1420041010050500013M02606",
    "NL91ABNA0417164300",
    "ES9121000418450200051332",
]


def test_an_iban_candidate_is_judged_as_stdnum_judges_it() -> None:
    # The checksum is read in one int before stdnum's whole check: the same verdict, cheaper.
    rng = random.Random(5)
    agreed = valid = 0
    for _ in range(CASES):
        chars = list(rng.choice(VALID_IBANS))
        for _ in range(rng.randint(0, 2)):
            chars[rng.randrange(len(chars))] = rng.choice("ABCXYZ0123456789\u0663")
        if rng.random() < 0.3:
            chars[:2] = rng.choice(["DE", "GB", "XX", "MT"])
        number = "".join(chars)
        if rng.random() < 0.5:
            number = " ".join(number[i : i + 4] for i in range(0, len(number), 4))
        expected = bool(iban.is_valid(number))
        valid += expected
        agreed += pii_detector._is_iban(number, 0, len(number)) == expected
    assert agreed == CASES
    assert valid > 500


def test_an_ipv4_candidate_is_judged_as_ipaddress_judges_it() -> None:
    rng = random.Random(9)
    octets = ["0", "00", "01", "1", "9", "10", "99", "100", "199", "255", "256", "300", "999", "0255", "", "g"]
    octets += ["\u0663", "1\u0663", "\u00b2"]  # an Arabic-Indic digit, a superscript two: not ASCII digits
    for _ in range(CASES):
        candidate = ".".join(rng.choice(octets) for _ in range(rng.choice((3, 4, 4, 4, 5))))
        try:
            ipaddress.IPv4Address(candidate)
        except ValueError:
            expected = False
        else:
            expected = True
        assert pii_detector._valid_ipv4(candidate) == expected, candidate


def test_an_ipv6_candidate_is_judged_as_ipaddress_judges_it() -> None:
    rng = random.Random(13)
    groups = ["", "", "0", "1", "db8", "fe80", "ffff", "12345", "abcd", "FFFF", "g"]
    tails = ["", "", "1.2.3.4", "192.0.2.1", "01.2.3.4", "256.1.1.1", "\u0663.1.1.1"]
    candidates = []
    for _ in range(CASES * 3):
        parts = [rng.choice(groups) for _ in range(rng.randint(3, 10))]
        candidates.append(":".join(parts) + rng.choice(tails))
    candidates += [c[s:e] for c in _texts(PIECES["ipv6"], 99) for s, e in Utf8Text(c).framed_spans(LINEAR["ipv6"])]
    valid = 0
    for candidate in candidates:
        try:
            ipaddress.IPv6Address(candidate)
        except ValueError:
            expected = False
        else:
            expected = True
        valid += expected
        assert pii_detector._parses_as_ipv6(candidate) == expected, candidate
    assert valid > 300
