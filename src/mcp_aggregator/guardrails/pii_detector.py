"""``PiiDetector``: personal data in text, each entity checked the way its issuer defines it.

E-mail addresses and IPv4 addresses by pattern; IPv6 addresses by pattern and the
``ipaddress`` module's parser, with a digit and a group of three or more hex digits (so
``12:30:45``, MAC addresses and slices such as ``x[1::2]`` are not addresses); card
numbers by pattern and the Luhn checksum, IBANs by their ISO 13616 check digits
(``python-stdnum``); phone numbers by Google's libphonenumber rules (``phonenumberslite``:
a number valid for its country, read in the rule's ``region`` unless it starts with ``+``).
Nothing is downloaded, no model runs.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Collection, Iterator
from functools import partial
from typing import Final

import phonenumbers
from stdnum import iban, luhn

from mcp_aggregator.guardrails.config import PiiEntity
from mcp_aggregator.guardrails.finding import UNCHECKED, UNJUDGED, Finding, Reading
from mcp_aggregator.guardrails.linear_regex import Utf8Text, linear

_WORD: Final = r"\p{L}\p{N}_"
"""Python's ``\\w`` (letters and digits of every script, and ``_``) as an RE2 class: RE2's own
``\\w`` is ASCII."""

# Each pattern below is Python's ``re`` pattern written for RE2, which has no lookaround: a
# lookbehind becomes the character before, matched (or the start of the text), a lookahead
# the characters after, matched, in groups around the one read (group 1), and the search
# resumes after group 1 (``spans(resume=1)``). The spans are ``re``'s, found in one pass
# of an automaton rather than by ``re`` trying its lookarounds at every character.
_EMAIL: Final = linear(
    # ``(?<![\w.+-])...\b``
    rf"(?:^|[^{_WORD}.+-])([A-Za-z0-9._%+-]{{1,64}}@[A-Za-z0-9-]{{1,63}}(?:\.[A-Za-z0-9-]{{1,63}})*\.[A-Za-z]{{2,24}})"
    rf"(?:[^{_WORD}]|$)"
)
_CARD: Final = linear(
    # ``(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])``
    r"(?:^|[^\p{Nd}-])((?:\p{Nd}[ -]?){12,18}\p{Nd})(?:[^\p{Nd}-]|$)"
)
_CARD_PREFIX: Final = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[068]|6(?:011|5|4[4-9]|22)|35")
_IBAN: Final = linear(
    # ``\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b``
    rf"(?:^|[^{_WORD}])([A-Z]{{2}}\p{{Nd}}{{2}}(?: ?[A-Z0-9]){{11,30}})(?:[^{_WORD}]|$)"
)
_IPV4: Final = linear(
    # ``(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)``
    r"(?:^|[^\p{Nd}.])((?:\p{Nd}{1,3}\.){3}\p{Nd}{1,3})(?:$|[^.\p{Nd}]|\.(?:$|[^\p{Nd}]))"
)
_IPV6: Final = linear(
    # ``(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{0,4})(?![\w:]|\.\w)``
    rf"(?:^|[^{_WORD}:.])((?:[0-9A-Fa-f]{{0,4}}:){{2,7}}(?:(?:\p{{Nd}}{{1,3}}\.){{3}}\p{{Nd}}{{1,3}}|[0-9A-Fa-f]{{0,4}}))"
    rf"(?:$|[^{_WORD}:.]|\.(?:$|[^{_WORD}]))"
)
_IPV6_AROUND: Final = re.compile(
    # ``_IPV6`` for ``re``, whose ``pos`` lets a lookbehind see what precedes it: the few
    # characters around one IPv4 address are read with it.
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{0,4})(?![\w:]|\.\w)"
)
_LONG_GROUP: Final = re.compile(r"[0-9A-Fa-f]{3}")
_DIGITS: Final = re.compile(r"\d")
_MANY_DIGITS: Final = re.compile(r"(?:\d[^\d\n]{0,3}){7}")
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
            reading.take(found, utf8.spans(_EMAIL, 1, resume=1), "EMAIL_ADDRESS", "an e-mail address", length)
            if _DIGITS.search(text) is None:
                return found
        for entity in (PiiEntity.CREDIT_CARD, PiiEntity.IBAN_CODE, PiiEntity.IP_ADDRESS):
            if entity in entities:
                _checked(found, _FINDERS[entity](utf8), reading, length)
        if PiiEntity.PHONE_NUMBER in entities and _MANY_DIGITS.search(text) is not None:
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
        for entity in self._others:
            for candidate, _check in _FINDERS[entity](window) if entity in _FINDERS else _emails(window):
                if candidate.start + left < end and start < candidate.end + left and _check():
                    return True
        return False


Candidate = tuple[Finding, Callable[[], bool]]
"""A finding as its pattern proposes it, and the check that confirms it."""


def _checked(found: list[Finding], candidates: Iterator[Candidate], reading: Reading, length: int) -> None:
    """The candidates that pass their check, while the reading's checks last (past them,
    each candidate is ``unjudged``)."""
    for candidate, check in candidates:
        if not reading.check():
            candidate = Finding(UNJUDGED, candidate.start, candidate.end, UNCHECKED)
        elif not check():
            continue
        if not reading.add(found, candidate, length) or not reading.every:
            return


def _emails(utf8: Utf8Text) -> Iterator[Candidate]:
    for start, end in utf8.spans(_EMAIL, 1, resume=1):
        yield Finding("EMAIL_ADDRESS", start, end), _yes


def _yes() -> bool:
    return True


def _cards(utf8: Utf8Text) -> Iterator[Candidate]:
    text = utf8.text
    for start, end in utf8.spans(_CARD, 1, resume=1):
        digits = _NOT_DIGIT.sub("", text[start:end])
        yield Finding("CREDIT_CARD", start, end, "a card number with a valid checksum"), partial(_is_card, digits)


def _ibans(utf8: Utf8Text) -> Iterator[Candidate]:
    text = utf8.text
    for start, end in utf8.spans(_IBAN, 1, resume=1):
        candidate = Finding("IBAN_CODE", start, end, "an IBAN with valid check digits")
        yield candidate, partial(iban.is_valid, text[start:end])


def _ip_addresses(utf8: Utf8Text) -> Iterator[Candidate]:
    text = utf8.text
    # A text without a pattern's separator has no match: its scan is spared.
    if ":" in text:
        for start, end in utf8.spans(_IPV6, 1, resume=1):
            yield Finding("IP_ADDRESS", start, end, "an IPv6 address"), partial(_is_ipv6, text[start:end])
    if "." not in text:
        return
    for start, end in utf8.spans(_IPV4, 1, resume=1):
        yield Finding("IP_ADDRESS", start, end, "an IPv4 address"), partial(_is_lone_ipv4, text, start, end)


def _is_card(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) is not None and bool(luhn.is_valid(digits))


_NOT_DIGIT: Final = re.compile(r"\D")
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


def _is_ipv6(candidate: str) -> bool:
    if _DIGITS.search(candidate) is None or _LONG_GROUP.search(candidate) is None:
        return False
    try:
        ipaddress.IPv6Address(candidate)
    except ValueError:
        return False
    return True


def _is_lone_ipv4(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is an IPv4 address and not the dotted tail of an IPv6
    address (``::ffff:192.0.2.1``), which is reported as that address."""
    try:
        ipaddress.IPv4Address(text[start:end])
    except ValueError:
        return False
    return not any(
        m.start() <= start and end <= m.end() and _is_ipv6(m[0])
        for m in _IPV6_AROUND.finditer(text, max(0, start - _IPV6_REACH), end + 2)
    )


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
