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
from collections.abc import Collection
from typing import Final

import phonenumbers
from stdnum import iban, luhn

from mcp_aggregator.guardrails.config import PiiEntity
from mcp_aggregator.guardrails.finding import Finding

_EMAIL: Final = re.compile(
    r"(?<![\w.+-])[A-Za-z0-9._%+-]{1,64}@[A-Za-z0-9-]{1,63}(?:\.[A-Za-z0-9-]{1,63})*\.[A-Za-z]{2,24}\b"
)
_CARD: Final = re.compile(r"(?<![\d-])(?:\d[ -]?){12,18}\d(?![\d-])")
_CARD_PREFIX: Final = re.compile(r"4|5[1-5]|2[2-7]|3[47]|3[068]|6(?:011|5|4[4-9]|22)|35")
_IBAN: Final = re.compile(r"\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]){11,30}\b")
_IPV4: Final = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?!\.?\d)")
_IPV6: Final = re.compile(
    r"(?<![\w:.])(?:[0-9A-Fa-f]{0,4}:){2,7}(?:(?:\d{1,3}\.){3}\d{1,3}|[0-9A-Fa-f]{0,4})(?![\w:]|\.\w)"
)
_LONG_GROUP: Final = re.compile(r"[0-9A-Fa-f]{3}")
_DIGITS: Final = re.compile(r"\d")
_MANY_DIGITS: Final = re.compile(r"(?:\d[^\d\n]{0,3}){7}")


class PiiDetector:
    """Finds ``entities`` (every entity when empty); see the module docstring."""

    def __init__(self, entities: Collection[PiiEntity] = (), region: str = "US") -> None:
        self.entities = frozenset(entities) if entities else frozenset(PiiEntity)
        self.region = region.upper()

    def may_find(self, text: str) -> bool:
        if PiiEntity.EMAIL_ADDRESS in self.entities and "@" in text:
            return True
        return _DIGITS.search(text) is not None

    def find(self, text: str) -> list[Finding]:
        entities = self.entities
        found: list[Finding] = []
        if PiiEntity.EMAIL_ADDRESS in entities and "@" in text:
            found.extend(Finding("EMAIL_ADDRESS", *m.span(), "an e-mail address") for m in _EMAIL.finditer(text))
        if _DIGITS.search(text) is None:
            return found
        if PiiEntity.CREDIT_CARD in entities:
            for match in _CARD.finditer(text):
                digits = re.sub(r"\D", "", match.group(0))
                if 13 <= len(digits) <= 19 and _CARD_PREFIX.match(digits) and luhn.is_valid(digits):
                    found.append(Finding("CREDIT_CARD", *match.span(), "a card number with a valid checksum"))
        if PiiEntity.IBAN_CODE in entities:
            for match in _IBAN.finditer(text):
                if iban.is_valid(match.group(0)):
                    found.append(Finding("IBAN_CODE", *match.span(), "an IBAN with valid check digits"))
        if PiiEntity.IP_ADDRESS in entities:
            found.extend(_ip_addresses(text))
        if PiiEntity.PHONE_NUMBER in entities and _MANY_DIGITS.search(text) is not None:
            taken = [(f.start, f.end) for f in found]
            for number in phonenumbers.PhoneNumberMatcher(text, self.region):
                if not any(start < number.end and number.start < end for start, end in taken):
                    found.append(Finding("PHONE_NUMBER", number.start, number.end, "a valid phone number"))
        return found


def _ip_addresses(text: str) -> list[Finding]:
    found = [Finding("IP_ADDRESS", *m.span(), "an IPv6 address") for m in _IPV6.finditer(text) if _is_ipv6(m[0])]
    for match in _IPV4.finditer(text):
        try:
            ipaddress.IPv4Address(match.group(0))
        except ValueError:
            continue
        # The dotted tail of an IPv6 address (``::ffff:192.0.2.1``) is part of that finding.
        if not any(f.start <= match.start() and match.end() <= f.end for f in found):
            found.append(Finding("IP_ADDRESS", *match.span(), "an IPv4 address"))
    return found


def _is_ipv6(candidate: str) -> bool:
    if _DIGITS.search(candidate) is None or _LONG_GROUP.search(candidate) is None:
        return False
    try:
        ipaddress.IPv6Address(candidate)
    except ValueError:
        return False
    return True
