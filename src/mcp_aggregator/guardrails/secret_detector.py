"""``SecretDetector``: credentials in text, by the plugins of ``detect-secrets``.

The patterns are the plugins' own (``denylist``); each plugin runs only where one of its
literal hints occurs (``AKIA``, ``ghp_``, ``PRIVATE KEY``...), all found in one pass by
RE2's set automaton (``re2.Set``: which hints occur, not where, so a megabyte of one hint
costs what a megabyte without it does), so a text without any costs one scan. Beyond the
plugins: a private-key block is masked whole (the plugin matches its header line only), and
an AWS secret access key is also caught after a ``secret``-named key without quotes (how
JSON and INI results carry it).

The plugins' patterns run on RE2 (``linear``) where it takes them: under Python's engine
``eyJ`` repeated, or ``//`` on one long line, costs the square of the text (the JWT and npm
patterns backtrack over a run from each start), and so does ours for the keyed AWS secret,
its lookahead written as the character after. GitLab's, with a lookahead, stay on ``re``:
each starts at a literal and reads at most 1,024 characters from it. A ``block`` or ``flag``
rule takes each pattern's first finding; a JWT is decoded only within the rule's checks
(``Reading``), past them it is ``unjudged``.
"""

from __future__ import annotations

import importlib
import re
from bisect import bisect_left
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any, Final

import re2

from mcp_aggregator.guardrails.finding import UNCHECKED, UNJUDGED, Finding, Reading
from mcp_aggregator.guardrails.linear_regex import LinearPattern, Utf8Text, linear


@dataclass(frozen=True, slots=True)
class _Pattern:
    label: str
    regex: re.Pattern[str]
    hints: tuple[str, ...]
    """Literal strings one of which a match contains (lower case when ``folded``)."""
    group: int = 0
    """The group that is the secret (0: the whole match)."""
    folded: bool = False
    """Case-blind: its hints count in lower, upper and title case."""
    also: str = ""
    """A second literal a match contains too (``@`` beside ``://``: URLs alone are common)."""


@dataclass(frozen=True, slots=True)
class _Rule:
    """Where patterns come from, and their hints: ``own``, or a plugin's ``denylist``
    (``plugin``: ``module.Class`` under ``detect_secrets.plugins``; ``index``: one of its
    patterns, None: all). A plugin is imported at the first text holding one of its hints:
    ``detect_secrets`` brings ``requests`` (4.8 MB with ``urllib3`` and ``charset_normalizer``),
    which a gateway never uses."""

    label: str
    hints: tuple[str, ...]
    plugin: str = ""
    index: int | None = 0
    own: re.Pattern[str] | None = None
    group: int = 0
    folded: bool = False
    also: str = ""


@cache
def _plugin_class(name: str) -> Any:
    module, _, cls = name.rpartition(".")
    return getattr(importlib.import_module(f"detect_secrets.plugins.{module}"), cls)


@cache
def _patterns_of(rule: _Rule) -> tuple[_Pattern, ...]:
    if rule.own is not None:
        regexes: tuple[re.Pattern[str], ...] = (rule.own,)
    else:
        # ``denylist``: a class attribute, typed in the base class as a property.
        denylist: tuple[re.Pattern[str], ...] = tuple(vars(_plugin_class(rule.plugin))["denylist"])
        regexes = denylist if rule.index is None else (denylist[rule.index],)
    return tuple(_Pattern(rule.label, regex, rule.hints, rule.group, rule.folded, rule.also) for regex in regexes)


