from __future__ import annotations

from mcp_aggregator.search.hit_order import after_best, with_alternatives
from mcp_aggregator.search.tool_doc import SearchHit

MAX_ALTERNATIVES = 5


def hit(key: str, score: float = 0.0) -> SearchHit:
    server, name = key.split(".")
    return SearchHit(key, server, name, "", score)


def keys(hits: list[SearchHit]) -> list[str]:
    return [h.key for h in hits]


RANKED = [hit(f"s{i}.t{i}", 1.0 - i / 10) for i in range(8)]


def test_joining_tools_follow_the_best_hit_once_with_its_score() -> None:
    out = after_best(RANKED, [hit("x.a"), hit("s3.t3"), hit("x.a"), hit("s0.t0")])
    assert keys(out) == ["s0.t0", "x.a", "s3.t3", "s1.t1", "s2.t2", "s4.t4", "s5.t5", "s6.t6", "s7.t7"]
    assert [h.score for h in out[:3]] == [1.0, 1.0, 1.0]


def test_nothing_joins_an_empty_or_unchanged_list() -> None:
    assert after_best([], [hit("x.a")]) == []
    assert after_best(RANKED, [hit("s0.t0")]) == RANKED


def test_alternatives_follow_the_head_and_skip_what_it_shows() -> None:
    copies = {"t1": [hit("s1.t1"), hit("y.t1"), hit("z.t1")], "t3": [hit("s2.t2"), hit("w.t3")]}
    out = with_alternatives(RANKED, lambda h: copies.get(h.name, []), MAX_ALTERNATIVES)
    assert keys(out) == [
        *keys(RANKED[:5]),
        "y.t1",
        "z.t1",
        "w.t3",
        *keys(RANKED[5:]),
    ]
    assert [h.score for h in out] == sorted((h.score for h in out), reverse=True)


def test_alternatives_are_capped_and_a_ranked_copy_moves_up() -> None:
    many = [hit(f"c{i}.t0") for i in range(MAX_ALTERNATIVES + 3)]
    out = with_alternatives(RANKED, lambda h: [hit("s6.t6"), *many] if h.name == "t0" else [], MAX_ALTERNATIVES)
    assert keys(out[5 : 5 + MAX_ALTERNATIVES]) == ["s6.t6", *keys(many[: MAX_ALTERNATIVES - 1])]
    assert keys(out[5 + MAX_ALTERNATIVES :]) == ["s5.t5", "s7.t7"]
    assert with_alternatives(RANKED[:3], lambda h: [], MAX_ALTERNATIVES) == RANKED[:3]
    assert with_alternatives(RANKED, lambda h: many, 0) == RANKED
