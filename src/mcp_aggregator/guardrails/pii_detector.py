"""``PiiDetector``: personal data in text, each entity checked the way its issuer defines it.

E-mail addresses by pattern; IP addresses by pattern and the rules of the ``ipaddress``
module's parser (written out: it takes some 12 µs an address), IPv6 ones only with a digit
and a group of three or more hex digits (so ``12:30:45``, MAC addresses and slices such as
``x[1::2]`` are not addresses); card
numbers by pattern and the Luhn checksum, IBANs by their ISO 13616 check digits
(``python-stdnum``); phone numbers by Google's libphonenumber rules (``phonenumberslite``:
a number valid for its country, read in the rule's ``region`` unless it starts with ``+``).
Nothing is downloaded, no model runs.
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Final

import phonenumbers
from stdnum import iban, luhn
from stdnum.exceptions import ValidationError

from mcp_aggregator.guardrails.config import PiiEntity
from mcp_aggregator.guardrails.finding import UNCHECKED, UNJUDGED, Finding, Reading
from mcp_aggregator.guardrails.linear_regex import Framed, Utf8Text, linear

_WORD: Final = r"\p{L}\p{N}_"
"""Python's ``\\w`` (letters and digits of every script, and ``_``) as an RE2 class: RE2's own
``\\w`` is ASCII."""

# Each pattern below is Python's ``re`` pattern (in its comment) written for RE2, which has
# no lookaround: the lookbehind is the character before, matched (or the text's start), the
# lookahead the characters after, and the search resumes after the core (``Framed``). The
# spans are ``re``'s, found in one pass of an automaton, not by ``re`` trying its
# lookarounds at every character.
_EMAIL: Final = Framed.of(
    # ``(?<![\w.+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}\b``
    rf"[^{_WORD}.+-]",
    r"[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}",
    rf"(?:[^{_WORD}]|$)",
)
_CARD: Final = Framed.of(
    # ``(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])``
    r"[^\p{Nd}-]",
    r"(?:\p{Nd}[ -]?){12,18}\p{Nd}",
    r"(?:[^\p{Nd}-]|$)",
)
_IBAN: Final = Framed.of(
    # ``\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b``
    rf"[^{_WORD}]",
    r"[A-Z]{2}\p{Nd}{2}(?: ?[A-Z0-9]){11,30}",
    rf"(?:[^{_WORD}]|$)",
)
_IPV4: Final = Framed.of(
    # ``(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)``
    r"[^\p{Nd}.]",
    r"(?:\p{Nd}{1,3}\.){3}\p{Nd}{1,3}",
    r"(?:$|[^.\p{Nd}]|\.(?:$|[^\p{Nd}]))",
    dotted=True,
)
_IPV6_RE: Final = r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{0,4})(?![\w:]|\.\w)"
_IPV6: Final = Framed.of(
    rf"[^{_WORD}:.]",
    r"(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\p{Nd}{1,3}\.){3}\p{Nd}{1,3}|[0-9A-Fa-f]{0,4})",
    rf"(?:$|[^{_WORD}:.]|\.(?:$|[^{_WORD}]))",
    dotted=True,
)
_IPV6_AROUND: Final = re.compile(_IPV6_RE)
"""``_IPV6`` for ``re``, whose ``pos`` lets a lookbehind see what precedes it: the few
characters around one IPv4 address are read with it."""
_CARD_PREFIX: Final = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[068]|6(?:011|5|4[4-9]|22)|35")
_LONG_GROUP: Final = re.compile(r"[0-9A-Fa-f]{3}")
_HEX_GROUP: Final = re.compile(r"[0-9A-Fa-f]+")
_DIGITS: Final = re.compile(r"\d")
_DIGIT_RUN: Final = linear(
    # Unicode classes: in RE2's default 8 MiB its automaton gives out on a megabyte of digits.
    r"\p{Nd}(?:[^\p{Nd}\p{L}\n]{0,3}\p{Nd}){6,}",
    memory=64 << 20,
)
_PHONE_CONTEXT: Final = 16


class PiiDetector:
    """Finds ``entities`` (every entity when empty); see the module docstring."""

    def __init__(self, entities: Collection[PiiEntity] = (), region: str = "US") -> None:
        self.entities = frozenset(entities) if entities else frozenset(PiiEntity)
        self.region = region.upper()
        self._others = self.entities & (_OTHERS | {PiiEntity.EMAIL_ADDRESS})

    def may_find(self, text: str) -> bool:
        if PiiEntity.EMAIL_ADDRESS in self.entities and "@" in text:
            return True
        return _DIGITS.search(text) is not None

    def find(self, text: str, reading: Reading | None = None) -> list[Finding]:
        reading = Reading() if reading is None else reading
        entities, length = self.entities, len(text)
        found: list[Finding] = []
        mailed = PiiEntity.EMAIL_ADDRESS in entities and "@" in text
        if not mailed and _DIGITS.search(text) is None:
            return found
        utf8 = Utf8Text(text)  # encoded once for every pattern below
        if mailed:
            spans = utf8.framed_spans(_EMAIL)
            reading.take(found, spans, "EMAIL_ADDRESS", "an e-mail address", length)
            if _DIGITS.search(text) is None:
                return found
        for entity in (PiiEntity.CREDIT_CARD, PiiEntity.IBAN_CODE, PiiEntity.IP_ADDRESS):
            if entity in entities:
                _checked(found, _FINDERS[entity](utf8), reading, text)
        if PiiEntity.PHONE_NUMBER in entities:
            self._phones(utf8, reading, found)
        return found

    def _phones(self, utf8: Utf8Text, reading: Reading, found: list[Finding]) -> None:
        """The phone numbers in the windows around runs of digits, each window read by
        libphonenumber while the reading's parsed characters last, the rest ``unjudged``."""
        text = utf8.text
        length = len(text)
        for start, end, core_start, core_end in _windows(utf8):
            if not reading.parse(end - start):
                if not reading.add(found, Finding(UNJUDGED, core_start, core_end, UNCHECKED), length):
                    return
                if not reading.every:
                    return
                continue
            for number in phonenumbers.PhoneNumberMatcher(text[start:end], self.region):
                span = (start + number.start, start + number.end)
                if self._others and self._taken(text, *span):
                    continue
                finding = Finding("PHONE_NUMBER", *span, "a valid phone number")
                if not reading.add(found, finding, length) or not reading.every:
                    return

    def _taken(self, text: str, start: int, end: int) -> bool:
        """Whether a card number, IBAN or IP address (of the entities looked for) overlaps
        ``start:end``: looked for in a window around it, wider by more than the longest of
        them, so a match cut short by the window's edge cannot reach the span."""
        left = max(0, start - _ENTITY_REACH)
        window = Utf8Text(text[left : end + _ENTITY_REACH])
        start, end = start - left, end - left
        for entity in self._others:
            candidates = _FINDERS[entity](window) if entity in _FINDERS else _emails(window)
            for other_start, other_end, kind in candidates:
                if other_start < end and start < other_end and kind.check(window.text, other_start, other_end):
                    return True
        return False