_AWS_SECRET_KEYED: Final = re.compile(
    r"secret[\w-]{0,20}[\"']?\s*[:=]\s*[\"']?([0-9a-zA-Z/+]{40})(?![0-9a-zA-Z/+])", re.IGNORECASE
)
_SPACE: Final = r"[\t\n\x0b\f\r\x1c-\x1f \x85\xa0\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
"""Python's ``\\s`` as an RE2 class (RE2's own is ASCII)."""
_KEY: Final = r"0-9a-zA-Z/+\x{130}\x{131}\x{17f}\x{212a}"
"""What ``[0-9a-zA-Z/+]`` matches under ``re.IGNORECASE`` (U+0130, U+0131, U+017F and U+212A fold into it)."""
_AWS_SECRET_KEYED_LINEAR: Final = (
    # ``_AWS_SECRET_KEYED`` for RE2: its lookahead matched as the character after the key (or
    # the end), which no match starts with (``s`` is a key character); its case-blindness
    # spelt out, since RE2's folding differs from Python's on a few letters. Under ``re``
    # each ``secret`` costs a backtrack over the 20 characters after it: 1 MB of ``secret``
    # took 135 ms.
    rf"(?i:secret)[\p{{L}}\p{{N}}_-]{{0,20}}[\"']?{_SPACE}*[:=]{_SPACE}*[\"']?([{_KEY}]{{40}})(?:[^{_KEY}]|$)"
)
_HEX_DIGEST: Final = re.compile(r"[0-9a-f]+|[0-9A-F]+")
_KEY_BLOCK_END: Final = re.compile(r"-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----")
_KEY_BLOCK_START: Final = re.compile(r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----")

_GITLAB_HINTS: Final = (
    "glpat-", "gldt-", "glft-", "glsoat-", "glrt-", "GR1348941", "glcbt-", "glimt-", "glptt-", "glagent-", "gloas-",
)  # fmt: skip

_RULES: Final = (
    _Rule("aws_access_key", ("AKIA", "ASIA", "ABIA", "ACCA", "A3T"), "aws.AWSKeyDetector", 0),
    _Rule("aws_secret_key", ("aws",), "aws.AWSKeyDetector", 1, group=1, folded=True),
    _Rule("aws_secret_key", ("secret",), own=_AWS_SECRET_KEYED, group=1, folded=True),
    _Rule("github_token", ("ghp_", "gho_", "ghu_", "ghs_", "ghr_"), "github_token.GitHubTokenDetector", 0),
    _Rule("github_token", ("github_pat_",), own=re.compile(r"github_pat_[A-Za-z0-9_]{60,}")),
    _Rule("gitlab_token", _GITLAB_HINTS, "gitlab_token.GitLabTokenDetector", None),
    _Rule("slack_token", ("xox",), "slack.SlackDetector", 0, folded=True),
    _Rule("slack_webhook", ("hooks.slack.com",), "slack.SlackDetector", 1),
    _Rule("stripe_key", ("k_live_",), "stripe.StripeDetector", 0),
    _Rule("private_key", ("PRIVATE KEY", "PuTTY-User-Key-File"), "private_key.PrivateKeyDetector", None),
    _Rule("jwt", ("eyJ",), "jwt.JwtTokenDetector", 0),
    _Rule("basic_auth_password", ("://",), "basic_auth.BasicAuthDetector", 0, group=1, also="@"),
    _Rule("openai_key", ("T3BlbkFJ",), "openai.OpenAIDetector", 0),
    _Rule("sendgrid_key", ("SG.",), "sendgrid.SendGridDetector", 0),
    _Rule("npm_token", ("_authToken",), "npm.NpmDetector", 0, group=1),
    _Rule("pypi_token", ("pypi-",), "pypi_token.PypiTokenDetector", None),
    _Rule("azure_storage_key", ("AccountKey=",), "azure_storage_key.AzureStorageKeyDetector", 0),
)


def all_patterns() -> tuple[_Pattern, ...]:
    """Every rule's patterns, the plugins imported."""
    return tuple(pattern for rule in _RULES for pattern in _patterns_of(rule))


_WORD_END: Final = r"(?!\w)"


@cache
def _linear_or_none(pattern: _Pattern) -> tuple[LinearPattern, int] | None:
    """The pattern compiled by RE2 and the group that is its secret there, or None where it
    needs backtracking (a lookahead): those start at a literal prefix and read a bounded
    span from it. A trailing ``(?!\\w)`` (GitLab's tokens) is matched as the character
    after, or the end; it is never where a token starts (each starts with a word character),
    so the search may resume after it.

    Compiled the first time a text holds one of the pattern's hints, then kept: the 30
    automata take some 1.5 MB, and most gateways' texts (the registry's redaction at every
    start among them) hold no hint of most plugins."""
    regex, source, group = pattern.regex, pattern.regex.pattern, pattern.group
    if regex is _AWS_SECRET_KEYED:
        return linear(_AWS_SECRET_KEYED_LINEAR), group
    if source.endswith(_WORD_END) and group == 0:
        source, group = rf"({source.removesuffix(_WORD_END)})(?:[^\p{{L}}\p{{N}}_]|$)", 1
    try:
        fast = linear(source, ignore_case=bool(regex.flags & re.IGNORECASE), dot_all=bool(regex.flags & re.DOTALL))
    except ValueError:
        return None
    return fast, group


def _spans(regex: re.Pattern[str], text: str, group: int) -> Iterator[tuple[int, int]]:
    for match in regex.finditer(text):
        span = match.span(group)
        if span[0] >= 0:
            yield span


class SecretDetector:
    """See the module docstring."""

    def __init__(self, rules: Sequence[_Rule] = _RULES) -> None:
        self._rules = tuple(rules)
        self._hint_set: tuple[Any, tuple[str, ...]] | None = None
        """The hints' set and the hint of each of its indices, built at the first text."""
        self._needs = {hint: r.also for r in rules if r.also for hint in r.hints}
        """Hints that count only beside a second literal (``://`` with ``@``)."""

    def may_find(self, text: str) -> bool:
        return bool(self._hints(text, text.encode()))

    def find(self, text: str, reading: Reading | None = None) -> list[Finding]:
        encoded = Utf8Text(text)
        present = self._hints(text, encoded.data)
        if not present:
            return []
        reading = Reading() if reading is None else reading
        found: list[Finding] = []
        ends = _BlockEnds(text)
        for rule in self._rules:
            if any(hint in present for hint in rule.hints):
                for pattern in _patterns_of(rule):
                    self._find_one(pattern, _linear_or_none(pattern), encoded, ends, reading, found)
        return found

    @staticmethod
    def _find_one(
        pattern: _Pattern,
        fast: tuple[LinearPattern, int] | None,
        encoded: Utf8Text,
        ends: _BlockEnds,
        reading: Reading,
        found: list[Finding],
    ) -> None:
        text, label = encoded.text, pattern.label
        length, reason = len(text), f"looks like a {label.replace('_', ' ')}"
        spans = encoded.spans(*fast) if fast is not None else _spans(pattern.regex, text, pattern.group)
        for start, end in spans:
            if start == end:
                continue
            if label == "jwt":
                if not reading.check():
                    finding = Finding(UNJUDGED, start, end, UNCHECKED)
                elif _plugin_class("jwt.JwtTokenDetector").is_formally_valid(text[start:end]):
                    finding = Finding(label, start, end, reason)
                else:
                    continue
            elif label == "aws_secret_key" and _HEX_DIGEST.fullmatch(text, start, end):
                continue  # a SHA-1 hex digest has the length of a secret key, not its alphabet
            elif label == "private_key":
                finding = Finding(label, *_key_block(text, start, end, ends), reason)
            else:
                finding = Finding(label, start, end, reason)
            if not reading.add(found, finding, length) or not reading.every:
                return

    def _hints(self, text: str, data: bytes) -> set[str]:
        """The hints that occur in ``text`` (``data``: it in UTF-8; ``://`` only beside an ``@``)."""
        if self._hint_set is None:
            self._hint_set = _hint_set(self._rules)
        hint_set, hint_of = self._hint_set
        present = {hint_of[i] for i in hint_set.Match(data) or ()}
        for hint, also in self._needs.items():
            if hint in present and also not in text:
                present.discard(hint)
        return present


def _cased(hint: str, rule: _Rule) -> Iterable[tuple[str, str]]:
    """``(what to look for, the hint it stands for)``."""
    if not rule.folded:
        return [(hint, hint)]
    return [(variant, hint) for variant in {hint.lower(), hint.upper(), hint.title()}]


@cache
def _hint_set(rules: tuple[_Rule, ...]) -> tuple[Any, tuple[str, ...]]:
    """An RE2 set of the rules' hints (``re2.Set``: its ``Match`` gives the indices of those
    that occur) and the hint each index stands for; built at the first text, once for all the
    detectors of the same patterns (the registry's, the approvals', the guardrails').

    One pass finds every hint: a text is read once, whatever its size and however many
    plugins there are. A case-blind pattern's hints are looked for as written in lower,
    upper and title case (``secret``, ``SECRET``, ``Secret``): cheaper than a lower-cased
    copy of every text, and how keys are written in practice."""
    words = [word for r in rules for hint in r.hints for word in _cased(hint, r)]
    options = re2.Options()
    options.log_errors = False
    literals = re2.Set.SearchSet(options)
    hints: list[str] = []
    for word, hint in words:
        literals.Add(re2.escape(word))
        hints.append(hint)
    literals.Compile()
    return literals, tuple(hints)


class _BlockEnds:
    """The ``-----END ...PRIVATE KEY-----`` lines of a text, found once, in order, as they
    are asked for: a text of many headers and no end is read once, not once per header."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._starts: list[int] = []
        self._ends: list[int] = []
        self._searched = 0
        """Every end line before this offset is in the lists."""

    def after(self, position: int) -> int:
        """The end of the first end line at or after ``position`` (the text's length: none)."""
        while self._searched < len(self._text) and (not self._starts or self._starts[-1] < position):
            tail = _KEY_BLOCK_END.search(self._text, self._searched)
            if tail is None:
                self._searched = len(self._text)
                break
            self._searched = tail.end()
            self._starts.append(tail.start())
            self._ends.append(tail.end())
        index = bisect_left(self._starts, position)
        return self._ends[index] if index < len(self._ends) else len(self._text)


def _key_block(text: str, start: int, end: int, ends: _BlockEnds) -> tuple[int, int]:
    """The whole ``-----BEGIN ... PRIVATE KEY-----`` … ``-----END ...-----`` block around a header match."""
    head = _KEY_BLOCK_START.search(text, max(0, start - 16), end + 16)
    if head is None:
        return start, end
    return head.start(), ends.after(head.end())
