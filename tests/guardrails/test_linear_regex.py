"""``Utf8Text.spans`` reads RE2's matches without its wrapper's per-match objects: it must give
the very spans the wrapper's ``finditer`` gives, in characters, whatever the text's script."""

from __future__ import annotations

import re

import pytest

from mcp_aggregator.guardrails.linear_regex import Framed, Utf8Text, linear


@pytest.mark.parametrize(
    ("pattern", "text"),
    [
        ("a", "aaa"),
        ("x*", "abc"),  # an empty match at every character, and at the end
        ("é+", "aéébé"),
        (r"(b)|c", "abcb"),  # a group that takes no part in some matches
        (r"\d+", "12é34\u200b5\U0001f600678"),  # two-, three- and four-byte characters between
        ("", "é"),
        (r"(x)?y", "yxy"),
    ],
)
def test_spans_are_the_wrappers_spans_for_every_group(pattern: str, text: str) -> None:
    regex = linear(pattern)
    for group in range(regex.groups + 1):
        expected = [m.span(group) for m in regex.finditer(text) if m.span(group)[0] >= 0]
        assert list(Utf8Text(text).spans(regex, group)) == expected


def test_resuming_after_a_group_reads_what_follows_it_again() -> None:
    # The trailing group stands for a lookahead: the space after one address precedes the next.
    regex = linear(r"(?:^|\s)(\w+@\w+)(?:\s|$)")
    text = "é ann@x bob@y"
    assert [text[s:e] for s, e in Utf8Text(text).spans(regex, 1, resume=1)] == ["ann@x", "bob@y"]
    assert [text[s:e] for s, e in Utf8Text(text).spans(regex, 1)] == ["ann@x"]


@pytest.mark.parametrize(
    ("framed", "reference"),
    [
        (Framed.of(r"[^\d]", r"\d+", r"(?:[^\d]|$)"), r"(?<!\d)\d+(?!\d)"),
        (Framed.of(r"[^\d.]", r"\d+", r"(?:$|[^.\d]|\.(?:$|[^\d]))", dotted=True), r"(?<![\d.])\d+(?!\.?\d)"),
    ],
)
@pytest.mark.parametrize(
    "text",
    ["12", "12 34", "é12é", "x12.", "12.x", "1.2", "12..", "\U0001f60012\u200b34\U0001f600", ".12.é", "é"],
)
def test_a_framed_core_is_read_without_its_frame_whatever_stands_around_it(
    framed: Framed, reference: str, text: str
) -> None:
    expected = [m.span() for m in re.finditer(reference, text)]
    assert list(Utf8Text(text).framed_spans(framed)) == expected
    assert list(Utf8Text(text).spans(framed.grouped, 1, resume=1)) == expected