@dataclass(frozen=True, slots=True)
class _Kind:
    """What a pattern proposes: its label, the reason given, and the check that confirms a
    candidate (``check(text, start, end)``)."""

    label: str
    reason: str
    check: Callable[[str, int, int], bool]


Candidate = tuple[int, int, _Kind]
"""Where a pattern proposes an entity, and which."""


def _checked(found: list[Finding], candidates: Iterator[Candidate], reading: Reading, text: str) -> None:
    """The candidates that pass their check, while the reading's checks last (past them,
    each candidate is ``unjudged``)."""
    length = len(text)
    for start, end, kind in candidates:
        if not reading.check():
            finding = Finding(UNJUDGED, start, end, UNCHECKED)
        elif kind.check(text, start, end):
            finding = Finding(kind.label, start, end, kind.reason)
        else:
            continue
        if not reading.add(found, finding, length) or not reading.every:
            return


def _is_card(text: str, start: int, end: int) -> bool:
    digits = text[start:end].replace(" ", "").replace("-", "")  # a candidate's only other characters
    return 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) is not None and bool(luhn.is_valid(digits))


def _is_iban(text: str, start: int, end: int) -> bool:
    number = text[start:end].replace(" ", "")  # a candidate's only separator
    return _iban_checksum(number) and _valid_iban(number)


_BASE36: Final = {ord(letter): str(value) for value, letter in enumerate(string.ascii_uppercase, 10)}


def _iban_checksum(number: str) -> bool:
    """ISO 7064 mod 97-10 over ``number`` (a candidate: capitals, digits), as ``stdnum``
    checks it first, in one ``int``: ``stdnum`` reads it a character at a time (some 15 µs)."""
    try:
        return int((number[4:] + number[:4]).translate(_BASE36)) % 97 == 1
    except ValueError:
        return False


def _valid_iban(number: str) -> bool:
    """``stdnum``'s ``iban.validate`` past its checksum, the country's part looked up once
    per country: its registry lookup and format pattern cost some 25 µs a number."""
    bban, module = _iban_country(number[:2])
    if bban is None or not bban.match(number[4:]):
        return False
    if module is not None:
        try:
            module.validate(number)
        except ValidationError:
            return False
    return True


@lru_cache(maxsize=1024)  # candidates start with two capitals: 676 countries at most
def _iban_country(country: str) -> tuple[re.Pattern[str] | None, Any]:
    """The format of ``country``'s account numbers (None: no such country) and its own
    module's ``validate``, from ``stdnum``'s registry (one entry per country code)."""
    found = iban._ibandb.info(country)[0][1]
    if not found:
        return None, None
    return iban._struct_to_re(found.get("bban", "")), iban._get_cc_module(country)


def _is_ipv6(text: str, start: int, end: int) -> bool:
    return _valid_ipv6(text[start:end])


def _valid_ipv6(candidate: str) -> bool:
    if _DIGITS.search(candidate) is None or _LONG_GROUP.search(candidate) is None:
        return False
    return _parses_as_ipv6(candidate)


def _parses_as_ipv6(candidate: str) -> bool:
    """``ipaddress.IPv6Address``'s verdict on a candidate (``_IPV6``'s shape: groups of up to
    four hex digits and colons, perhaps a dotted tail), its rules without its objects: it
    parses in some 12 µs, this in 2."""
    parts = candidate.split(":")
    if "." in parts[-1]:
        if not _valid_ipv4(parts[-1]):
            return False
        parts[-1:] = ["0", "0"]  # the tail stands for two groups
    if len(parts) > 9:
        return False
    inner = [i for i in range(1, len(parts) - 1) if not parts[i]]
    if len(inner) > 1:
        return False  # two ``::``
    if inner:
        high, low = inner[0], len(parts) - inner[0] - 1
        if not parts[0]:
            high -= 1
            if high:
                return False  # a leading ``:`` that is not ``::``
        if not parts[-1]:
            low -= 1
            if low:
                return False
        if high + low > 7:
            return False  # ``::`` stands for no group
        groups = parts[:high] + parts[len(parts) - low :]
    else:
        if len(parts) != 8:
            return False
        groups = parts
    return all(0 < len(group) <= 4 and _HEX_GROUP.fullmatch(group) for group in groups)


def _valid_ipv4(candidate: str) -> bool:
    """``ipaddress.IPv4Address``'s verdict, its rules without its objects: four groups of one
    to three ASCII digits, no leading zero, at most 255 (it parses in some 5 µs, this in 1)."""
    octets = candidate.split(".")
    return len(octets) == 4 and all(
        octet.isascii()
        and octet.isdigit()
        and len(octet) <= 3
        and (len(octet) == 1 or octet[0] != "0")
        and int(octet) <= 255
        for octet in octets
    )


def _is_lone_ipv4(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is an IPv4 address and not the dotted tail of an IPv6
    address (``::ffff:192.0.2.1``), which is reported as that address."""
    if not _valid_ipv4(text[start:end]):
        return False
    if ":" not in text[max(0, start - _IPV6_REACH) : start]:
        return True  # an IPv6 address holding it has a colon before it
    return not any(
        m.start() <= start and end <= m.end() and _is_ipv6(text, *m.span())
        for m in _IPV6_AROUND.finditer(text, max(0, start - _IPV6_REACH), end + 2)
    )


def _yes(text: str, start: int, end: int) -> bool:
    return True


_EMAIL_KIND: Final = _Kind("EMAIL_ADDRESS", "an e-mail address", _yes)
_CARD_KIND: Final = _Kind("CREDIT_CARD", "a card number with a valid checksum", _is_card)
_IBAN_KIND: Final = _Kind("IBAN_CODE", "an IBAN with valid check digits", _is_iban)
_IPV6_KIND: Final = _Kind("IP_ADDRESS", "an IPv6 address", _is_ipv6)
_IPV4_KIND: Final = _Kind("IP_ADDRESS", "an IPv4 address", _is_lone_ipv4)


def _emails(utf8: Utf8Text) -> Iterator[Candidate]:
    for start, end in utf8.framed_spans(_EMAIL):
        yield start, end, _EMAIL_KIND


def _cards(utf8: Utf8Text) -> Iterator[Candidate]:
    for start, end in utf8.framed_spans(_CARD):
        yield start, end, _CARD_KIND


def _ibans(utf8: Utf8Text) -> Iterator[Candidate]:
    for start, end in utf8.framed_spans(_IBAN):
        yield start, end, _IBAN_KIND


def _ip_addresses(utf8: Utf8Text) -> Iterator[Candidate]:
    # A text without a pattern's separator has no match: its scan is spared.
    if ":" in utf8.text:
        for start, end in utf8.framed_spans(_IPV6):
            yield start, end, _IPV6_KIND
    if "." in utf8.text:
        for start, end in utf8.framed_spans(_IPV4):
            yield start, end, _IPV4_KIND


_FINDERS: Final[dict[PiiEntity, Callable[[Utf8Text], Iterator[Candidate]]]] = {
    PiiEntity.CREDIT_CARD: _cards,
    PiiEntity.IBAN_CODE: _ibans,
    PiiEntity.IP_ADDRESS: _ip_addresses,
}
_OTHERS: Final = frozenset(_FINDERS)
_ENTITY_REACH: Final = 200
"""More than the longest card number (37 characters), IBAN (64), IPv6 address (50) or
e-mail address local part (64) the patterns match."""
_IPV6_REACH: Final = 64


def _windows(utf8: Utf8Text) -> Iterator[tuple[int, int, int, int]]:
    """``(start, end, core_start, core_end)``: each run of seven or more digits (the core: gaps
    of up to three other characters, on one line) with up to ``_PHONE_CONTEXT`` characters
    on each side for what libphonenumber reads around a number (a ``+``, an extension, the
    letter before it), never into the next or previous run: a run is read once, the
    characters between two runs at most twice, however close the numbers stand."""
    previous_end = 0
    cores = utf8.spans(_DIGIT_RUN)
    core = next(cores, None)
    while core is not None:
        following = next(cores, None)
        limit = following[0] if following is not None else len(utf8.text)
        yield max(previous_end, core[0] - _PHONE_CONTEXT), min(limit, core[1] + _PHONE_CONTEXT), core[0], core[1]
        previous_end = core[1]
        core = following
